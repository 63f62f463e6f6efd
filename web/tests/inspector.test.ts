import { describe, expect, it, vi } from 'vitest';
import type { OutputData, RunOutputRef, TensorOutput } from '../src/api/outputs';
import {
  edgeTooltip,
  formatNumber,
  statsOf,
  summaryEntries,
  tableView,
  TABLE_COLS,
  TABLE_ROWS,
  tensorRequest,
  tooltipRequest,
  WHOLE_LIMIT,
} from '../src/inspector/inspect';
import { recordOutputsFor, resetInspectorForTests, useInspector } from '../src/store/inspector';

// JSON as the server gives it (GET /api/execution/outputs/{run} and …/{node}/{port}).
const lossesRef: RunOutputRef = { node_id: 'train', port: 'losses', type: 'tensor', full_shape: [10] };
const modelRef: RunOutputRef = { node_id: 'mlp', port: 'model', type: 'model', full_shape: null };
const losses: TensorOutput = {
  type: 'tensor',
  dtype: 'torch.float32',
  full_shape: [10],
  slice: '',
  sliced_shape: [10],
  truncated: false,
  values: [0.150347, 0.021478, 0.027783, 0.023633, 0.018523, 0.023217, 0.023426, 0.029807, 0.018161, 0.013024],
  min: 0.013024,
  max: 0.150347,
  mean: 0.03494,
  run_id: 'r1',
  node_id: 'train',
  port: 'losses',
};
const model: OutputData = { type: 'model', class: 'SequentialModel', params: 1284, trainable: 1284, node_id: 'mlp', port: 'model', run_id: 'r1' };

describe('the wire tooltip', () => {
  it("gives a tensor's shape, and its dtype once the port was fetched", () => {
    expect(edgeTooltip(lossesRef)).toEqual({ title: 'losses · TENSOR', detail: 'shape [10]' });
    expect(edgeTooltip(lossesRef, { ...losses, slice: '0:0', sliced_shape: [0], values: [] })).toEqual({
      title: 'losses · TENSOR',
      detail: 'shape [10] · dtype float32',
    });
  });

  it("gives another value's summary, and says when the port was not recorded", () => {
    expect(edgeTooltip(modelRef, model)).toEqual({ title: 'model · MODEL', detail: 'class SequentialModel · params 1284 · trainable 1284' });
    const scalar: OutputData = { type: 'scalar', value: 0.99, node_id: 'evaluate', port: 'accuracy', run_id: 'r1' };
    expect(edgeTooltip({ node_id: 'evaluate', port: 'accuracy', type: 'scalar', full_shape: null }, scalar).detail).toBe('0.99');
    expect(edgeTooltip(undefined).detail).toBe('Not recorded in the last run.');
  });

  it('asks for an empty slice of a tensor (just its dtype), a 0-d tensor or a summary whole', () => {
    expect(tooltipRequest(lossesRef)).toEqual({ slice: '0:0', maxElements: 1 });
    expect(tooltipRequest({ ...lossesRef, full_shape: [] })).toEqual({ slice: '', maxElements: 1 });
    expect(tooltipRequest(modelRef).slice).toBe('');
  });
});

describe('the value table', () => {
  it('shows a 1-d tensor as a column of its first values', () => {
    const v = tableView(losses.values, losses.sliced_shape, [], losses.full_shape, 4);
    expect(v.columns).toEqual(['']);
    expect(v.rows).toEqual([
      { index: 0, cells: ['0.15035'] },
      { index: 1, cells: ['0.021478'] },
      { index: 2, cells: ['0.027783'] },
      { index: 3, cells: ['0.023633'] },
    ]);
    expect(v.totalRows).toBe(10);
  });

  it('cuts a 2-d tensor to its first rows and columns', () => {
    const values = Array.from({ length: 30 }, (_, r) => Array.from({ length: 12 }, (_, c) => r * 100 + c));
    const v = tableView(values, [30, 12]);
    expect(v.columns).toEqual(Array.from({ length: TABLE_COLS }, (_, c) => String(c)));
    expect(v.rows).toHaveLength(TABLE_ROWS);
    expect(v.rows[2]!.cells.slice(0, 3)).toEqual(['200', '201', '202']);
    expect(v).toMatchObject({ totalRows: 30, totalCols: 12 });
  });

  it('picks the leading indices of a tensor of more than two dimensions', () => {
    // shape [2, 3, 2, 2]: value = 1000a + 100b + 10r + c
    const values = [0, 1].map((a) => [0, 1, 2].map((b) => [0, 1].map((r) => [0, 1].map((c) => 1000 * a + 100 * b + 10 * r + c))));
    const v = tableView(values, [2, 3, 2, 2], [1, 2]);
    expect(v.rows.map((r) => r.cells)).toEqual([
      ['1200', '1201'],
      ['1210', '1211'],
    ]);
    expect(tableView(values, [2, 3, 2, 2], [9, -4]).rows[0]!.cells).toEqual(['1000', '1001']); // clamped
  });

  it('shows a 0-d tensor as one cell, and NaN/inf (null in JSON) as a dash', () => {
    expect(tableView(3.5, []).rows).toEqual([{ index: 0, cells: ['3.5'] }]);
    expect(tableView([1, null, true], [3]).rows.map((r) => r.cells[0])).toEqual(['1', '–', 'true']);
  });

  it('fetches small tensors whole and slices large ones on the server', () => {
    expect(tensorRequest([10], [])).toEqual({ slice: '', maxElements: 10, whole: true });
    expect(tensorRequest([WHOLE_LIMIT + 1], [])).toEqual({ slice: `0:${TABLE_ROWS}`, maxElements: TABLE_ROWS * TABLE_COLS, whole: false });
    expect(tensorRequest([64, 3, 32, 32], [5, 7]).slice).toBe(`5,2,0:${TABLE_ROWS},0:${TABLE_COLS}`);
    expect(tensorRequest([512, 512], []).slice).toBe(`0:${TABLE_ROWS},0:${TABLE_COLS}`);
  });
});

