import { describe, expect, it } from 'vitest';
import type { ServerMessage } from '../src/api/types';
import { toArray } from '../src/store/column';
import { idleRun, markIssues, reduceProgress, reduceRun, startRun, type RunState } from '../src/store/runReducer';
import { reduceSeries } from '../src/store/trainSeries';

const apply = (messages: ServerMessage[], from: RunState = startRun('r1')) => {
  let state = from;
  const said: { level: string; text: string; nodeId?: string; param?: string }[] = [];
  for (const m of messages) {
    const r = reduceRun(state, m);
    state = r.state;
    said.push(...r.messages);
  }
  return { state, said };
};

const OOM = `Node TrainingLoop (train) ran out of memory on cpu.

What to try, cheapest first:
  - reduce batch_size on the DataLoader node loader (now 3000)
  - set TrainingLoop's precision to bf16 (roughly halves activation memory)

CPU memory: 306.7 MiB held by live tensors when it failed, 306.7 MiB peak this node, budget 400.0 MiB.

Original error: CPU memory budget exceeded`;

describe('node statuses', () => {
  it('follow node_status messages; the run follows execution_*', () => {
    const { state, said } = apply([
      { type: 'execution_start', run_id: 'r1' },
      { type: 'node_status', node_id: 'a', status: 'running' },
      { type: 'node_status', node_id: 'a', status: 'completed' },
      { type: 'node_status', node_id: 'b', status: 'cached' },
      { type: 'node_status', node_id: 'c', status: 'running' },
      { type: 'execution_complete' },
    ]);
    expect(state.statuses).toEqual({ a: 'completed', b: 'cached', c: 'skipped' });
    expect(state.phase).toBe('idle');
    expect(state.outcome).toBe('completed');
    expect(said.map((m) => m.text)).toEqual(['Run started.', 'Run completed.']);
  });

  it('starting a run forgets the last one', () => {
    const s = startRun('r2');
    expect(s).toEqual({ ...idleRun(), phase: 'starting', runId: 'r2' });
  });

  it('a node Stop interrupted is skipped, not failed', () => {
    const { state, said } = apply([
      { type: 'node_status', node_id: 'train', status: 'running' },
      { type: 'node_status', node_id: 'train', status: 'error', error: 'stopped' },
      { type: 'node_status', node_id: 'eval', status: 'skipped' },
      { type: 'execution_stopped' },
    ]);
    expect(state.statuses).toEqual({ train: 'skipped', eval: 'skipped' });
    expect(state.issues).toEqual({});
    expect(state.outcome).toBe('stopped');
    expect(said.map((m) => m.level)).toEqual(['info', 'info']);
  });

  it('a node Stop interrupted, as the server says it now (CodefyUI’s status interrupted), is skipped, not failed', () => {
    const { state, said } = apply([
      { type: 'node_status', node_id: 'train', status: 'running' },
      { type: 'node_status', node_id: 'train', status: 'interrupted', stopped: true },
      { type: 'execution_stopped' },
    ]);
    expect(state.statuses).toEqual({ train: 'skipped' });
    expect(state.issues).toEqual({});
    expect(state.outcome).toBe('stopped');
    expect(said).toEqual([
      { level: 'info', nodeId: 'train', text: 'train was stopped.' },
      { level: 'info', text: 'Run stopped.' },
    ]);
  });

  it('Print’s text on its completed message (CodefyUI’s log) is said once, with its node', () => {
    const { state, said } = apply([
      { type: 'node_status', node_id: 'p', status: 'running' },
      { type: 'node_status', node_id: 'p', status: 'completed', log: '[acc] 0.9', output_summary: { value: { type: 'scalar', value: 0.9 } } },
    ]);
    expect(state.statuses).toEqual({ p: 'completed' });
    expect(said).toEqual([{ level: 'info', nodeId: 'p', text: '[acc] 0.9' }]);
  });

  it('Print’s log lines and warnings go to the messages with their node', () => {
    const { said } = apply([
      { type: 'node_status', node_id: 'p', status: 'log', log: '[acc] 0.9' },
      { type: 'warning', node_id: 'train', message: 'fp16 on CPU falls back to fp32' },
      { type: 'warning', node_id: null, message: 'cuda:3 does not exist' },
    ]);
    expect(said).toEqual([
      { level: 'info', nodeId: 'p', text: '[acc] 0.9' },
      { level: 'warning', nodeId: 'train', text: 'fp16 on CPU falls back to fp32' },
      { level: 'warning', text: 'cuda:3 does not exist' },
    ]);
  });
});

