// The Runs panel's rows, from GET /api/runs?history=1 as the server sends
// them: one row a run with what the table shows, and its sorting. Pure, so it
// is tested without a server.
import type { HistoryEntry } from '../api/runs';

/** A run row as the table shows it; null where the run does not say. */
export interface HistoryRow {
  id: string;
  /** The id short enough for a legend: a server's "run-5c0ffe-12" as it is, the command line's "20261101-140322-3fa2b1" as "3fa2b1". */
  short: string;
  graph: string | null;
  status: string;
  source: string | null;
  /** Unix seconds; null for a queued run the history does not know yet. */
  startedAt: number | null;
  precision: string | null;
  effectiveBatch: number | null;
  finalLoss: number | null;
  finalValLoss: number | null;
  valAccuracy: number | null;
  /** Seconds: the recorded duration, or for a running run the time since it started. */
  duration: number | null;
  /** The highest peak of its devices, in bytes. */
  peakBytes: number | null;
  peakByDevice: Record<string, number>;
  device: string | null;
  error: string | null;
  /** Queued or running: not deletable, and polled. */
  active: boolean;
  /** In the run history: its snapshot can be opened, and it can be compared and deleted. */
  inHistory: boolean;
  /** Runs ahead of it in its queue. */
  position: number;
}

export const ACTIVE_STATUSES: ReadonlySet<string> = new Set(['queued', 'running']);
export const isActive = (status: string) => ACTIVE_STATUSES.has(status);

/** The statuses the status filter offers (the history's, and the queue's two). */
export const HISTORY_STATUSES = ['queued', 'running', 'completed', 'failed', 'stopped', 'interrupted'] as const;

