import { describe, expect, it } from 'vitest';
import type { GraphJson } from '../src/api/types';
import { DATA_EDGE, emptyGraph, flowToGraph, GraphFileError, graphToFlow, TRIGGER_EDGE, type CodefyEdge } from '../src/graph/graphJson';
import { TRIGGER_HANDLE } from '../src/graph/ports';
import { inWords } from '../src/i18n';
import { exampleGraphs } from './helpers';

const roundTrip = (json: unknown) => {
  const f = graphToFlow(json);
  return flowToGraph(f.meta, f.nodes, f.edges);
};

/** Why graphToFlow refuses `json`, in words (English); null when it opens. */
function refusal(json: unknown): string | null {
  try {
    graphToFlow(json);
    return null;
  } catch (e) {
    if (!(e instanceof GraphFileError)) throw e;
    return inWords(e.problem);
  }
}

describe('the repository’s examples', () => {
  const examples = exampleGraphs();

  it('are all found', () => {
    expect(examples.map(([p]) => p)).toEqual(
      expect.arrayContaining([
        'examples/fashion-mnist/graph.json',
        'examples/codefyui-pipeline/graph.json',
        'examples/toy-mlp/graph.json',
        'examples/csv-mlp/graph.json',
        'examples/resume/part1.json',
      ]),
    );
  });

  it.each(examples)('%s opens and saves back unchanged', (_path, json) => {
    expect(roundTrip(json)).toEqual(json);
    // and the written JSON text is the same JSON
    expect(JSON.parse(JSON.stringify(roundTrip(json)))).toEqual(json);
  });

  it.each(examples)('%s keeps every position', (_path, json) => {
    const f = graphToFlow(json);
    const g = json as GraphJson;
    expect(f.unplaced).toEqual([]);
    for (const n of g.nodes) expect(f.nodes.find((x) => x.id === n.id)?.position).toEqual(n.position);
  });

  it('CodefyUI’s pipeline example keeps its preset node, internalParams and type-less data edges', () => {
    const [, json] = examples.find(([p]) => p === 'examples/codefyui-pipeline/graph.json')!;
    const f = graphToFlow(json);
    const preset = f.nodes.find((n) => n.data.nodeType === 'preset:Training Pipeline')!;
    expect(preset.data.raw?.data?.internalParams).toBeDefined();
    const e1 = f.edges.find((e) => e.id === 'e1')!;
    expect(e1.data?.kind).toBe('data');
    expect(e1.type).toBe(DATA_EDGE);
    expect(flowToGraph(f.meta, f.nodes, f.edges).edges.find((e) => e.id === 'e1')).not.toHaveProperty('type');
  });
});

