// The run history's routes (issue #30): the history's runs, one run's whole
// record and its series, runs compared, a run deleted. REST shapes that
// `codefy protocol` does not describe (it covers the WebSocket), so they live
// here rather than in types.ts. Components never call these: the Runs
// panel's store does (src/store/runHistory.ts).
import { apiFetch } from './auth';
import { readAnswer } from './rest';
import type { GraphJson } from './types';

/** A run's status in the history (the queue's runs add "queued"; "interrupted": the server stopped under it). */
export type HistoryStatus = 'queued' | 'running' | 'completed' | 'failed' | 'stopped' | 'interrupted';
/** Who started a run. */
export type RunSource = 'cli' | 'editor' | 'codefyui' | 'api';

/** A run's error as the history keeps it (RunError's JSON). */
export interface HistoryRunError {
  kind?: string;
  code?: string;
  message?: string;
  [key: string]: unknown;
}

/**
 * One entry of GET /api/runs?history=1. The queue's runs come first with
 * `worker` and `position` (and the history's fields when it has the run);
 * then the history's, newest first, with `from_history`. Every history field
 * is optional: a queue's run the history does not know has none of them.
 */
export interface HistoryEntry {
  run_id: string;
  status: HistoryStatus | string;
  device?: string | null;
  worker?: string;
  position?: number;
  id?: string;
  graph?: string;
  graph_hash?: string;
  source?: RunSource | string;
  seed?: number | null;
  devices?: string[];
  precision_requested?: string;
  precision?: string;
  micro_batch?: number | null;
  accumulate_steps?: number | null;
  effective_batch?: number | null;
  world_size?: number | null;
  threads?: number | null;
  /** Unix seconds. */
  started_at?: number | null;
  ended_at?: number | null;
  duration_s?: number | null;
  seconds?: number | null;
  error?: HistoryRunError | string | null;
  /** Peak bytes by device. */
  peak_memory?: Record<string, number> | null;
  /** By node id: that node's final metrics (final_train_loss, final_val_loss, final_val_accuracy, …). */
  final_metrics?: Record<string, Record<string, unknown>> | null;
  from_history?: boolean;
}

export interface HistoryPage {
  runs: HistoryEntry[];
  /** Pass back as `cursor` for the next (older) page; null: there is none. */
  next_cursor: string | null;
  /** Why the history could not be read (the queue's runs are still listed). */
  history_error?: string;
}

/** GET /api/runs/{id} for a run in the history: the entry's fields and what it ran. */
export interface HistoryRecord extends Omit<HistoryEntry, 'error'> {
  /** The graph as it ran (graph.json, as the editor saves and opens it). */
  graph_snapshot?: GraphJson | null;
  config?: unknown;
  node_timings?: Record<string, number>;
  artifacts?: unknown;
  metrics?: HistoryEntry['final_metrics'];
  /** The error's message ("" when none). */
  error?: string | HistoryRunError | null;
  run_error?: HistoryRunError | null;
}

/** A series' points: [step, value], step an optimizer update or an epoch. */
export type SeriesPoints = [number, number][];

export interface SeriesResponse {
  run_id: string;
  series: Record<string, SeriesPoints>;
}

/** One setting that differs between compared runs (a run's field, or a node's param flattened). */
export interface CompareDifference {
  key: string;
  label: string;
  node?: string;
  node_type?: string;
  param?: string;
  /** One a run, in the order asked; null where a run lacks it. */
  values: unknown[];
}

export interface CompareMetric {
  key: string;
  label: string;
  values: (number | null)[];
}

/** GET /api/runs/compare?ids=… */
export interface CompareResponse {
  runs: HistoryEntry[];
  differences: CompareDifference[];
  metrics: CompareMetric[];
}

export interface HistoryQuery {
  graph?: string;
  status?: string;
  source?: string;
  limit?: number;
  cursor?: string | null;
}

/** At most this many runs are compared at once (the server's limit). */
export const COMPARE_MAX = 20;

const get = async <T>(url: string) => readAnswer<T>(await apiFetch(url, { cache: 'no-store' }));
const runUrl = (id: string) => `/api/runs/${encodeURIComponent(id)}`;

/** The query string of a history listing (empty values left out). */
export function historyQuery(q: HistoryQuery): string {
  const p = new URLSearchParams({ history: '1' });
  if (q.graph) p.set('graph', q.graph);
  if (q.status) p.set('status', q.status);
  if (q.source) p.set('source', q.source);
  if (q.limit !== undefined) p.set('limit', String(q.limit));
  if (q.cursor) p.set('cursor', q.cursor);
  return p.toString();
}

export const listHistory = (q: HistoryQuery) => get<HistoryPage>(`/api/runs?${historyQuery(q)}`);
export const getHistoryRecord = (id: string) => get<HistoryRecord>(runUrl(id));
export const getRunSeries = (id: string, names: readonly string[], points: number) =>
  get<SeriesResponse>(`${runUrl(id)}/series?names=${names.map(encodeURIComponent).join(',')}&points=${points}`);
export const compareRuns = (ids: readonly string[]) =>
  get<CompareResponse>(`/api/runs/compare?ids=${ids.map(encodeURIComponent).join(',')}`);
export const deleteHistoryRun = async (id: string) =>
  readAnswer<{ deleted: string }>(await apiFetch(runUrl(id), { method: 'DELETE' }));