describe('errors', () => {
  it('a node’s error marks the node, and the run’s repeat of it is not said twice', () => {
    const { state, said } = apply([
      { type: 'node_status', node_id: 'train', status: 'running' },
      { type: 'node_status', node_id: 'train', status: 'error', error: OOM },
      { type: 'node_status', node_id: 'eval', status: 'skipped' },
      { type: 'execution_error', error: OOM },
    ]);
    expect(state.statuses.train).toBe('error');
    expect(state.issues.train).toEqual([{ nodeId: 'train', nodeType: 'TrainingLoop', message: OOM, outOfMemory: true }]);
    expect(said).toEqual([
      { level: 'error', nodeId: 'train', text: OOM, outOfMemory: true },
      { level: 'error', text: 'Run failed (see the error above).' },
    ]);
    expect(state.outcome).toBe('error');
  });

  it('the run’s error names the param the node’s own error left out', () => {
    const { state } = apply([
      { type: 'node_status', node_id: 'data', status: 'error', error: 'file not found: x.csv' },
      { type: 'execution_error', error: 'graph "g": node data (CSVDataset), param "path": file not found: x.csv' },
    ]);
    expect(state.issues.data).toEqual([{ nodeId: 'data', nodeType: 'CSVDataset', param: 'path', message: 'file not found: x.csv' }]);
  });

  it('a refused graph (execution_error with every problem) marks each node and param', () => {
    const text =
      '2 problems in the graph:\n' +
      '  - graph "g": node train (TrainingLoop), param "epochs": value 0 is below the minimum 1\n' +
      '  - graph "g": node train (TrainingLoop), input "optimizer": required input is not connected';
    const { state, said } = apply([{ type: 'execution_error', error: text }]);
    expect(state.statuses.train).toBe('error');
    expect(state.issues.train).toEqual([
      { nodeId: 'train', nodeType: 'TrainingLoop', param: 'epochs', message: 'value 0 is below the minimum 1' },
      { nodeId: 'train', nodeType: 'TrainingLoop', port: 'optimizer', message: 'required input is not connected' },
    ]);
    expect(said).toEqual([{ level: 'error', text }]);
  });

  it('the server’s field marks the param (or port) without reading the text', () => {
    const { state, said } = apply([
      // The text names no param; the field does.
      { type: 'node_status', node_id: 'loader', status: 'error', error: 'must be at least 1, got 0', field: 'param "batch_size"' },
      { type: 'node_status', node_id: 'train', status: 'error', error: 'the optimizer was made for another model', field: 'input "optimizer"' },
    ]);
    expect(state.issues.loader).toEqual([{ nodeId: 'loader', param: 'batch_size', message: 'must be at least 1, got 0' }]);
    expect(state.issues.train).toEqual([{ nodeId: 'train', port: 'optimizer', message: 'the optimizer was made for another model' }]);
    expect(said[0]).toEqual({ level: 'error', nodeId: 'loader', param: 'batch_size', text: 'must be at least 1, got 0' });
  });

  it('with structured fields the text is not parsed: a text naming another param does not mark it', () => {
    const text = 'graph "g": node train (TrainingLoop), param "epochs": bad';
    const { state } = apply([{ type: 'node_status', node_id: 'train', status: 'error', error: text, field: 'param "lr"' }]);
    expect(state.issues.train).toEqual([{ nodeId: 'train', param: 'lr', message: text }]);
  });

  it('out_of_memory marks the whole report on the node and says it whole, advice and all', () => {
    const { state, said } = apply([
      { type: 'node_status', node_id: 'train', status: 'running' },
      { type: 'node_status', node_id: 'train', status: 'error', error: OOM, out_of_memory: true },
      { type: 'execution_error', error: OOM },
    ]);
    expect(state.issues.train).toHaveLength(1);
    expect(state.issues.train![0]).toMatchObject({ nodeId: 'train', message: OOM, outOfMemory: true });
    expect(said[0]).toEqual({ level: 'error', nodeId: 'train', text: OOM, outOfMemory: true });
    expect(said[1]).toEqual({ level: 'error', text: 'Run failed (see the error above).' });
    // A report that says it is not one is not marked as one, whatever its text.
    const plain = apply([{ type: 'node_status', node_id: 'train', status: 'error', error: OOM, out_of_memory: false }]);
    expect(plain.state.issues.train![0]!.outOfMemory).toBeUndefined();
  });

  it('stopped comes from the flag: a node whose error text is "stopped" but not flagged failed', () => {
    const stopped = apply([{ type: 'node_status', node_id: 'train', status: 'error', error: 'interrupted', stopped: true }]);
    expect(stopped.state.statuses.train).toBe('skipped');
    expect(stopped.state.issues).toEqual({});
    const failed = apply([{ type: 'node_status', node_id: 'p', status: 'error', error: 'stopped', field: 'param "label"' }]);
    expect(failed.state.statuses.p).toBe('error');
    expect(failed.state.issues.p).toEqual([{ nodeId: 'p', param: 'label', message: 'stopped' }]);
  });

  it('validation issues replace the marks of the last check', () => {
    let s = markIssues(idleRun(), [{ nodeId: 'a', message: 'x', param: 'p' }]);
    s = markIssues(s, [{ nodeId: 'b', message: 'y' }]);
    expect(s.issues).toEqual({ b: [{ nodeId: 'b', message: 'y' }] });
  });
});

