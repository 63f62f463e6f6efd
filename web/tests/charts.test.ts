import { describe, expect, it } from 'vitest';
import type { ProgressEvent, ServerMessage } from '../src/api/types';
import { chartColumns, decimate, fewerThanTwo, fitLogRange, fitRange, latest, seriesWithValues, tickLabel, wantsLogScale } from '../src/charts/chartData';
import { append, emptyColumn, toArray, values } from '../src/store/column';
import { plotOptions } from '../src/charts/plotOptions';
import { formatBytes } from '../src/charts/RunFacts';
import { reduceRun, startRun, type RunState } from '../src/store/runReducer';
import { factsFromSummary, reduceFacts, reduceSeries, type TrainSeries } from '../src/store/trainSeries';

const progress = (p: ProgressEvent, node = 'train'): ServerMessage => ({ type: 'node_status', node_id: node, status: 'progress', progress: p });
const apply = (messages: ServerMessage[], from: RunState = startRun('r1')) => messages.reduce((s, m) => reduceRun(s, m).state, from);

const config = progress({
  event: 'config',
  config: { epochs: 3, batch_size: 32, accumulate_steps: 4, effective_batch_size: 128, precision: 'fp32', precision_requested: 'fp16', precision_reason: 'precision fp16 is not available: float16 on CUDA only; training in fp32', device: 'cpu' },
});
const batch = (step: number, loss: number, lr: number, grad: number, speed = 1000) =>
  progress({ event: 'batch', epoch: 1, total_epochs: 3, batch: step, total_batches: 10, step, loss, lr, grad_norm: grad, samples_per_s: speed });
const epoch = (e: number, step: number, loss: number, val: number, acc: number, lr: number, grad: number, memory?: Record<string, number>) =>
  progress({ event: 'epoch', epoch: e, total_epochs: 3, step, loss, val_loss: val, val_accuracy: acc, lr, grad_norm: grad, ...(memory ? { peak_memory_bytes: memory } : {}) });

describe('append-only columns', () => {
  it('an older state keeps reading its values after later appends, and a branch copies', () => {
    const a = append(append(emptyColumn<number>(), 1), 2);
    const b = append(a, 3);
    const c = append(b, 4);
    expect(toArray(a)).toEqual([1, 2]);
    expect(toArray(b)).toEqual([1, 2, 3]);
    expect(values(c)).toBe(c.store.values); // the newest state: no copy
    // Appending to b again (a branch): b's view, c's view and the branch all stay right.
    const branch = append(b, 99);
    expect(toArray(branch)).toEqual([1, 2, 3, 99]);
    expect(toArray(c)).toEqual([1, 2, 3, 4]);
    expect(toArray(b)).toEqual([1, 2, 3]);
    expect(values(a)).toEqual([1, 2]);
  });

  it('appending is not a copy of the series per message (100k updates stay fast)', () => {
    let s: TrainSeries | undefined;
    const t0 = performance.now();
    for (let i = 1; i <= 100_000; i++) s = reduceSeries(s, { event: 'batch', step: i, loss: 1 / i, lr: 0.1, grad_norm: 1 });
    const ms = performance.now() - t0;
    expect(s!.step.length).toBe(100_000);
    expect(s!.lossPoints).toBe(100_000);
    // Copying per message would be ~5·10⁹ element copies here (minutes); appending is milliseconds.
    expect(ms).toBeLessThan(2000);
  });
});

