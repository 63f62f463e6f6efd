// @vitest-environment jsdom
import './dom';
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { ReactFlowProvider } from '@xyflow/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Canvas } from '../src/canvas/Canvas';
import { graphToFlow } from '../src/graph/graphJson';
import { Messages } from '../src/panels/Messages';
import { useCatalogue } from '../src/store/catalogue';
import { useDocument } from '../src/store/document';
import { resetEditorForTests } from '../src/store/editor';
import { useMessages } from '../src/store/messages';
import { useRunSession } from '../src/store/runSession';
import { defsByName, exampleGraphs, nodeDefs } from './helpers';

function openFashion() {
  const [, json] = exampleGraphs().find(([p]) => p === 'examples/fashion-mnist/graph.json')!;
  const f = graphToFlow(json);
  useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
  useDocument.setState({ meta: f.meta, nodes: f.nodes, edges: f.edges });
}

const renderCanvas = () =>
  render(
    <ReactFlowProvider>
      <div style={{ width: 1200, height: 800 }}>
        <Canvas />
      </div>
    </ReactFlowProvider>,
  );

beforeEach(() => {
  resetEditorForTests();
  openFashion();
});
afterEach(() => cleanup());

describe('the generic node', () => {
  it('draws any node from its definition: title, typed handles, optional inputs, trigger', () => {
    renderCanvas();
    const train = screen.getByTestId('node-train');
    expect(train.dataset.status).toBe('idle');
    expect(within(train).getByText('TrainingLoop')).toBeTruthy();
    const handle = (id: string, kind: 'source' | 'target') =>
      train.querySelector(`.react-flow__handle.${kind}[data-handleid="${id}"]`) as HTMLElement | null;
    for (const p of defsByName.TrainingLoop!.inputs) expect(handle(p.name, 'target'), p.name).not.toBeNull();
    for (const p of defsByName.TrainingLoop!.outputs) expect(handle(p.name, 'source'), p.name).not.toBeNull();
    expect(handle('val_dataloader', 'target')!.className).toMatch(/optional/);
    expect(handle('model', 'target')!.className).not.toMatch(/optional/);
    expect(handle('model', 'target')!.dataset.type).toBe('MODEL');
    expect(handle('__trigger', 'target')).not.toBeNull();
    const start = screen.getByTestId('node-start');
    expect(start.querySelector('.react-flow__handle.source[data-handleid="trigger"]')).not.toBeNull();
    expect(start.querySelector('.react-flow__handle.target')).toBeNull();
  });

  it('folds advanced params under a toggle, closed at first', () => {
    renderCanvas();
    expect(screen.getByTestId('param-train-epochs')).toBeTruthy();
    expect(screen.queryByTestId('param-train-precision')).toBeNull();
    fireEvent.click(screen.getByTestId('advanced-train'));
    expect((screen.getByTestId('param-train-precision') as HTMLSelectElement).value).toBe('fp32');
    expect((screen.getByTestId('param-train-log_grad_norm') as HTMLInputElement).checked).toBe(true);
  });

  it('edits a param in place: a bad value is refused with its reason, a good one reaches the graph', () => {
    renderCanvas();
    const epochs = screen.getByTestId('param-train-epochs') as HTMLInputElement;
    expect(epochs.value).toBe('3');
    fireEvent.change(epochs, { target: { value: '0' } });
    expect(screen.getByTestId('node-train').textContent).toContain('0 is below the minimum 1.');
    expect(useDocument.getState().nodes.find((n) => n.id === 'train')!.data.params.epochs).toBe(3);
    fireEvent.change(epochs, { target: { value: '7' } });
    expect(useDocument.getState().nodes.find((n) => n.id === 'train')!.data.params.epochs).toBe(7);
    expect(useDocument.getState().changed).toEqual({ train: true });
    fireEvent.change(screen.getByTestId('param-loss-type'), { target: { value: 'NLLLoss' } });
    expect(useDocument.getState().nodes.find((n) => n.id === 'loss')!.data.params.type).toBe('NLLLoss');
  });

  it('shows the run: status, training progress, and an error on the node', () => {
    renderCanvas();
    act(() => {
      const s = useRunSession.getState();
      s.receive({ type: 'execution_start', run_id: 'r' });
      s.receive({ type: 'node_status', node_id: 'train', status: 'running' });
      s.receive({ type: 'node_progress', node_id: 'train', progress: { event: 'batch', epoch: 2, total_epochs: 3, batch: 10, total_batches: 20, step: 30, loss: 0.5, samples_per_s: 999 } });
    });
    const train = screen.getByTestId('node-train');
    expect(train.dataset.status).toBe('running');
    const bar = within(train).getByTestId('training-progress');
    expect(bar.textContent).toContain('epoch 2/3');
    expect(bar.textContent).toContain('step 30');
    expect(bar.textContent).toContain('999 samples/s');
    expect(bar.dataset.fraction).toBe('0.500');
    act(() => {
      useRunSession.getState().receive({ type: 'node_status', node_id: 'train', status: 'error', error: 'Node TrainingLoop (train) ran out of memory on cpu.\n\nWhat to try:\n  - smaller batches' });
    });
    expect(train.dataset.status).toBe('error');
    // (jsdom measures nothing, so React Flow keeps nodes hidden: queried by selector, not by role)
    expect(train.querySelector('.cnode-issue')!.textContent).toBe('Node TrainingLoop (train) ran out of memory on cpu.');
  });
});

describe('the messages panel', () => {
  it('shows a several-line error whole, its advice as a list, with its node', () => {
    render(
      <ReactFlowProvider>
        <Messages />
      </ReactFlowProvider>,
    );
    act(() =>
      useMessages
        .getState()
        .say('error', 'Node TrainingLoop (train) ran out of memory on cpu.\n\nWhat to try, cheapest first:\n  - reduce batch_size\n  - use bf16\n\nOriginal error: boom', { nodeId: 'train' }),
    );
    const panel = screen.getByTestId('messages');
    const msg = within(panel).getByTestId('message');
    expect(msg.dataset.level).toBe('error');
    expect(msg.dataset.node).toBe('train');
    expect(within(msg).getAllByRole('listitem').map((li) => li.textContent)).toEqual(['reduce batch_size', 'use bf16']);
    expect(msg.textContent).toContain('Original error: boom');
    fireEvent.click(within(msg).getByRole('button', { name: 'train' }));
    expect(useDocument.getState().selectedId).toBe('train');
  });
});