describe('training progress', () => {
  // Batch frames come as node_progress (a type CodefyUI's client ignores); epoch and config frames as node_status "progress".
  const batch = (epoch: number, b: number, step: number, loss: number) =>
    ({ type: 'node_progress', node_id: 'train', progress: { event: 'batch', epoch, total_epochs: 2, batch: b, total_batches: 10, step, loss, lr: 0.1, samples_per_s: 1234.5 } }) as ServerMessage;
  const epoch = (e: number, step: number, loss: number, val?: number) =>
    ({ type: 'node_status', node_id: 'train', status: 'progress', progress: { event: 'epoch', epoch: e, total_epochs: 2, step, loss, ...(val !== undefined ? { val_loss: val } : {}) } }) as ServerMessage;

  it('the node’s bar: epoch x/y, batch, step, speed and the fraction done', () => {
    const { state } = apply([
      { type: 'node_status', node_id: 'train', status: 'progress', progress: { event: 'config', config: { epochs: 2, batches_per_epoch: 10, lr: 0.1 } } },
      batch(1, 5, 5, 2.0),
    ]);
    expect(state.progress.train).toEqual({
      epoch: 1,
      totalEpochs: 2,
      batch: 5,
      totalBatches: 10,
      step: 5,
      samplesPerS: 1234.5,
      loss: 2,
      valLoss: null,
      lr: 0.1,
      fraction: 0.25,
    });
    const after = apply([epoch(1, 10, 1.5, 1.7)], state).state.progress.train!;
    expect(after.fraction).toBe(0.5);
    expect(after.valLoss).toBe(1.7);
    expect(after.batch).toBe(10);
  });

  it('the loss chart’s series: per update and per epoch with validation', () => {
    const { state, said } = apply([batch(1, 3, 3, 2.5), batch(1, 8, 8, 2.0), epoch(1, 10, 2.1, 2.3), batch(2, 4, 14, 1.5), epoch(2, 20, 1.4)]);
    expect(state.seriesNode).toBe('train');
    const s = state.series.train!;
    // One row per frame on the step axis: an update's loss, or an epoch's training and validation loss.
    expect(toArray(s.step)).toEqual([3, 8, 10, 14, 20]);
    expect(toArray(s.batchLoss)).toEqual([2.5, 2.0, null, 1.5, null]);
    expect(toArray(s.epochLoss)).toEqual([null, null, 2.1, null, 1.4]);
    expect(toArray(s.valLoss)).toEqual([null, null, 2.3, null, null]);
    expect(s.lossPoints).toBe(6);
    expect(said.map((m) => m.text)).toEqual(['Epoch 1/2: loss 2.100, validation loss 2.300', 'Epoch 2/2: loss 1.400']);
  });

  it('a batch frame sent as node_status "progress" (older servers) counts the same as node_progress', () => {
    const old = { type: 'node_status', node_id: 'train', status: 'progress', progress: { event: 'batch', epoch: 1, total_epochs: 2, batch: 3, total_batches: 10, step: 3, loss: 2.5 } } as ServerMessage;
    const now = { type: 'node_progress', node_id: 'train', progress: { event: 'batch', epoch: 1, total_epochs: 2, batch: 3, total_batches: 10, step: 3, loss: 2.5 } } as ServerMessage;
    expect(apply([old]).state).toEqual(apply([now]).state);
    expect(apply([now]).state.progress.train!.batch).toBe(3);
  });

  it('a frame without a loss leaves the series as it was', () => {
    const s = reduceSeries(undefined, { event: 'config', config: {} });
    expect(s).toBeUndefined();
    expect(reduceProgress(undefined, { event: 'batch', epoch: 1, total_epochs: 4, batch: 1, total_batches: 4, step: 1 }).fraction).toBeCloseTo(1 / 16);
  });
});
