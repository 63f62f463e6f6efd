// The compare view's two tables, from GET /api/runs/compare: the settings
// that differ (one row a setting, one cell a run) and the final metrics side
// by side. Pure: what a row is about comes back as data (`what`), and the
// view puts it into words.
import type { CompareResponse } from '../api/runs';
import { formatMetric, formatPercent } from './historyRows';
import { formatBytes, formatDuration } from './serverRows';

/** A run's own fields the server compares (the view names each). */
export const RUN_FIELDS = [
  'graph',
  'graph_hash',
  'source',
  'status',
  'seed',
  'devices',
  'precision_requested',
  'precision',
  'micro_batch',
  'accumulate_steps',
  'effective_batch',
  'world_size',
  'threads',
  'edges',
] as const;
export type RunField = (typeof RUN_FIELDS)[number];
const isRunField = (key: string): key is RunField => (RUN_FIELDS as readonly string[]).includes(key);

/** What a settings row is about. */
export type DiffWhat =
  | { kind: 'field'; field: RunField }
  | { kind: 'param'; node: string; nodeType: string | null; param: string }
  | { kind: 'nodeType'; node: string }
  | { kind: 'other'; label: string };

export interface Cell {
  /** What the cell shows (shortened when long). */
  text: string;
  /** The whole value, for a tooltip. */
  full: string;
  /** The run has no such setting. */
  absent: boolean;
}

export interface DiffRow {
  key: string;
  what: DiffWhat;
  cells: Cell[];
}

/** Longer values are cut to this many characters in a cell (the tooltip has them whole). */
export const CELL_CHARS = 48;

/** A setting's value in a cell: numbers and text as they are, lists joined, anything else as JSON. */
export function cellOf(value: unknown): Cell {
  if (value === null || value === undefined) return { text: '', full: '', absent: true };
  let full: string;
  if (typeof value === 'string') full = value;
  else if (typeof value === 'number' || typeof value === 'boolean') full = String(value);
  else if (Array.isArray(value) && value.every((v) => v === null || typeof v !== 'object')) full = value.join(', ');
  else full = JSON.stringify(value);
  const text = full.length > CELL_CHARS ? `${full.slice(0, CELL_CHARS - 1)}…` : full;
  return { text, full, absent: false };
}

function diffWhat(d: CompareResponse['differences'][number]): DiffWhat {
  if (d.node && d.param) return { kind: 'param', node: d.node, nodeType: d.node_type ?? null, param: d.param };
  if (d.node && d.key === `${d.node}.type`) return { kind: 'nodeType', node: d.node };
  if (isRunField(d.key)) return { kind: 'field', field: d.key };
  return { kind: 'other', label: d.label || d.key };
}

/** The settings that differ, in the server's order (the runs' own fields, then the nodes' params), a cell per run. */
export function diffRows(c: CompareResponse): DiffRow[] {
  const runs = c.runs.length;
  return c.differences.map((d) => ({
    key: d.key,
    what: diffWhat(d),
    cells: Array.from({ length: runs }, (_, i) => cellOf(d.values[i])),
  }));
}

/** What a metrics row is about. */
export type MetricWhat =
  | { kind: 'metric'; node: string | null; name: string }
  | { kind: 'duration' }
  | { kind: 'peak'; device: string };

export interface MetricCell {
  text: string;
  /** The best of the row (lowest loss, highest accuracy) where the runs differ. */
  best: boolean;
}

export interface MetricRow {
  key: string;
  what: MetricWhat;
  cells: MetricCell[];
  /** Shown at once: the final losses and accuracy, the duration and the peak memory; the rest fold away. */
  primary: boolean;
}

/** The metrics shown at once (the rest are folded). */
export const PRIMARY_METRICS: ReadonlySet<string> = new Set(['final_train_loss', 'final_val_loss', 'final_val_accuracy']);

function metricWhat(key: string): MetricWhat {
  if (key === 'duration_s') return { kind: 'duration' };
  if (key.startsWith('peak_memory.')) return { kind: 'peak', device: key.slice('peak_memory.'.length) };
  const dot = key.lastIndexOf('.');
  return dot < 0 ? { kind: 'metric', node: null, name: key } : { kind: 'metric', node: key.slice(0, dot), name: key.slice(dot + 1) };
}

function metricText(what: MetricWhat, v: number | null): string {
  if (v === null) return '';
  if (what.kind === 'duration') return formatDuration(v);
  if (what.kind === 'peak' || /bytes/.test(what.name)) return formatBytes(v);
  if (/accuracy/.test(what.name)) return formatPercent(v);
  return formatMetric(v);
}

/** Which way is better for a metric: lower (losses), higher (accuracies), or neither. */
function better(what: MetricWhat): 'low' | 'high' | null {
  if (what.kind !== 'metric') return null;
  if (/loss$/.test(what.name)) return 'low';
  if (/accuracy$/.test(what.name)) return 'high';
  return null;
}

/** Every final metric side by side; the primary ones first, each group in the server's order. */
export function metricRows(c: CompareResponse): MetricRow[] {
  const runs = c.runs.length;
  const rows = c.metrics.map((m) => {
    const what = metricWhat(m.key);
    const values = Array.from({ length: runs }, (_, i) => {
      const v = m.values[i];
      return typeof v === 'number' && Number.isFinite(v) ? v : null;
    });
    const present = values.filter((v): v is number => v !== null);
    const way = better(what);
    const target =
      way && present.length >= 2 && new Set(present).size > 1 ? (way === 'low' ? Math.min(...present) : Math.max(...present)) : null;
    return {
      key: m.key,
      what,
      cells: values.map((v) => ({ text: metricText(what, v), best: target !== null && v === target })),
      primary: what.kind !== 'metric' || PRIMARY_METRICS.has(what.name),
    };
  });
  return [...rows.filter((r) => r.primary), ...rows.filter((r) => !r.primary)];
}
