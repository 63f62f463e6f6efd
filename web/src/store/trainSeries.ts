// A TrainingLoop's progress frames as the series its charts draw (loss,
// validation accuracy, learning rate, gradient norm) and the facts shown
// beside them (precision, effective batch size, speed, peak memory). Pure:
// every function returns a new value and leaves its argument as it was.
import type { ProgressEvent } from '../api/types';
import { append, emptyColumn, last, type Column } from './column';

/** x ascending (strictly), y beside it. */
export interface XYSeries {
  x: Column<number>;
  y: Column<number>;
}

/** One TrainingLoop's series. */
export interface TrainSeries {
  /**
   * The loss chart's rows on the step axis, in arrival order (steps never go
   * back): a row is one update's training loss (`batchLoss`) or one epoch's
   * training and validation loss (`epochLoss`, `valLoss`); the other cells are null.
   */
  step: Column<number>;
  batchLoss: Column<number | null>;
  epochLoss: Column<number | null>;
  valLoss: Column<number | null>;
  /** Loss values held (not counting the null cells). */
  lossPoints: number;
  /** Validation accuracy per epoch (x = epoch). */
  accuracy: XYSeries;
  /** Learning rate (x = step). */
  lr: XYSeries;
  /** Gradient L2 norm of the latest update (x = step). */
  gradNorm: XYSeries;
}

/** What the run's facts panel says about one TrainingLoop; absent fields are not known yet. */
export interface RunFacts {
  device?: string;
  /** The precision training runs in, and the one asked for (the same unless it fell back). */
  precision?: string;
  precisionRequested?: string;
  /** Why the precision used differs from the one requested. */
  precisionReason?: string;
  batchSize?: number;
  accumulateSteps?: number;
  effectiveBatchSize?: number;
  samplesPerS?: number;
  /** Peak bytes per device ("cpu", "cuda:0") since the node started. */
  peakMemory?: Record<string, number>;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

const emptyXY = (): XYSeries => ({ x: emptyColumn(), y: emptyColumn() });

export function emptySeries(): TrainSeries {
  return {
    step: emptyColumn(),
    batchLoss: emptyColumn(),
    epochLoss: emptyColumn(),
    valLoss: emptyColumn(),
    lossPoints: 0,
    accuracy: emptyXY(),
    lr: emptyXY(),
    gradNorm: emptyXY(),
  };
}

/** The series with (x, y) appended when x is past its last x; the same series otherwise. */
function pushXY(s: XYSeries, x: number | null, y: number | null): XYSeries {
  if (x === null || y === null) return s;
  const lastX = last(s.x);
  if (lastX !== undefined && x <= lastX) return s; // the same step again (an epoch's end after its last update)
  return { x: append(s.x, x), y: append(s.y, y) };
}

/** A progress frame folded into the node's series; the same series back when it adds nothing. */
export function reduceSeries(prev: TrainSeries | undefined, e: ProgressEvent): TrainSeries | undefined {
  if (e.event !== 'batch' && e.event !== 'epoch') return prev;
  const step = num(e.step);
  const s = prev ?? emptySeries();
  let next: TrainSeries = s;
  const loss = num(e.loss);
  const lastStep = last(s.step);
  if (step !== null && loss !== null && (lastStep === undefined || step >= lastStep)) {
    const batch = e.event === 'batch';
    const val = batch ? null : num(e.val_loss);
    next = {
      ...next,
      step: append(s.step, step),
      batchLoss: append(s.batchLoss, batch ? loss : null),
      epochLoss: append(s.epochLoss, batch ? null : loss),
      valLoss: append(s.valLoss, val),
      lossPoints: s.lossPoints + 1 + (val === null ? 0 : 1),
    };
  }
  const lr = pushXY(s.lr, step, num(e.lr));
  const gradNorm = pushXY(s.gradNorm, step, num(e.grad_norm));
  const accuracy = e.event === 'epoch' ? pushXY(s.accuracy, num(e.epoch), num(e.val_accuracy)) : s.accuracy;
  if (lr !== s.lr || gradNorm !== s.gradNorm || accuracy !== s.accuracy) next = { ...next, lr, gradNorm, accuracy };
  return next === s ? prev : next;
}

/** Bytes per device from a `{"cpu": 123, "cuda:0": 456}` object; undefined when there is none. */
function memoryOf(v: unknown): Record<string, number> | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const out: Record<string, number> = {};
  for (const [device, bytes] of Object.entries(v)) if (num(bytes) !== null) out[device] = bytes as number;
  return Object.keys(out).length ? out : undefined;
}

/** Precision, batch and device fields of a config event or of the final metrics. */
function trainingFields(f: RunFacts, c: Record<string, unknown>): RunFacts {
  const out = { ...f };
  const precision = str(c.precision);
  if (precision) {
    out.precision = precision;
    out.precisionRequested = str(c.precision_requested) ?? precision;
    const reason = str(c.precision_reason);
    if (reason) out.precisionReason = reason;
    else delete out.precisionReason;
  }
  const device = str(c.device);
  if (device) out.device = device;
  for (const [key, field] of [
    ['batch_size', 'batchSize'],
    ['accumulate_steps', 'accumulateSteps'],
    ['effective_batch_size', 'effectiveBatchSize'],
  ] as const) {
    const v = num(c[key]);
    if (v !== null) out[field] = v;
  }
  return out;
}

/** A progress frame folded into the node's facts; the same facts back when it says nothing new. */
export function reduceFacts(prev: RunFacts | undefined, e: ProgressEvent): RunFacts | undefined {
  if (e.event === 'config' && e.config) return trainingFields(prev ?? {}, e.config);
  if (e.event === 'batch') {
    const speed = num(e.samples_per_s);
    return speed === null || speed === prev?.samplesPerS ? prev : { ...prev, samplesPerS: speed };
  }
  if (e.event === 'epoch') {
    const memory = memoryOf(e.peak_memory_bytes);
    return memory ? { ...prev, peakMemory: memory } : prev;
  }
  return prev;
}

/**
 * A completed TrainingLoop's output summary folded into its facts: the final
 * metrics (when the summary carries them whole: the server summarises a
 * large value by its size only) give the peak memory and the run's overall speed.
 */
export function factsFromSummary(prev: RunFacts | undefined, summary: unknown): RunFacts | undefined {
  if (!summary || typeof summary !== 'object') return prev;
  const metrics = (summary as Record<string, unknown>).metrics;
  if (!metrics || typeof metrics !== 'object') return prev;
  const m = (metrics as Record<string, unknown>).value;
  if (!m || typeof m !== 'object' || Array.isArray(m)) return prev;
  const v = m as Record<string, unknown>;
  if (!('total_steps' in v)) return prev; // not a TrainingLoop's metrics
  let out = trainingFields(prev ?? {}, v);
  const memory = memoryOf(v.peak_memory_bytes);
  if (memory) out = { ...out, peakMemory: memory };
  const speed = num(v.samples_per_second);
  if (speed !== null) out = { ...out, samplesPerS: speed };
  return out;
}
