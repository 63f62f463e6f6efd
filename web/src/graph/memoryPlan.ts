// The memory plan (POST /api/graph/plan) as the editor uses it: the bar's
// segments, the option to suggest, the param edits that apply an option,
// whether a plan still describes the graph, and the measured peak to set
// beside the prediction. Pure, so each rule is tested on its own.
import type { GraphJson, MemoryPlan, NodeDefinition, PlanBreakdown, PlanOption } from '../api/types';
import type { CodefyNode } from './graphJson';

/**
 * The bar's parts, in the order they are drawn: what stays for the run, then what grows with the
 * batch, then what the validation pass needs beyond training's peak (the prediction is the larger of the two).
 */
export const SEGMENT_KEYS = ['weights', 'gradients', 'optimizer', 'otherFixed', 'activations', 'validation'] as const;
export type SegmentKey = (typeof SEGMENT_KEYS)[number];

const SEGMENT_FIELDS: Record<Exclude<SegmentKey, 'validation'>, keyof PlanBreakdown> = {
  weights: 'parameter_bytes',
  gradients: 'gradient_bytes',
  optimizer: 'optimizer_state_bytes',
  otherFixed: 'other_fixed_bytes',
  activations: 'activation_bytes',
};

export interface BarSegment {
  key: SegmentKey;
  bytes: number;
  /** Where it starts and how wide it is, as fractions of the bar. */
  start: number;
  width: number;
}

export interface MemoryBar {
  /** The bytes the whole bar stands for: the largest of the device's memory, the prediction and the measured peak. */
  scaleBytes: number;
  /** The breakdown's parts, left to right (parts of 0 bytes left out). */
  segments: BarSegment[];
  /** The same parts as fractions of the prediction alone: the breakdown enlarged, for a prediction too small on the device's scale. */
  composition: BarSegment[];
  /** The prediction's end on the bar (the sum of the parts may differ slightly from it). */
  predictedAt: number;
  /** The device's memory's end on the bar (1 unless the prediction or the measure is over it); null when unknown. */
  availableAt: number | null;
  /** Where the margin starts: the most a peak may be and still fit (the device's memory / (1 + margin)). */
  usableAt: number | null;
  /** The measured peak's place on the bar, when a run measured one. */
  measuredAt: number | null;
  /** The prediction with its margin is over the device's memory (the planner's `fits`, for this margin). */
  over: boolean;
}

const bytes = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

/** The bar of `plan`'s predicted peak against its device's memory, with the margin kept free and a measured peak. */
export function memoryBar(plan: MemoryPlan, margin: number, measured: number | null = null): MemoryBar {
  const available = bytes(plan.available_bytes);
  const predicted = bytes(plan.predicted_peak_bytes);
  const parts: { key: SegmentKey; bytes: number }[] = (Object.keys(SEGMENT_FIELDS) as (keyof typeof SEGMENT_FIELDS)[]).map((key) => ({
    key,
    bytes: bytes(plan.breakdown?.[SEGMENT_FIELDS[key]]),
  }));
  const training = parts.reduce((a, p) => a + p.bytes, 0);
  parts.push({ key: 'validation', bytes: Math.max(0, predicted - training) });
  const sum = training + parts.at(-1)!.bytes;
  const scaleBytes = Math.max(available, predicted, sum, bytes(measured), 1);
  const segments: BarSegment[] = [];
  let at = 0;
  for (const p of parts) {
    if (p.bytes === 0) continue;
    const width = p.bytes / scaleBytes;
    segments.push({ key: p.key, bytes: p.bytes, start: at, width });
    at += width;
  }
  const usable = available / (1 + Math.max(margin, 0));
  const composition = segments.map((s) => ({ ...s, start: (s.start * scaleBytes) / sum, width: s.bytes / sum }));
  return {
    scaleBytes,
    segments,
    composition,
    predictedAt: predicted / scaleBytes,
    availableAt: available ? available / scaleBytes : null,
    usableAt: available ? usable / scaleBytes : null,
    measuredAt: bytes(measured) ? bytes(measured) / scaleBytes : null,
    over: available > 0 && predicted > usable,
  };
}

/** Whether `option` is how the graph trains now (the plan's own precision, micro-batch and steps). */
export const isCurrentOption = (plan: MemoryPlan, option: PlanOption): boolean =>
  option.precision === plan.precision && option.micro_batch === plan.micro_batch && option.accumulate_steps === plan.accumulate_steps;

