// @vitest-environment jsdom
import './dom';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { useState } from 'react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LayerParamDefinition, LayerTypeDefinition, ShapeTraceResponse } from '../src/api/layers';
import { chainOf, parseSpec } from '../src/graph/layerSpec';
import { LayerEditor } from '../src/nodes/LayerEditor';
import { resetEditorForTests } from '../src/store/editor';
import { useLayerStore } from '../src/store/layerStore';

const int = (name: string, required = true, dflt: unknown = 1): LayerParamDefinition => ({
  name, param_type: 'int', default: dflt, description: '', options: [], min_value: 1, max_value: null, required,
});
const types: LayerTypeDefinition[] = [
  { type: 'Linear', category: 'Linear', kind: 'layer', min_inputs: 1, max_inputs: 1, params: [int('in_features', true, 512), int('out_features', true, 10)] },
  { type: 'ReLU', category: 'Activation', kind: 'layer', min_inputs: 1, max_inputs: 1, params: [] },
  { type: 'Dropout', category: 'Regularization', kind: 'layer', min_inputs: 1, max_inputs: 1, params: [{ ...int('p', false, 0.5), param_type: 'float' }] },
];

const mlp = JSON.stringify({
  version: 2,
  nodes: [
    { id: 'in', type: 'Input', ports: [{ id: 'p_x', name: 'x' }] },
    { id: 'l1', type: 'Linear', params: { in_features: 4, out_features: 8 } },
    { id: 'a', type: 'ReLU' },
    { id: 'l2', type: 'Linear', params: { in_features: 8, out_features: 3 } },
    { id: 'out', type: 'Output', ports: [{ id: 'p_y', name: 'y' }] },
  ],
  edges: [
    { id: 'e1', source: 'in', target: 'l1', sourceHandle: 'p_x' },
    { id: 'e2', source: 'l1', target: 'a' },
    { id: 'e3', source: 'a', target: 'l2' },
    { id: 'e4', source: 'l2', target: 'out', targetHandle: 'p_y' },
  ],
});

/** A stand-in for the server's trace: Linear layers check their in_features, as LibTorch would. */
function fakeTrace(layers: unknown, input: readonly number[]): ShapeTraceResponse {
  const p = parseSpec(layers);
  if (!p.ok) throw new Error(p.error);
  const chain = chainOf(p.spec)!;
  let shape = [1, ...input];
  const nodes: ShapeTraceResponse['nodes'] = [];
  for (const l of chain.layers) {
    if (l.type === 'Linear') {
      const inF = l.params!.in_features as number;
      if (shape.at(-1) !== inF)
        return { nodes, output_shape: null, total_params: 0, error: { node_id: l.id, node_type: 'Linear', param: null, message: `layer "${l.id}" (Linear): failed on input of shape [${shape.join(', ')}]` } };
      shape = [...shape.slice(0, -1), l.params!.out_features as number];
    }
    nodes.push({ id: l.id, type: l.type, output_shape: shape, params: 0 });
  }
  return { nodes, output_shape: shape, total_params: 0, error: null };
}

let value: unknown;
let calls: { layers: unknown; input: readonly number[] }[];

/** The editor with its value held as a param would be; `value` follows every change. */
function Harness() {
  const [v, setV] = useState<unknown>(value);
  const onChange = (next: unknown) => {
    value = next;
    setV(next);
  };
  return <LayerEditor nodeId="mlp" value={v} onChange={onChange} onClose={() => {}} />;
}
const renderEditor = () => render(<Harness />);

beforeEach(() => {
  resetEditorForTests();
  value = mlp;
  calls = [];
  useLayerStore.setState({
    types,
    typesStatus: 'ready',
    loadTypes: async () => {},
    traceShapes: async (layers, input) => {
      calls.push({ layers, input });
      return fakeTrace(layers, input);
    },
  });
});
afterEach(() => cleanup());

const row = (i: number) => screen.getByTestId(`layer-row-${i}`);

describe('the layer editor', () => {
  it('lists the layers with the traced shapes, guessing the sample from the first Linear', async () => {
    renderEditor();
    expect((screen.getByTestId('layer-input-shape') as HTMLInputElement).value).toBe('4');
    await waitFor(() => expect(row(2).dataset.shape).toBe('1,3'));
    expect(row(0).dataset.shape).toBe('1,8');
    expect(row(0).dataset.type).toBe('Linear');
    expect(screen.getByTestId('layer-total').textContent).toContain('1×3');
    expect(calls.at(-1)!.input).toEqual([4]);
  });

  it('an edit goes back as spec text, the shapes follow, and the failing layer is marked', async () => {
    renderEditor();
    await waitFor(() => expect(row(2).dataset.shape).toBe('1,3'));
    fireEvent.change(screen.getByTestId('layer-param-0-out_features'), { target: { value: '16' } });
    expect(typeof value).toBe('string');
    expect(JSON.parse(value as string).nodes[1].params.out_features).toBe(16);
    await waitFor(() => expect(row(2).dataset.error).toBe('true'));
    expect(row(0).dataset.shape).toBe('1,16');
    expect(row(2).dataset.shape).toBe('');
    expect(row(2).textContent).toContain('failed on input of shape [1, 16]');
  });

  it('adds the picked type after the selected layer and removes layers, keeping the chain wired', async () => {
    renderEditor();
    fireEvent.click(row(0));
    fireEvent.change(screen.getByTestId('layer-add-type'), { target: { value: 'Dropout' } });
    fireEvent.click(screen.getByTestId('layer-add'));
    let spec = parseSpec(value);
    expect(spec.ok && chainOf(spec.spec)!.layers.map((l) => l.type)).toEqual(['Linear', 'Dropout', 'ReLU', 'Linear']);
    await waitFor(() => expect(row(1).dataset.shape).toBe('1,8'));
    fireEvent.click(screen.getByTestId('layer-remove-2'));
    spec = parseSpec(value);
    expect(spec.ok && chainOf(spec.spec)!.layers.map((l) => l.id)).toEqual(['l1', 'dropout_1', 'l2']);
  });

  it('a spec that branches is listed read-only and points to the raw JSON', async () => {
    const s = JSON.parse(mlp);
    s.nodes.splice(3, 0, { id: 'sum', type: 'Add' });
    s.edges = [
      { source: 'in', target: 'l1', sourceHandle: 'p_x' }, { source: 'l1', target: 'a' }, { source: 'l1', target: 'sum' },
      { source: 'a', target: 'sum' }, { source: 'sum', target: 'l2' }, { source: 'l2', target: 'out', targetHandle: 'p_y' },
    ];
    value = s;
    useLayerStore.setState({ traceShapes: async () => ({ nodes: [], output_shape: [1, 3], total_params: 0, error: null }) });
    renderEditor();
    expect(screen.getByText(/branches or merges/)).toBeTruthy();
    expect(screen.queryByTestId('layer-add')).toBeNull();
    expect(screen.queryByTestId('layer-remove-0')).toBeNull();
    expect((screen.getByTestId('layer-param-0-in_features') as HTMLInputElement).disabled).toBe(true);
    fireEvent.click(screen.getByTestId('layer-raw-toggle'));
    expect((screen.getByTestId('layer-raw') as HTMLTextAreaElement).value).toContain('"sum"');
  });
});
