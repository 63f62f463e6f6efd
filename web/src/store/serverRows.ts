// The Server panel's rows, from /api/health and /api/runs as the server
// sends them: pure functions, so they are tested without a server.
import type { HealthResponse, RunDetail, RunListEntry } from '../api/server';

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** Bytes in binary units: "0 B", "512 B", "1.5 KiB", "12 MiB", "2.0 GiB". */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '?';
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    ++u;
  }
  if (u === 0) return `${v} B`;
  if (v < 9.95) return `${v.toFixed(1)} ${UNITS[u]}`;
  const whole = Math.round(v);
  if (whole >= 1024 && u < UNITS.length - 1) return `1.0 ${UNITS[u + 1]}`; // 1023.7 KiB reads as 1.0 MiB
  return `${whole} ${UNITS[u]}`;
}

/** A count with thousands separators: 1234567 → "1,234,567". */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** A duration in seconds: "0.4 s", "12 s", "3 min 05 s", "2 h 07 min". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** One of the server's three stores, as a bar. */
export interface StoreRow {
  /** The key in /api/health's `caches`. */
  name: 'run_output_store' | 'node_state_store' | 'execution_cache';
  usedBytes: number;
  /** The byte cap (for the execution cache: each connection's cap times the connections). */
  capBytes: number;
  entries: number;
  /** The entry cap, or null where there is none (the execution cache counts only bytes). */
  maxEntries: number | null;
  /** Connections holding an execution cache (the execution cache only). */
  instances?: number;
  /** Per connection (the execution cache only). */
  capEachBytes?: number;
}

export function storeRows(h: HealthResponse): StoreRow[] {
  const { run_output_store: outputs, node_state_store: state, execution_cache: cache } = h.caches;
  return [
    {
      name: 'execution_cache',
      usedBytes: cache.bytes,
      capBytes: cache.max_bytes_each * cache.instances,
      entries: cache.entries,
      maxEntries: null,
      instances: cache.instances,
      capEachBytes: cache.max_bytes_each,
    },
    { name: 'node_state_store', usedBytes: state.bytes, capBytes: state.max_bytes, entries: state.modules, maxEntries: state.max_modules },
    { name: 'run_output_store', usedBytes: outputs.bytes, capBytes: outputs.max_bytes, entries: outputs.runs, maxEntries: outputs.max_runs },
  ];
}

/** The fraction of the bar to fill, 0 to 1 (0 for no cap). */
export function fillFraction(used: number, cap: number): number {
  if (!(cap > 0)) return 0;
  return Math.min(1, Math.max(0, used / cap));
}

export interface QueueRow {
  /** The worker's name: the device's own name unless `--worker` named it. */
  worker: string;
  devices: string[];
  running: string | null;
  queued: number;
}

export function queueRows(h: HealthResponse): QueueRow[] {
  return Object.entries(h.queues)
    .map(([worker, q]) => ({ worker, devices: q.devices, running: q.running, queued: q.queued }))
    .sort((a, b) => a.worker.localeCompare(b.worker, 'en', { numeric: true }));
}

const FINISHED = new Set(['completed', 'failed', 'stopped']);
export const isFinished = (status: string) => FINISHED.has(status);

export interface RunRow {
  id: string;
  /** The saved graph's name for a headless run; null when the server does not say (an editor's run). */
  graph: string | null;
  device: string;
  worker: string;
  status: string;
  /** Runs ahead of it (queued runs). */
  position: number;
  /** Running time once finished, from the server; null before. */
  seconds: number | null;
  /** Why it failed, when the server says. */
  error: string | null;
  /** Stop applies (queued or running). */
  stoppable: boolean;
}

/** The numeric part of "run-12", for ordering; runs are numbered as submitted. */
function runNumber(id: string): number {
  const m = /(\d+)$/.exec(id);
  return m ? Number(m[1]) : -1;
}

/** A run's detail, with the list's status for that run when it was asked for. */
export type KnownDetail = RunDetail & { seenAs: string };

/** The run list, newest first, with what /api/runs/{id} added for the runs it was asked about. */
export function runRows(runs: RunListEntry[], details: Record<string, KnownDetail | undefined>): RunRow[] {
  return runs
    .map((r) => {
      const d = details[r.run_id];
      // A detail asked for once the queue had the run finished holds its final time and error.
      const final = d !== undefined && isFinished(r.status) && d.seenAs === r.status;
      return {
        id: r.run_id,
        graph: d?.graph ?? null,
        device: r.device,
        worker: r.worker,
        status: r.status,
        position: r.position,
        seconds: final ? d.seconds : null,
        error: final ? (d.error?.message ?? null) : null,
        stoppable: r.status === 'queued' || r.status === 'running',
      };
    })
    .sort((a, b) => runNumber(b.id) - runNumber(a.id) || b.id.localeCompare(a.id));
}

/**
 * The runs whose details (graph, duration, error) should be asked for now:
 * among the newest `limit`, those never asked about and those whose status
 * in the list changed since (a finished run's detail does not change).
 */
export function runsNeedingDetail(
  runs: RunListEntry[],
  details: Record<string, KnownDetail | undefined>,
  limit: number,
): string[] {
  return runRows(runs, {})
    .slice(0, limit)
    .filter((r) => details[r.id]?.seenAs !== r.status)
    .map((r) => r.id);
}