describe('statistics and summaries', () => {
  it('lists the statistics the route gave, in order', () => {
    expect(statsOf(losses)).toEqual([
      { key: 'min', value: '0.013024' },
      { key: 'max', value: '0.15035' },
      { key: 'mean', value: '0.03494' },
    ]);
    expect(statsOf({ ...losses, std: 0.04 }).map((s) => s.key)).toEqual(['min', 'max', 'mean', 'std']);
    expect(statsOf({ ...losses, min: undefined, max: undefined, mean: undefined })).toEqual([]);
  });

  it("summarizes a non-tensor output without the route's own keys", () => {
    expect(summaryEntries(model)).toEqual([
      ['class', 'SequentialModel'],
      ['params', '1284'],
      ['trainable', '1284'],
    ]);
    const metrics: OutputData = { type: 'any', value: { best_epoch: 3, final_train_loss: 0.0123456, lr_history: [0.05, 0.05] } };
    expect(summaryEntries(metrics)).toEqual([
      ['best_epoch', '3'],
      ['final_train_loss', '0.012346'],
      ['lr_history', '[0.05,0.05]'],
    ]);
    const ds: OutputData = { type: 'dataset', class: 'synthetic', input_shape: [2], num_classes: 2, samples: 2000 };
    expect(summaryEntries(ds)).toEqual([
      ['class', 'synthetic'],
      ['input_shape', '[2]'],
      ['num_classes', '2'],
      ['samples', '2000'],
    ]);
  });

  it('formats numbers to 5 significant digits, with an exponent when tiny or huge', () => {
    expect(formatNumber(0.123456789)).toBe('0.12346');
    expect(formatNumber(12)).toBe('12');
    expect(formatNumber(1.5e-7)).toBe('1.500e-7');
    expect(formatNumber(2.5e9)).toBe('2500000000');
    expect(formatNumber(2.5e9 + 0.5)).toBe('2.500e+9');
    expect(formatNumber(null)).toBe('–');
  });
});

describe('recording a run', () => {
  it('asks to record only when the toggle is on; a new recorded run makes the server forget the previous one', async () => {
    resetInspectorForTests();
    const calls: string[] = [];
    vi.stubGlobal('fetch', async (url: string, init?: RequestInit) => {
      calls.push(`${init?.method ?? 'GET'} ${url}`);
      if (url === '/api/auth/bootstrap') return new Response(JSON.stringify({ token: 'tok' }));
      return new Response(JSON.stringify({ deleted: true }));
    });
    try {
      expect(recordOutputsFor('run-a')).toBe(false);
      expect(useInspector.getState().recordedRun).toBeNull();
      useInspector.getState().setRecord(true);
      expect(recordOutputsFor('run-b')).toBe(true);
      expect(useInspector.getState().recordedRun).toBe('run-b');
      expect(calls).toEqual([]);
      expect(recordOutputsFor('run-c')).toBe(true);
      expect(useInspector.getState().recordedRun).toBe('run-c');
      await vi.waitFor(() => expect(calls).toContain('DELETE /api/execution/outputs/run-b'));
    } finally {
      vi.unstubAllGlobals();
      resetInspectorForTests();
    }
  });
});
