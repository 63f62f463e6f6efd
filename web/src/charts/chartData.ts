// What each run chart draws, as uPlot's aligned columns, and the y range
// that fits the data. Pure (no uPlot import), so it is tested without a
// browser and stays out of the first screen's bundle.
import type { TrainSeries } from '../store/trainSeries';
import { values } from '../store/column';

export type ChartKind = 'loss' | 'accuracy' | 'lr' | 'gradNorm';
export const CHART_KINDS: readonly ChartKind[] = ['loss', 'accuracy', 'lr', 'gradNorm'];

export interface ChartColumns {
  /** x first, then one column per series (nulls are gaps). No copies: read them, never write them. */
  data: (readonly (number | null)[])[];
  /** Values held (nulls not counted). */
  points: number;
}

const EMPTY: Record<ChartKind, number> = { loss: 3, accuracy: 1, lr: 1, gradNorm: 1 };

/** The columns of one chart of a TrainingLoop's series. */
export function chartColumns(kind: ChartKind, s: TrainSeries | undefined): ChartColumns {
  if (!s) return { data: [[], ...Array.from({ length: EMPTY[kind] }, () => [])], points: 0 };
  if (kind === 'loss')
    return { data: [values(s.step), values(s.batchLoss), values(s.epochLoss), values(s.valLoss)], points: s.lossPoints };
  const xy = kind === 'accuracy' ? s.accuracy : kind === 'lr' ? s.lr : s.gradNorm;
  return { data: [values(xy.x), values(xy.y)], points: xy.y.length };
}

/**
 * The y range for data between `min` and `max`: the data fills the plot with
 * a small margin (a loss falling from 2.3 to 0.3 spans it, instead of hugging
 * one edge of a range that starts at 0); a flat line gets ±10% around it;
 * data that is never negative gets no negative axis; `limits` clamps (accuracy: 0..1).
 */
export function fitRange(min: number | null, max: number | null, limits?: readonly [number, number]): [number, number] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return limits ? [limits[0], limits[1]] : [0, 1];
  const span = max - min;
  const pad = span > 0 ? span * 0.08 : Math.abs(max) * 0.1 || 1;
  let lo = min - pad;
  let hi = max + pad;
  if (min >= 0 && lo < 0) lo = 0;
  if (limits) {
    lo = Math.max(lo, limits[0]);
    hi = Math.min(hi, limits[1]);
  }
  return [lo, hi];
}

/**
 * The same on a log scale: the data's decades fill the plot (a loss that
 * falls a hundredfold keeps its late differences visible).
 */
export function fitLogRange(min: number | null, max: number | null): [number, number] {
  if (min === null || max === null || !(min > 0) || !(max > 0)) return [0.01, 1];
  const lo = Math.log10(min);
  const hi = Math.log10(max);
  const pad = hi > lo ? (hi - lo) * 0.08 : 0.05;
  return [10 ** (lo - pad), 10 ** (hi + pad)];
}

/** Whether the loss chart draws on a log scale: all its values positive and spanning 20× or more. */
export function wantsLogScale(kind: ChartKind, data: ChartColumns['data']): boolean {
  if (kind !== 'loss') return false;
  let min = Infinity;
  let max = -Infinity;
  for (let s = 1; s < data.length; s++)
    for (const v of data[s]!) {
      if (v === null || v === undefined) continue;
      if (v < min) min = v;
      if (v > max) max = v;
    }
  return min > 0 && max / min >= 20;
}

/** Per series (x excluded): whether it holds a value (an empty one keeps out of the legend). */
export function seriesWithValues(data: ChartColumns['data']): boolean[] {
  return data.slice(1).map((col) => col.some((v) => v !== null && v !== undefined));
}

/** Whether a column holds fewer than two values in rows [i0, i1]: a line needs two, so its points are drawn. */
export function fewerThanTwo(col: ArrayLike<number | null | undefined> | undefined, i0: number, i1: number): boolean {
  let n = 0;
  for (let i = Math.max(0, i0); i <= i1 && col && i < col.length; i++) if (col[i] !== null && col[i] !== undefined && ++n >= 2) return false;
  return true;
}

/** Whether a log axis labels `v`: powers of ten only (uPlot also labels the range's lower end, 0.0148 and the like). */
export function isDecade(v: number): boolean {
  if (!(v > 0)) return false;
  const e = Math.log10(v);
  return Math.abs(e - Math.round(e)) < 1e-6;
}

/** An axis tick: short, with an exponent for very small or large numbers (learning rates). */
export function tickLabel(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a < 1e-3 || a >= 1e5) return v.toExponential(1).replace('e-', 'e−');
  return String(Number(v.toPrecision(3)));
}

/** The latest value of a chart's main series (the tab shows it), or null. */
export function latest(kind: ChartKind, s: TrainSeries | undefined): number | null {
  if (!s) return null;
  if (kind === 'loss') {
    for (let i = s.step.length - 1; i >= 0; i--) {
      const v = s.batchLoss.store.values[i] ?? s.epochLoss.store.values[i];
      if (v !== null && v !== undefined) return v;
    }
    return null;
  }
  const xy = kind === 'accuracy' ? s.accuracy : kind === 'lr' ? s.lr : s.gradNorm;
  return xy.y.length ? xy.y.store.values[xy.y.length - 1]! : null;
}

/**
 * Aligned columns thinned for drawing: with more than 4 × `buckets` rows,
 * the rows are cut into `buckets` runs and, per dense series, only the rows
 * holding each run's lowest and highest value are kept (a plot `buckets`
 * pixels wide shows the same line: every spike stays); a sparse series (at
 * most 2 × `buckets` values, like the per-epoch points) keeps every value.
 * Fewer rows: the columns as they are. O(rows × series) per call.
 */
export function decimate(data: ChartColumns['data'], buckets: number): { data: ChartColumns['data']; values: number } {
  const x = data[0] ?? [];
  const n = x.length;
  const count = (col: readonly (number | null)[], keep?: Uint8Array) => {
    let c = 0;
    for (let i = 0; i < col.length; i++) if (col[i] !== null && col[i] !== undefined && (!keep || keep[i])) c++;
    return c;
  };
  if (n <= buckets * 4) return { data, values: data.slice(1).reduce((s, col) => s + count(col), 0) };
  const keep = new Uint8Array(n);
  keep[0] = 1;
  keep[n - 1] = 1;
  const size = n / buckets;
  for (let s = 1; s < data.length; s++) {
    const col = data[s]!;
    if (count(col) <= buckets * 2) {
      for (let i = 0; i < n; i++) if (col[i] !== null && col[i] !== undefined) keep[i] = 1;
      continue;
    }
    for (let b = 0; b < buckets; b++) {
      const end = Math.min(n, Math.floor((b + 1) * size));
      let lo = -1;
      let hi = -1;
      for (let i = Math.floor(b * size); i < end; i++) {
        const v = col[i];
        if (v === null || v === undefined) continue;
        if (lo < 0 || v < col[lo]!) lo = i;
        if (hi < 0 || v > col[hi]!) hi = i;
      }
      if (lo >= 0) keep[lo] = 1;
      if (hi >= 0) keep[hi] = 1;
    }
  }
  const out = data.map(() => [] as (number | null)[]);
  for (let i = 0; i < n; i++) if (keep[i]) for (let s = 0; s < data.length; s++) out[s]!.push(data[s]![i] ?? null);
  return { data: out, values: out.slice(1).reduce((s, col) => s + count(col), 0) };
}
