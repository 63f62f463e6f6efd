// The compare view's charts: each run's series (as GET /api/runs/{id}/series
// gives it, [step, value] pairs) overlaid on one x axis, as uPlot's aligned
// columns. Pure (no uPlot import).
import type { SeriesPoints } from '../api/runs';
import type { COMPARE_SERIES } from '../store/runHistory';

/** The compare view's charts, one a quantity, all by epoch. */
export type CompareKind = 'epochLoss' | 'valLoss' | 'valAccuracy' | 'lr';
export const COMPARE_KINDS: readonly CompareKind[] = ['epochLoss', 'valLoss', 'valAccuracy', 'lr'];

/** The series each chart draws (among the store's COMPARE_SERIES, which it fetches). */
export const SERIES_OF: Record<CompareKind, (typeof COMPARE_SERIES)[number]> = {
  epochLoss: 'epoch_loss',
  valLoss: 'val_loss',
  valAccuracy: 'val_accuracy',
  lr: 'epoch_lr',
};

export interface Overlay {
  /** x (the union of every run's steps, ascending), then one column a run (null where it has no value). */
  data: (number | null)[][];
  /** Values held, all runs together. */
  points: number;
  /** Per run: whether it has any value (a run without one keeps out of the chart's count). */
  drawn: boolean[];
}

/** Runs' series on one x axis: a column a run, in the order given; a run without the series is an empty column. */
export function overlay(perRun: readonly (SeriesPoints | undefined)[]): Overlay {
  const xs = new Set<number>();
  for (const s of perRun) for (const [x, y] of s ?? []) if (Number.isFinite(x) && Number.isFinite(y)) xs.add(x);
  const x = [...xs].sort((a, b) => a - b);
  const at = new Map(x.map((v, i) => [v, i]));
  let points = 0;
  const columns = perRun.map((s) => {
    const col: (number | null)[] = new Array<number | null>(x.length).fill(null);
    for (const [sx, sy] of s ?? []) {
      const i = at.get(sx);
      if (i === undefined || !Number.isFinite(sy)) continue;
      if (col[i] === null) ++points;
      col[i] = sy; // a repeated step keeps its last value
    }
    return col;
  });
  return { data: [x, ...columns], points, drawn: columns.map((c) => c.some((v) => v !== null)) };
}