describe('chart series', () => {
  it('validation accuracy per epoch, learning rate and gradient norm per step', () => {
    const state = apply([config, batch(5, 2.0, 0.1, 3.0), batch(10, 1.5, 0.1, 2.5), epoch(1, 10, 1.6, 1.7, 0.55, 0.1, 2.5), batch(15, 1.0, 0.05, 1.5), epoch(2, 20, 0.9, 1.0, 0.8, 0.05, 1.2)]);
    const s = state.series.train!;
    expect(toArray(s.accuracy.x)).toEqual([1, 2]);
    expect(toArray(s.accuracy.y)).toEqual([0.55, 0.8]);
    // The epoch frame at step 10 repeats the update's step: one point per step.
    expect(toArray(s.lr.x)).toEqual([5, 10, 15, 20]);
    expect(toArray(s.lr.y)).toEqual([0.1, 0.1, 0.05, 0.05]);
    expect(toArray(s.gradNorm.x)).toEqual([5, 10, 15, 20]);
    expect(toArray(s.gradNorm.y)).toEqual([3.0, 2.5, 1.5, 1.2]);
    expect(state.seriesNode).toBe('train');
  });

  it('an epoch without validation accuracy (a regression loss) adds no accuracy point', () => {
    const s = reduceSeries(undefined, { event: 'epoch', epoch: 1, step: 4, loss: 0.3, val_loss: 0.4, lr: 0.1 })!;
    expect(s.accuracy.x.length).toBe(0);
    expect(chartColumns('accuracy', s).points).toBe(0);
  });

  it('chart columns: aligned loss rows, and x/y for the others, counting values not gaps', () => {
    const s = apply([batch(5, 2.0, 0.1, 3.0), epoch(1, 10, 1.6, 1.7, 0.55, 0.1, 2.5)]).series.train!;
    expect(chartColumns('loss', s)).toEqual({ data: [[5, 10], [2.0, null], [null, 1.6], [null, 1.7]], points: 3 });
    expect(chartColumns('accuracy', s)).toEqual({ data: [[1], [0.55]], points: 1 });
    expect(chartColumns('lr', s)).toEqual({ data: [[5, 10], [0.1, 0.1]], points: 2 });
    expect(chartColumns('gradNorm', s)).toEqual({ data: [[5, 10], [3.0, 2.5]], points: 2 });
    expect(chartColumns('loss', undefined)).toEqual({ data: [[], [], [], []], points: 0 });
    expect(latest('loss', s)).toBe(1.6);
    expect(latest('accuracy', s)).toBe(0.55);
    expect(latest('gradNorm', undefined)).toBeNull();
  });

  it('the y range fits the data: a loss from 2.3 to 0.3 fills the plot', () => {
    const [lo, hi] = fitRange(0.3, 2.3);
    expect(lo).toBeGreaterThan(0.1);
    expect(lo).toBeLessThan(0.3);
    expect(hi).toBeGreaterThan(2.3);
    expect(hi).toBeLessThan(2.5);
    expect((2.3 - 0.3) / (hi - lo)).toBeGreaterThan(0.85);
    expect(fitRange(0.9, 0.99, [0, 1])[1]).toBeLessThanOrEqual(1); // accuracy never past 100%
    const flat = fitRange(0.05, 0.05); // a constant learning rate: ±10%
    expect(flat[0]).toBeCloseTo(0.045, 12);
    expect(flat[1]).toBeCloseTo(0.055, 12);
    expect(fitRange(0.001, 0.5)[0]).toBe(0); // never negative for data that is not
    expect(fitRange(null, null)).toEqual([0, 1]);
    expect(tickLabel(0.0001)).toBe('1.0e−4');
    expect(tickLabel(0.125)).toBe('0.125');
  });
});