describe('graphToFlow', () => {
  it('marks trigger edges by type or by handle and lands them on the node’s trigger handle', () => {
    const f = graphToFlow({
      nodes: [
        { id: 's', type: 'Start', position: { x: 0, y: 0 } },
        { id: 'a', type: 'Print', position: { x: 1, y: 1 } },
        { id: 'b', type: 'Print', position: { x: 2, y: 2 } },
      ],
      edges: [
        { id: 't1', source: 's', target: 'a', type: 'trigger' },
        { id: 't2', source: 's', target: 'b', sourceHandle: 'trigger' },
      ],
    });
    expect(f.edges.map((e) => [e.id, e.data?.kind, e.type, e.sourceHandle, e.targetHandle])).toEqual([
      ['t1', 'trigger', TRIGGER_EDGE, 'trigger', TRIGGER_HANDLE],
      ['t2', 'trigger', TRIGGER_EDGE, 'trigger', TRIGGER_HANDLE],
    ]);
    // written back as the file had them: no invented handles, no invented type
    expect(flowToGraph(f.meta, f.nodes, f.edges).edges).toEqual([
      { id: 't1', source: 's', target: 'a', type: 'trigger' },
      { id: 't2', source: 's', target: 'b', sourceHandle: 'trigger' },
    ]);
  });

  it('lists nodes without a usable position, and places them at the origin until laid out', () => {
    const f = graphToFlow({
      nodes: [
        { id: 'a', type: 'Start' },
        { id: 'b', type: 'Print', position: { x: 'left', y: 3 } },
        { id: 'c', type: 'Print', position: { x: 5, y: 6 } },
      ],
      edges: [],
    });
    expect(f.unplaced).toEqual(['a', 'b']);
    expect(f.nodes.map((n) => n.position)).toEqual([
      { x: 0, y: 0 },
      { x: 0, y: 0 },
      { x: 5, y: 6 },
    ]);
  });

  it('keeps fields it does not know, at every level', () => {
    const json = {
      name: 'g',
      version: 3,
      settings: { device: 'cuda', seed: 7 },
      nodes: [
        {
          id: 'n',
          type: 'Print',
          position: { x: 1, y: 2, extra: true },
          width: 200,
          data: { params: { label: 'x' }, internalParams: { a: 1 }, label: 'My print', collapsed: true },
        },
      ],
      edges: [{ id: 'e', source: 'n', target: 'n', sourceHandle: 'value', targetHandle: 'value', type: 'data', animated: true, style: { stroke: 'red' } }],
    };
    expect(roundTrip(json)).toEqual(json);
  });

  it('reads numeric ids and writes them back as numbers', () => {
    const json = { nodes: [{ id: 7, type: 'Start', position: { x: 0, y: 0 }, data: { params: {} } }], edges: [] };
    const f = graphToFlow(json);
    expect(f.nodes[0]!.id).toBe('7');
    expect(roundTrip(json)).toEqual(json);
  });

  it('gives id-less edges an id for the canvas but writes none', () => {
    const json = { nodes: [], edges: [{ source: 'a', target: 'b', sourceHandle: 'x', targetHandle: 'y' }] };
    const f = graphToFlow(json);
    expect(f.edges[0]!.id).toMatch(/^e_a_x_b_y/);
    expect(roundTrip(json)).toEqual(json);
  });

  it.each([
    [[], /JSON object/],
    [{ nodes: {} }, /"nodes" must be a list/],
    [{ nodes: [], edges: 'x' }, /"edges" must be a list/],
    [{ nodes: [{ type: 'Start' }] }, /nodes\[0\] needs an "id"/],
    [{ nodes: [{ id: 'a', type: 'Start' }, { id: 'a', type: 'Print' }] }, /two nodes have the id "a"/],
    [{ nodes: [], edges: [{ source: 'a' }] }, /edges\[0\] needs a "source" and a "target"/],
  ])('refuses %j saying why', (json, why) => {
    expect(() => graphToFlow(json)).toThrow(GraphFileError);
    expect(refusal(json)).toMatch(why);
  });

  it('opens an empty node list as an empty graph, and refuses JSON with no node list at all', () => {
    expect(graphToFlow({ name: 'empty', nodes: [] }).nodes).toEqual([]);
    expect(graphToFlow({ name: 'empty', nodes: [], edges: [] }).edges).toEqual([]);
    expect(() => graphToFlow({ name: 'empty' })).toThrow(GraphFileError);
    expect(refusal({ title: 'shopping', items: ['milk'] })).toMatch(/not a graph/);
  });
});

describe('flowToGraph', () => {
  it('writes edited params, moved nodes, new nodes and new edges in graph.json’s shape', () => {
    const f = graphToFlow({
      name: 'g',
      nodes: [
        { id: 's', type: 'Start', position: { x: 0, y: 0 }, data: { params: {} } },
        { id: 'p', type: 'Print', position: { x: 10, y: 10 }, data: { params: { label: 'a' } } },
      ],
      edges: [],
    });
    const nodes = f.nodes.map((n) => (n.id === 'p' ? { ...n, position: { x: 50, y: 60 }, data: { ...n.data, params: { label: 'b' } } } : n));
    nodes.push({ id: 'v', type: 'codefy', position: { x: 1, y: 2 }, data: { nodeType: 'Visualize', params: { title: 't' }, raw: null } });
    const edges: CodefyEdge[] = [
      { id: 'n1', source: 's', target: 'p', sourceHandle: 'trigger', targetHandle: TRIGGER_HANDLE, type: TRIGGER_EDGE, data: { kind: 'trigger', raw: null } },
      { id: 'n2', source: 'p', target: 'v', sourceHandle: 'value', targetHandle: 'data', type: DATA_EDGE, data: { kind: 'data', raw: null } },
    ];
    expect(flowToGraph(f.meta, nodes, edges)).toEqual({
      name: 'g',
      nodes: [
        { id: 's', type: 'Start', position: { x: 0, y: 0 }, data: { params: {} } },
        { id: 'p', type: 'Print', position: { x: 50, y: 60 }, data: { params: { label: 'b' } } },
        { id: 'v', type: 'Visualize', position: { x: 1, y: 2 }, data: { params: { title: 't' } } },
      ],
      edges: [
        { id: 'n1', source: 's', target: 'p', sourceHandle: 'trigger', type: 'trigger' },
        { id: 'n2', source: 'p', target: 'v', sourceHandle: 'value', targetHandle: 'data', type: 'data' },
      ],
    });
  });

  it('a new graph is a Start node', () => {
    const g = emptyGraph('Untitled graph');
    expect(g.name).toBe('Untitled graph');
    expect(g.nodes.map((n) => n.type)).toEqual(['Start']);
    expect(roundTrip(g)).toEqual(g);
  });
});
