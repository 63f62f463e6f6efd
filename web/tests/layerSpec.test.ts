import { describe, expect, it } from 'vitest';
import type { LayerParamDefinition } from '../src/api/layers';
import {
  chainOf,
  formatShape,
  guessInputShape,
  insertLayer,
  moveLayer,
  newLayerId,
  parseShapeText,
  parseSpec,
  removeLayer,
  setLayerParam,
  specOfChain,
  specValue,
  layerParamFromText,
  type Chain,
  type LayerSpec,
} from '../src/graph/layerSpec';
import { exampleGraphs } from './helpers';

/** The fashion-mnist example's layers value: JSON text, as CodefyUI stores it. */
function fashionLayers(): string {
  const [, g] = exampleGraphs().find(([p]) => p === 'examples/fashion-mnist/graph.json')!;
  const node = (g as { nodes: { type: string; data: { params: { layers: string } } }[] }).nodes.find((n) => n.type === 'SequentialModel')!;
  return node.data.params.layers;
}

function spec(value: unknown): LayerSpec {
  const p = parseSpec(value);
  if (!p.ok) throw new Error(p.error);
  return p.spec;
}

/** The chain an edited spec reads back as (the edges are re-derived from scratch). */
const ids = (c: Chain | null) => c?.layers.map((l) => l.id) ?? null;

/** Every edge joins neighbours of the node list, in order, with the port handles at the ends. */
function expectWellWired(s: LayerSpec) {
  expect(s.edges).toHaveLength(s.nodes.length - 1);
  s.edges.forEach((e, i) => {
    expect(e.source).toBe(s.nodes[i]!.id);
    expect(e.target).toBe(s.nodes[i + 1]!.id);
    expect(e.sourceHandle ?? null).toBe(i === 0 ? 'p_x' : null);
    expect(e.targetHandle ?? null).toBe(i === s.edges.length - 1 ? 'p_y' : null);
  });
  expect(new Set(s.edges.map((e) => e.id)).size).toBe(s.edges.length);
}

const relu = (id: string) => ({ id, type: 'ReLU' });

describe('a linear chain ⇄ its spec', () => {
  it('reads the example CNN as its layers in order and writes back the same nodes and edges', () => {
    const s = spec(fashionLayers());
    const c = chainOf(s)!;
    expect(ids(c)).toEqual(['c1', 'b1', 'r1', 'p1', 'c2', 'b2', 'r2', 'p2', 'f', 'l1', 'r3', 'l2']);
    const back = specOfChain(c);
    expect(back.nodes).toEqual(s.nodes);
    expect(back.edges.map((e) => [e.source, e.target])).toEqual(s.edges.map((e) => [e.source, e.target]));
    expectWellWired(back);
  });

  it('reads a chain whose nodes and edges are listed out of order', () => {
    const s = spec(fashionLayers());
    const shuffled = { ...s, nodes: [...s.nodes].reverse(), edges: [...s.edges].reverse() };
    expect(ids(chainOf(shuffled))).toEqual(ids(chainOf(s)));
  });

  it('keeps a spec that was text as text, and an object as an object', () => {
    const s = spec(fashionLayers());
    expect(typeof specValue(s, fashionLayers())).toBe('string');
    expect(JSON.parse(specValue(s, 'x') as string)).toEqual(s);
    expect(specValue(s, s)).toBe(s);
  });
});

describe('edits keep the edges right', () => {
  const base = () => chainOf(spec(fashionLayers()))!;

  it('inserts after a given layer, first, and last', () => {
    const c = insertLayer(base(), 0, relu('x'));
    expect(ids(c)!.slice(0, 3)).toEqual(['c1', 'x', 'b1']);
    expect(ids(insertLayer(base(), -1, relu('x')))![0]).toBe('x');
    expect(ids(insertLayer(base(), 11, relu('x')))!.at(-1)).toBe('x');
    const s = specOfChain(c);
    expectWellWired(s);
    expect(ids(chainOf(s))).toEqual(ids(c));
  });

  it('removes a layer and joins its neighbours', () => {
    const c = removeLayer(base(), 1);
    expect(ids(c)!.slice(0, 2)).toEqual(['c1', 'r1']);
    const s = specOfChain(c);
    expectWellWired(s);
    expect(s.edges.some((e) => e.source === 'b1' || e.target === 'b1')).toBe(false);
    // Down to no layers: Input straight to Output, both handles on one edge.
    let empty = base();
    while (empty.layers.length) empty = removeLayer(empty, 0);
    const bare = specOfChain(empty);
    expect(bare.edges).toEqual([{ id: 'e1', source: 'in', target: 'out', sourceHandle: 'p_x', targetHandle: 'p_y' }]);
    expect(chainOf(bare)!.layers).toEqual([]);
  });

  it('moves up and down, and not past either end', () => {
    const c = moveLayer(base(), 0, 1);
    expect(ids(c)!.slice(0, 2)).toEqual(['b1', 'c1']);
    expectWellWired(specOfChain(c));
    expect(ids(moveLayer(base(), 2, -1))!.slice(1, 3)).toEqual(['r1', 'b1']);
    expect(moveLayer(base(), 0, -1)).toEqual(base());
    expect(moveLayer(base(), 11, 1)).toEqual(base());
  });

  it('sets and clears a param of one layer only', () => {
    const c = setLayerParam(base(), 0, 'out_channels', 24);
    expect(c.layers[0]!.params).toEqual({ in_channels: 1, out_channels: 24, kernel_size: 3, padding: 1 });
    expect(c.layers[4]!.params!.out_channels).toBe(32);
    expect(setLayerParam(c, 0, 'padding', undefined).layers[0]!.params).not.toHaveProperty('padding');
    expect(setLayerParam(base(), 2, 'inplace', true).layers[2]!.params).toEqual({ inplace: true }); // ReLU had none
  });

  it('names new layers uniquely, without dots', () => {
    const c = insertLayer(base(), 0, { id: 'relu_1', type: 'ReLU' });
    expect(newLayerId(c, 'ReLU')).toBe('relu_2');
    expect(newLayerId(c, 'Conv2d')).toBe('conv2d_1');
    expect(newLayerId(c, 'a.b')).not.toContain('.');
  });
});