/**
 * The fitting option to suggest: one that keeps the plan's effective batch first, then the
 * fewest accumulation steps (the fewest passes per update), then the precision the graph asks
 * for, then the largest micro-batch; null when none fits.
 */
export function bestOption(plan: MemoryPlan): PlanOption | null {
  const rank = (o: PlanOption): number[] => [
    o.effective_batch === plan.effective_batch ? 0 : 1,
    o.accumulate_steps,
    o.precision === plan.precision ? 0 : 1,
    -o.micro_batch,
  ];
  const before = (a: number[], b: number[]): boolean => {
    const i = a.findIndex((v, k) => v !== b[k]);
    return i >= 0 && a[i]! < b[i]!;
  };
  let best: { option: PlanOption; rank: number[] } | null = null;
  for (const option of plan.options) {
    if (!option.fits) continue;
    const r = rank(option);
    if (!best || before(r, best.rank)) best = { option, rank: r };
  }
  return best?.option ?? null;
}

/** The option to suggest instead of how the graph trains now (Run's warning): the best fitting one that differs; null when none. */
export const suggestedOption = (plan: MemoryPlan): PlanOption | null =>
  bestOption({ ...plan, options: plan.options.filter((o) => !isCurrentOption(plan, o)) });

/** One param to set. */
export interface ParamEdit {
  nodeId: string;
  param: string;
  value: unknown;
}

/**
 * The param edits that make the graph train as `option` says: the batch source's param
 * (DataLoader.batch_size) gets the micro-batch, the TrainingLoop its accumulation steps and
 * precision. Without a batch source only an option of the same micro-batch can be applied (null otherwise).
 */
export function optionEdits(plan: MemoryPlan, option: PlanOption): ParamEdit[] | null {
  const edits: ParamEdit[] = [];
  const source = plan.batch_source?.node_id ? plan.batch_source : null;
  if (source) edits.push({ nodeId: source.node_id, param: source.param, value: option.micro_batch });
  else if (option.micro_batch !== plan.micro_batch) return null;
  edits.push({ nodeId: plan.node_id, param: 'accumulate_steps', value: option.accumulate_steps });
  edits.push({ nodeId: plan.node_id, param: 'precision', value: option.precision });
  return edits;
}

/** Key order fixed, so that equal values give equal text. */
function stable(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stable);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, stable((v as Record<string, unknown>)[k])]),
    );
  return v;
}

/** Whether some edit would change the graph as it is now (a param's absent value is its default). */
export function editsPending(
  edits: readonly ParamEdit[],
  nodes: readonly CodefyNode[],
  defs: Readonly<Record<string, NodeDefinition>>,
): boolean {
  return edits.some((e) => {
    const node = nodes.find((n) => n.id === e.nodeId);
    if (!node) return true;
    const given = node.data.params[e.param];
    const value = given ?? defs[node.data.nodeType]?.params.find((p) => p.name === e.param)?.default;
    return String(value) !== String(e.value);
  });
}

/**
 * What a plan depends on, as text: each node's type and params, the wires and the device (not
 * where nodes are drawn, nor the graph's name). A plan is fresh while this stays the same.
 */
export function planKey(graph: GraphJson, device: string): string {
  const nodes = graph.nodes
    .map((n) => [n.id, n.type, stable(n.data?.params ?? {})] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const edges = graph.edges
    .map((e) => [e.source, e.sourceHandle ?? null, e.target, e.targetHandle ?? null, e.type ?? 'data'] as const)
    .map((e) => JSON.stringify(e))
    .sort();
  return JSON.stringify({ device, nodes, edges });
}

/**
 * The measured peak on the plan's device from a run's `peak_memory_bytes` (by device name):
 * the same name, else the device's first index ("cuda" → "cuda:0"), else the only entry.
 */
export function measuredPeak(peaks: Record<string, number> | undefined, device: string): number | null {
  if (!peaks) return null;
  const entries = Object.entries(peaks).filter(([, v]) => typeof v === 'number' && Number.isFinite(v) && v > 0);
  const exact = entries.find(([k]) => k === device) ?? entries.find(([k]) => k === `${device}:0`);
  if (exact) return exact[1];
  return entries.length === 1 ? entries[0]![1] : null;
}