describe('run facts', () => {
  it('precision requested and used with the reason, effective batch, speed, peak memory per device', () => {
    let state = apply([config, batch(5, 2.0, 0.1, 3.0, 1500)]);
    expect(state.facts.train).toEqual({
      device: 'cpu',
      precision: 'fp32',
      precisionRequested: 'fp16',
      precisionReason: 'precision fp16 is not available: float16 on CUDA only; training in fp32',
      batchSize: 32,
      accumulateSteps: 4,
      effectiveBatchSize: 128,
      samplesPerS: 1500,
    });
    state = apply([epoch(1, 10, 1.6, 1.7, 0.55, 0.1, 2.5, { cpu: 123_456_789 })], state);
    expect(state.facts.train!.peakMemory).toEqual({ cpu: 123_456_789 });
  });

  it('a precision that did not fall back is requested and used alike, with no reason', () => {
    const f = reduceFacts(undefined, { event: 'config', config: { precision: 'bf16', effective_batch_size: 8 } })!;
    expect(f.precision).toBe('bf16');
    expect(f.precisionRequested).toBe('bf16');
    expect(f.precisionReason).toBeUndefined();
  });

  it('the completed TrainingLoop’s summary gives the final peak memory and speed', () => {
    const summary = {
      model: { type: 'MODEL', class: 'Sequential', parameters: 100 },
      metrics: { type: 'ANY', value: { total_steps: 40, samples_per_second: 900.5, precision: 'fp32', effective_batch_size: 32, accumulate_steps: 1, peak_memory_bytes: { cpu: 2048, 'cuda:0': 4096 } } },
    };
    const state = apply([config, { type: 'node_status', node_id: 'train', status: 'completed', output_summary: summary }]);
    expect(state.statuses.train).toBe('completed');
    expect(state.facts.train!.peakMemory).toEqual({ cpu: 2048, 'cuda:0': 4096 });
    expect(state.facts.train!.samplesPerS).toBe(900.5);
    expect(state.facts.train!.precision).toBe('fp32');
    // Metrics too large to summarise (size only), or another node's summary: nothing changes.
    expect(factsFromSummary(undefined, { metrics: { type: 'ANY', size: 30 } })).toBeUndefined();
    expect(factsFromSummary(undefined, { accuracy: { type: 'SCALAR', value: 0.9 } })).toBeUndefined();
    const other = apply([{ type: 'node_status', node_id: 'evaluate', status: 'completed', output_summary: { accuracy: { type: 'SCALAR', value: 0.9 } } }]);
    expect(other.facts).toEqual({});
  });

  it('bytes read as the server writes them', () => {
    expect(formatBytes(100)).toBe('100 B');
    expect(formatBytes(12 * 1024)).toBe('12.0 KiB');
    expect(formatBytes(321_600_000)).toBe('306.7 MiB');
    expect(formatBytes(1.23 * 1024 ** 3)).toBe('1.23 GiB');
  });
});

describe('thinning for drawing', () => {
  it('keeps each bucket’s lowest and highest value of a dense series and every value of a sparse one', () => {
    const n = 10_000;
    const x = Array.from({ length: n }, (_, i) => i);
    const dense = x.map((i) => (i % 10 === 5 ? null : Math.sin(i) + (i === 4321 ? 50 : 0))); // one spike
    const sparse = x.map((i) => (i % 1000 === 999 ? i / 1000 : null));
    const { data, values } = decimate([x, dense, sparse], 100);
    expect(data[0]!.length).toBeLessThanOrEqual(100 * 2 + 10 + 2);
    expect(data[0]).toContain(4321); // the spike survives
    expect(data[1]![data[0]!.indexOf(4321)]).toBeCloseTo(Math.sin(4321) + 50);
    expect(data[2]!.filter((v) => v !== null)).toEqual(sparse.filter((v) => v !== null)); // every epoch point
    expect(data[0]![0]).toBe(0);
    expect(data[0]!.at(-1)).toBe(n - 1);
    for (let i = 1; i < data[0]!.length; i++) expect(data[0]![i]!).toBeGreaterThan(data[0]![i - 1]!);
    expect(values).toBe(data[1]!.filter((v) => v !== null).length + 10);
    // Short series are drawn as they are.
    const short = [[1, 2, 3], [0.5, null, 0.4]];
    expect(decimate(short, 100)).toEqual({ data: short, values: 2 });
  });
});