describe('specs that are not a chain', () => {
  const node = (id: string, type: string) =>
    type === 'Input'
      ? { id, type, ports: [{ id: 'p_x', name: 'x' }] }
      : type === 'Output'
        ? { id, type, ports: [{ id: 'p_y', name: 'y' }] }
        : { id, type };
  const edge = (source: string, target: string) => ({ source, target });

  it('a residual branch and merge is not a chain', () => {
    const s = spec({
      version: 2,
      nodes: [node('in', 'Input'), node('a', 'Linear'), node('sum', 'Add'), node('out', 'Output')],
      edges: [edge('in', 'a'), edge('a', 'sum'), edge('in', 'sum'), edge('sum', 'out')],
    });
    expect(chainOf(s)).toBeNull();
  });

  it('a loose node, a missing edge, two Inputs or a cycle is not a chain', () => {
    const line = [node('in', 'Input'), node('a', 'ReLU'), node('out', 'Output')];
    expect(chainOf(spec({ version: 2, nodes: [...line, node('b', 'ReLU')], edges: [edge('in', 'a'), edge('a', 'out')] }))).toBeNull();
    expect(chainOf(spec({ version: 2, nodes: line, edges: [edge('in', 'a')] }))).toBeNull();
    expect(chainOf(spec({ version: 2, nodes: [...line, node('in2', 'Input')], edges: [edge('in', 'a'), edge('a', 'out'), edge('in2', 'a')] }))).toBeNull();
    const cycle = [node('in', 'Input'), node('a', 'ReLU'), node('b', 'ReLU'), node('out', 'Output')];
    expect(chainOf(spec({ version: 2, nodes: cycle, edges: [edge('a', 'b'), edge('b', 'a'), edge('in', 'out')] }))).toBeNull();
    expect(chainOf(spec({ version: 2, nodes: line, edges: [edge('in', 'a'), edge('a', 'out')] }))).not.toBeNull();
  });

  it('text that is not a spec says why', () => {
    expect(parseSpec('{oops').ok).toBe(false);
    expect(parseSpec('[1,2]').ok).toBe(false);
    expect(parseSpec({ version: 2 }).ok).toBe(false);
    expect(parseSpec({ version: 2, nodes: [{ id: 'x' }] }).ok).toBe(false);
  });
});

describe('sample shapes', () => {
  it('parses and prints sizes', () => {
    expect(parseShapeText('1, 28, 28')).toEqual([1, 28, 28]);
    expect(parseShapeText('3x32x32')).toEqual([3, 32, 32]);
    expect(parseShapeText('1,0,28')).toBeNull();
    expect(parseShapeText('a')).toBeNull();
    expect(parseShapeText('')).toBeNull();
    expect(parseShapeText('1,1,1,1,1,1,1')).toBeNull();
    expect(formatShape([1, 16, 28, 28])).toBe('1×16×28×28');
  });

  it('guesses from the graph’s dataset, else from the first layer', () => {
    const s = spec(fashionLayers());
    expect(guessInputShape([{ type: 'Dataset', params: { name: 'FashionMNIST' } }], s)).toEqual([1, 28, 28]);
    expect(guessInputShape([{ type: 'ToyDataset', params: { n_features: 5 } }], s)).toEqual([5]);
    const mlp = specOfChain({ ...chainOf(s)!, layers: [{ id: 'l', type: 'Linear', params: { in_features: 3, out_features: 2 } }] });
    expect(guessInputShape([{ type: 'CSVDataset', params: {} }], mlp)).toEqual([3]);
    const rgb = specOfChain({ ...chainOf(s)!, layers: [{ id: 'c', type: 'Conv2d', params: { in_channels: 3 } }] });
    expect(guessInputShape([], rgb)).toEqual([3, 28, 28]);
    expect(guessInputShape([], null)).toEqual([1, 28, 28]);
  });
});

describe('a layer param typed as text', () => {
  const p = (over: Partial<LayerParamDefinition>): LayerParamDefinition => ({
    name: 'x', param_type: 'int', default: 1, description: '', options: [], min_value: null, max_value: null, required: false, ...over,
  });
  it('reads JSON when it is JSON, else keeps the text; empty clears an optional param only', () => {
    expect(layerParamFromText(p({}), '64')).toEqual({ ok: true, value: 64 });
    expect(layerParamFromText(p({}), '[3, 5]')).toEqual({ ok: true, value: [3, 5] });
    expect(layerParamFromText(p({}), 'same')).toEqual({ ok: true, value: 'same' });
    expect(layerParamFromText(p({}), 'null')).toEqual({ ok: true, value: null });
    expect(layerParamFromText(p({}), ' ')).toEqual({ ok: true, value: undefined });
    expect(layerParamFromText(p({ required: true }), '')).toEqual({ ok: false });
    expect(layerParamFromText(p({ param_type: 'string' }), '64,7,7')).toEqual({ ok: true, value: '64,7,7' });
    expect(layerParamFromText(p({ param_type: 'string' }), '12')).toEqual({ ok: true, value: '12' });
  });
});