/** An id short enough for a legend or a tab name: a server's id whole ("run-<server tag>-<n>"), the random tail of another. */
export function shortRunId(id: string): string {
  if (id.length <= 10 || /^run-(?:[0-9a-f]+-)?\d+$/.test(id)) return id;
  const tail = /-([0-9a-f]{4,})$/i.exec(id)?.[1];
  return tail ?? id.slice(-8);
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A final metric of the first node that reports it as a number (a graph's training node), or null. */
export function finalMetric(metrics: HistoryEntry['final_metrics'], name: string): number | null {
  if (!metrics || typeof metrics !== 'object') return null;
  for (const node of Object.values(metrics)) {
    const v = node && typeof node === 'object' ? (node as Record<string, unknown>)[name] : undefined;
    if (finite(v)) return v;
  }
  return null;
}

function errorText(e: HistoryEntry['error']): string | null {
  if (!e) return null;
  if (typeof e === 'string') return e || null;
  return typeof e.message === 'string' && e.message ? e.message : (e.kind ?? null);
}

/**
 * One run's row. `nowMs` times a running run; `ownGraph` names the graph of a
 * run this editor started when the server does not say (a queue's run the
 * history has not merged in).
 */
export function historyRow(e: HistoryEntry, nowMs: number, ownGraph?: string | null): HistoryRow {
  const peaks: Record<string, number> = {};
  for (const [device, bytes] of Object.entries(e.peak_memory ?? {})) if (finite(bytes)) peaks[device] = bytes;
  const peakValues = Object.values(peaks);
  const active = isActive(e.status);
  const startedAt = finite(e.started_at) && e.started_at > 0 ? e.started_at : null;
  const recorded = finite(e.duration_s) ? e.duration_s : finite(e.seconds) ? e.seconds : null;
  const duration =
    e.status === 'running' && startedAt !== null ? Math.max(0, nowMs / 1000 - startedAt) : active ? null : recorded;
  return {
    id: e.run_id,
    short: shortRunId(e.run_id),
    graph: e.graph || ownGraph || null,
    status: e.status,
    source: e.source ?? null,
    startedAt,
    precision: e.precision || e.precision_requested || null,
    effectiveBatch: finite(e.effective_batch) && e.effective_batch > 0 ? e.effective_batch : null,
    finalLoss: finalMetric(e.final_metrics, 'final_train_loss'),
    finalValLoss: finalMetric(e.final_metrics, 'final_val_loss'),
    valAccuracy: finalMetric(e.final_metrics, 'final_val_accuracy'),
    duration,
    peakBytes: peakValues.length ? Math.max(...peakValues) : null,
    peakByDevice: peaks,
    device: e.device ?? e.devices?.[0] ?? null,
    error: errorText(e.error),
    active,
    inHistory: e.from_history === true,
    position: e.position ?? 0,
  };
}

/** A page's runs after those already listed (the queue's runs come again at the top of each first page). */
export function mergeEntries(listed: readonly HistoryEntry[], more: readonly HistoryEntry[]): HistoryEntry[] {
  const seen = new Set(listed.map((e) => e.run_id));
  return [...listed, ...more.filter((e) => !seen.has(e.run_id))];
}

export type SortKey =
  | 'when'
  | 'graph'
  | 'status'
  | 'precision'
  | 'batch'
  | 'loss'
  | 'accuracy'
  | 'duration'
  | 'memory';
export const SORT_KEYS: readonly SortKey[] = ['when', 'graph', 'status', 'precision', 'batch', 'loss', 'accuracy', 'duration', 'memory'];
export type SortDir = 'asc' | 'desc';
export interface Sort {
  key: SortKey;
  dir: SortDir;
}

/** The order a column sorts in first: newest, largest accuracy first; names, losses and the rest from the smallest. */
export const firstDir = (key: SortKey): SortDir => (key === 'when' || key === 'accuracy' ? 'desc' : 'asc');

/** The next sort after a click on `key`'s header: its first direction, or the other one when it is already sorted by it. */
export function nextSort(current: Sort, key: SortKey): Sort {
  if (current.key !== key) return { key, dir: firstDir(key) };
  return { key, dir: current.dir === 'asc' ? 'desc' : 'asc' };
}

function sortValue(r: HistoryRow, key: SortKey): number | string | null {
  switch (key) {
    case 'when':
      return r.startedAt ?? Number.POSITIVE_INFINITY; // a queued run has not started: it is the newest
    case 'graph':
      return r.graph;
    case 'status':
      return r.status;
    case 'precision':
      return r.precision;
    case 'batch':
      return r.effectiveBatch;
    case 'loss':
      return r.finalLoss;
    case 'accuracy':
      return r.valAccuracy;
    case 'duration':
      return r.duration;
    case 'memory':
      return r.peakBytes;
  }
}

/** The rows sorted by a column; runs without a value for it go last either way, ties newest first. */
export function sortRows(rows: readonly HistoryRow[], sort: Sort): HistoryRow[] {
  const sign = sort.dir === 'asc' ? 1 : -1;
  const newest = (a: HistoryRow, b: HistoryRow) =>
    (b.startedAt ?? Number.POSITIVE_INFINITY) - (a.startedAt ?? Number.POSITIVE_INFINITY) || b.id.localeCompare(a.id, 'en', { numeric: true });
  return [...rows].sort((a, b) => {
    const va = sortValue(a, sort.key);
    const vb = sortValue(b, sort.key);
    if (va === null || vb === null) return va === vb ? newest(a, b) : va === null ? 1 : -1;
    const c =
      typeof va === 'number' && typeof vb === 'number'
        ? va === vb
          ? 0
          : va < vb
            ? -1
            : 1
        : String(va).localeCompare(String(vb), 'en', { numeric: true, sensitivity: 'base' });
    return c * sign || newest(a, b);
  });
}

/**
 * Whether the panel lists a run: every run the history has, and the queue's
 * runs under way (a finished run the queue still remembers but the history
 * does not — deleted, or never recorded — has nothing to show here; the
 * Server panel lists the queue).
 */
export const listed = (r: HistoryRow) => r.inHistory || r.active;

/**
 * Whether a row passes the panel's filters (the server filters its history
 * the same way; this also holds for the queue's runs it lists first): `graph`
 * null for every graph, `status` '' for any.
 */
export function passesFilter(r: HistoryRow, graph: string | null, status: string): boolean {
  if (status && r.status !== status) return false;
  return graph === null || r.graph === graph;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** When a run started, in local time: "14:03:22" today, "11-01 14:03" this year, "2025-11-01" before. */
export function formatWhen(unixSeconds: number | null, nowMs: number): string {
  if (unixSeconds === null) return '';
  const d = new Date(unixSeconds * 1000);
  const now = new Date(nowMs);
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  if (d.getFullYear() !== now.getFullYear()) return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  if (d.getMonth() !== now.getMonth() || d.getDate() !== now.getDate()) return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
  return `${time}:${pad(d.getSeconds())}`;
}

/** The full local date and time, for a tooltip. */
export function formatDateTime(unixSeconds: number | null): string {
  if (unixSeconds === null) return '';
  const d = new Date(unixSeconds * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A loss or other metric in a table cell: four significant digits. */
export function formatMetric(v: number | null): string {
  if (v === null) return '';
  if (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e6)) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

/** An accuracy from 0 to 1 as a percentage with one decimal. */
export const formatPercent = (v: number | null) => (v === null ? '' : `${(v * 100).toFixed(1)}%`);