describe('plot options', () => {
  const colors = { axis: '#999', grid: '#333', train: '#5aa9ff', epoch: '#f0b44c', val: '#3fcf8e' };
  type RangeFn = (u: unknown, min: number, max: number) => [number, number];
  it('every chart’s y scale is fitted to its data; accuracy stays within 0..100%', () => {
    for (const kind of ['loss', 'lr', 'gradNorm'] as const) {
      const range = plotOptions(kind, 600, 160, colors).scales!.y!.range as RangeFn;
      expect(range(null, 0.3, 2.3)).toEqual(fitRange(0.3, 2.3));
    }
    const acc = plotOptions('accuracy', 600, 160, colors).scales!.y!.range as RangeFn;
    expect(acc(null, 0.9, 0.995)[1]).toBe(1);
  });

  it('the per-update loss is a solid line across the epoch rows; epoch and validation points are marked', () => {
    const s = plotOptions('loss', 600, 160, colors).series;
    expect(s.map((x) => x.label)).toEqual(['step', 'training loss', 'epoch loss', 'validation loss']);
    expect(s[1]).toMatchObject({ spanGaps: true });
    // Points only while the per-update series is too short for a line (tested below).
    expect(typeof s[1]!.points!.show).toBe('function');
    expect(s[1]!.width).toBeGreaterThanOrEqual(1);
    expect(s[2]!.points).toMatchObject({ show: true });
    expect(s[3]!.points).toMatchObject({ show: true });
  });
});

describe('log scale for a loss that falls a long way', () => {
  it('switches on at a 20× span of positive values, on the loss chart only, and fills the decades', () => {
    expect(wantsLogScale('loss', [[1, 2, 3], [2.3, null, 0.3], [null, 1.0, null]])).toBe(false); // 7.7×: linear
    expect(wantsLogScale('loss', [[1, 2, 3], [1.4, null, 0.01], [null, 0.02, null]])).toBe(true); // 140×
    expect(wantsLogScale('loss', [[1, 2], [-1, 5]])).toBe(false); // a negative value (NLLLoss on logits)
    expect(wantsLogScale('gradNorm', [[1, 2], [0.01, 10]])).toBe(false);
    // A short run without per-update losses: that series has no values and no legend entry.
    expect(seriesWithValues([[1, 2], [null, null], [0.5, 0.2], [0.6, null]])).toEqual([false, true, true]);
    expect(seriesWithValues([[], [], [], []])).toEqual([false, false, false]);
    const [lo, hi] = fitLogRange(0.01, 1.4);
    expect(lo).toBeLessThan(0.01);
    expect(lo).toBeGreaterThan(0.005);
    expect(hi).toBeGreaterThan(1.4);
    expect(hi).toBeLessThan(2.5);
    const range = plotOptions('loss', 600, 160, { axis: '', grid: '', train: '', epoch: '', val: '' }, true).scales!.y!;
    expect(range.distr).toBe(3);
    // uPlot leaves some log splits unlabelled (null): they read as empty, not as an error.
    const axis = plotOptions('loss', 600, 160, { axis: '', grid: '', train: '', epoch: '', val: '' }, true).axes![1]!;
    const values = axis.values as (u: unknown, splits: (number | null)[]) => string[];
    expect(values(null, [0.01, null, 0.1, null, 1])).toEqual(['0.01', '', '0.1', '', '1']);
    // Only powers of ten: not the range's lower end that uPlot also labels.
    expect(values(null, [0.0148, null, 0.1, null, 1])).toEqual(['', '', '0.1', '', '1']);
    // A linear axis labels every split it gets.
    const linear = plotOptions('loss', 600, 160, { axis: '', grid: '', train: '', epoch: '', val: '' }, false).axes![1]!;
    expect((linear.values as typeof values)(null, [0.0148, 0.02])).toEqual(['0.0148', '0.02']);
  });

  it('draws the per-update loss as points while it has fewer than two values', () => {
    expect(fewerThanTwo([null, 0.5, null], 0, 2)).toBe(true);
    expect(fewerThanTwo([null, 0.5, null, 0.4], 0, 3)).toBe(false);
    expect(fewerThanTwo([0.3, 0.5, null, 0.4], 2, 3)).toBe(true); // only the rows in view count
    expect(fewerThanTwo([], 0, -1)).toBe(true);
    const series = plotOptions('loss', 600, 160, { axis: '', grid: '', train: '', epoch: '', val: '' }).series[1]!;
    const show = series.points!.show as (u: unknown, si: number, i0: number, i1: number) => boolean;
    expect(show({ data: [[1, 2, 3], [null, 0.5, null]] }, 1, 0, 2)).toBe(true);
    expect(show({ data: [[1, 2, 3], [0.7, 0.5, null]] }, 1, 0, 2)).toBe(false);
  });
});
