// The loss chart's cost per update with a long series, in the browser:
// bundled by chart_update.mjs with esbuild and run in headless chromium.
// "after" is the editor's code (web/src); "before" is the code it replaced
// (commit d8f2545: the reducer copied every array per message, and the
// chart merged and sorted all steps per draw), copied here verbatim so both
// run side by side on the same data.
import uPlot from 'uplot';
import type { ProgressEvent } from '../../web/src/api/types';
import { chartColumns, decimate } from '../../web/src/charts/chartData';
import { append, emptyColumn } from '../../web/src/charts/column';
import { plotOptions } from '../../web/src/charts/plotOptions';
import { reduceSeries, type TrainSeries } from '../../web/src/store/trainSeries';

// ── before (d8f2545: web/src/store/runReducer.ts reduceLoss, web/src/charts/lossData.ts lossColumns) ──
interface LossSeries {
  batchStep: number[];
  batchLoss: number[];
  epochStep: number[];
  epoch: number[];
  epochLoss: number[];
  valLoss: (number | null)[];
}
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
function reduceLoss(prev: LossSeries | undefined, e: ProgressEvent): LossSeries | undefined {
  const loss = num(e.loss);
  const step = num(e.step);
  if (loss === null || step === null || (e.event !== 'batch' && e.event !== 'epoch')) return prev;
  const s = prev ?? { batchStep: [], batchLoss: [], epochStep: [], epoch: [], epochLoss: [], valLoss: [] };
  if (e.event === 'batch') return { ...s, batchStep: [...s.batchStep, step], batchLoss: [...s.batchLoss, loss] };
  return {
    ...s,
    epochStep: [...s.epochStep, step],
    epoch: [...s.epoch, num(e.epoch) ?? s.epoch.length + 1],
    epochLoss: [...s.epochLoss, loss],
    valLoss: [...s.valLoss, num(e.val_loss)],
  };
}
type Column = (number | null)[];
function lossColumns(s: LossSeries) {
  const steps = [...new Set([...s.batchStep, ...s.epochStep])].sort((a, b) => a - b);
  const at = new Map(steps.map((step, i) => [step, i]));
  const batch: Column = steps.map(() => null);
  const epoch: Column = steps.map(() => null);
  const val: Column = steps.map(() => null);
  s.batchStep.forEach((step, i) => (batch[at.get(step)!] = s.batchLoss[i] ?? null));
  s.epochStep.forEach((step, i) => {
    epoch[at.get(step)!] = s.epochLoss[i] ?? null;
    val[at.get(step)!] = s.valLoss[i] ?? null;
  });
  const count = (c: Column) => c.reduce<number>((n, v) => (v === null ? n : n + 1), 0);
  return { x: steps, batch, epoch, val, points: count(batch) + count(epoch) + count(val) };
}

// ── the run: a loss falling from 2.3 towards 0.3 with noise, an epoch every 1000 updates ──
const lossAt = (step: number) => 0.3 + 2.0 * Math.exp(-step / 20000) + 0.05 * Math.sin(step * 12.9898);
const batchEvent = (step: number): ProgressEvent => ({ event: 'batch', step, loss: lossAt(step), lr: 0.01, grad_norm: 1 + 0.1 * Math.sin(step) });
const epochEvent = (step: number): ProgressEvent => ({ event: 'epoch', epoch: step / 1000, step, loss: lossAt(step), val_loss: lossAt(step) + 0.05, val_accuracy: 0.9, lr: 0.01 });

/** A series of n updates for the after code, built with its own reducer. */
function afterSeries(n: number): TrainSeries {
  let s: TrainSeries | undefined;
  for (let step = 1; step <= n; step++) {
    s = reduceSeries(s, batchEvent(step));
    if (step % 1000 === 0) s = reduceSeries(s, epochEvent(step));
  }
  return s!;
}
/** The same for the before code, built directly (its reducer is O(n²) to get there). */
function beforeSeries(n: number): LossSeries {
  const s: LossSeries = { batchStep: [], batchLoss: [], epochStep: [], epoch: [], epochLoss: [], valLoss: [] };
  for (let step = 1; step <= n; step++) {
    s.batchStep.push(step);
    s.batchLoss.push(lossAt(step));
    if (step % 1000 === 0) {
      s.epochStep.push(step);
      s.epoch.push(step / 1000);
      s.epochLoss.push(lossAt(step));
      s.valLoss.push(lossAt(step) + 0.05);
    }
  }
  return s;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  const r = (v: number) => Math.round(v * 100) / 100;
  return { median_ms: r(q(0.5)), p10_ms: r(q(0.1)), p90_ms: r(q(0.9)), min_ms: r(s[0]!), max_ms: r(s.at(-1)!) };
};

const colors = { axis: '#999', grid: '#333', train: '#5aa9ff', epoch: '#f0b44c', val: '#3fcf8e' };

function newPlot(): uPlot {
  const el = document.createElement('div');
  document.body.appendChild(el);
  return new uPlot(plotOptions('loss', 600, 160, colors), [[], [], [], []], el);
}

/** Per update: fold one message, build the columns, set them and draw (uPlot's batch draws synchronously). */
function perUpdate(variant: 'before' | 'after' | 'after, drawn whole', n: number, updates: number) {
  const u = newPlot();
  const total: number[] = [];
  const reduce: number[] = [];
  const draw: number[] = [];
  if (variant !== 'before') {
    let s = afterSeries(n);
    for (let k = 1; k <= updates; k++) {
      const t0 = performance.now();
      s = reduceSeries(s, batchEvent(n + k))!;
      const c = chartColumns('loss', s);
      // The editor thins the rows to the plot's width in pixels (see ChartsPanel).
      const drawn = variant === 'after' ? decimate(c.data, 600).data : c.data;
      const t1 = performance.now();
      u.batch(() => u.setData(drawn as uPlot.AlignedData));
      const t2 = performance.now();
      reduce.push(t1 - t0);
      draw.push(t2 - t1);
      total.push(t2 - t0);
    }
  } else {
    let s = beforeSeries(n);
    for (let k = 1; k <= updates; k++) {
      const t0 = performance.now();
      s = reduceLoss(s, batchEvent(n + k))!;
      const c = lossColumns(s);
      const t1 = performance.now();
      u.batch(() => u.setData([c.x, c.batch, c.epoch, c.val] as uPlot.AlignedData));
      const t2 = performance.now();
      reduce.push(t1 - t0);
      draw.push(t2 - t1);
      total.push(t2 - t0);
    }
  }
  u.destroy();
  return { variant, points: n, updates, per_update: stats(total), fold_columns_and_thinning: stats(reduce), set_data_and_draw: stats(draw) };
}

/** The reducer alone over a whole run of n updates from empty (what the store does per message). */
function wholeRun(variant: 'before' | 'after', n: number) {
  const t0 = performance.now();
  if (variant === 'after') afterSeries(n);
  else {
    let s: LossSeries | undefined;
    for (let step = 1; step <= n; step++) s = reduceLoss(s, batchEvent(step));
  }
  return { variant, reducer_whole_run_updates: n, ms: Math.round(performance.now() - t0) };
}

// Keeps the import used (the column module is what makes appends O(1)).
void append(emptyColumn<number>(), 0);

(window as unknown as { runBench: (n: number, updates: number) => unknown[] }).runBench = (n, updates) => [
  perUpdate('before', n, updates),
  perUpdate('after, drawn whole', n, updates),
  perUpdate('after', n, updates),
  wholeRun('before', 10_000),
  wholeRun('before', 20_000),
  wholeRun('before', 40_000),
  wholeRun('after', 100_000),
];
