// A TrainingLoop's losses as uPlot's aligned columns: one x (the optimizer
// step), the training loss per update, and the epoch and validation losses
// at the step each epoch ended on.
import type { LossSeries } from '../store/runReducer';

export type Column = (number | null)[];
export interface LossColumns {
  x: number[];
  batch: Column;
  epoch: Column;
  val: Column;
  /** Values drawn (nulls are gaps, not points). */
  points: number;
}

export function lossColumns(s: LossSeries | undefined): LossColumns {
  if (!s) return { x: [], batch: [], epoch: [], val: [], points: 0 };
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
