// The server's own state (health, run queues, the node state store) and the
// model file routes. Components never call these: the server and model
// stores do (src/store/serverStore.ts, src/store/modelFilesStore.ts).
import { apiFetch, forgetToken, sessionToken } from './auth';
import { parseAnswer, readAnswer } from './rest';

/** GET /api/health: the three stores and the queue of each worker. */
export interface HealthResponse {
  status: string;
  version: string;
  boot_id: string;
  nodes_loaded: number;
  /** By worker name (a device's own name unless `--worker` named it). */
  queues: Record<string, { devices: string[]; running: string | null; queued: number }>;
  caches: {
    /** One cache per editor connection, each capped at max_bytes_each. */
    execution_cache: { instances: number; entries: number; bytes: number; max_bytes_each: number };
    node_state_store: { modules: number; max_modules: number; bytes: number; max_bytes: number };
    run_output_store: { runs: number; max_runs: number; bytes: number; max_bytes: number };
  };
}

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'stopped';

/** One entry of GET /api/runs' `runs` (oldest first). */
export interface RunListEntry {
  run_id: string;
  device: string;
  worker: string;
  status: RunStatus | string;
  /** Runs ahead of it in its queue (0 unless queued). */
  position: number;
}

/** GET /api/runs/{id}: `graph`, `error` and `metrics` only for headless runs (POST /api/graph/run). */
export interface RunDetail {
  run_id: string;
  device: string;
  worker: string;
  status: RunStatus | string;
  queue_position: number;
  /** Running time, once finished (0 before). */
  seconds: number;
  graph?: string;
  error?: { code?: string; message?: string } | null;
}

export interface StateListTotal {
  total: number;
}
export interface StateListGraph {
  graph_id: string;
  count: number;
  node_ids: string[];
}
export interface StateResetResult {
  graph_id: string;
  scope: string;
  evicted: number;
}

const answer = readAnswer;

const get = async <T>(url: string) => answer<T>(await apiFetch(url, { cache: 'no-store' }));
const post = async <T>(url: string, body?: unknown) =>
  answer<T>(
    await apiFetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: body === undefined ? '{}' : JSON.stringify(body),
    }),
  );

export const getHealth = () => get<HealthResponse>('/api/health');
export const listRuns = async () => (await get<{ runs: RunListEntry[] }>('/api/runs')).runs;
export const getRunDetail = (id: string) => get<RunDetail>(`/api/runs/${encodeURIComponent(id)}`);
export const stopServerRun = (id: string) =>
  post<{ run_id: string; stopping: boolean }>(`/api/runs/${encodeURIComponent(id)}/stop`);
export const stateTotal = () => get<StateListTotal>('/api/execution/state/list');
export const stateOfGraph = (graphId: string) =>
  get<StateListGraph>(`/api/execution/state/list?graph_id=${encodeURIComponent(graphId)}`);
export const resetGraphState = (graphId: string) =>
  post<StateResetResult>('/api/execution/state/reset', { graph_id: graphId });

// ── model files ──

/** Where a model file is downloaded from (a plain GET: no token needed). */
export const modelDownloadUrl = (name: string) =>
  `/api/models/download/${name.split('/').map(encodeURIComponent).join('/')}`;

export const deleteModel = async (name: string) =>
  answer<{ message: string }>(await apiFetch(`/api/models/${encodeURIComponent(name)}`, { method: 'DELETE' }));

/**
 * Uploads a model file (multipart field "file"), reporting the fraction
 * sent. XMLHttpRequest because fetch() cannot report upload progress. A
 * refusal rejects with the server's reason (its `detail`).
 */
export async function uploadModel(
  file: File,
  onProgress: (fraction: number) => void,
): Promise<{ filename: string; size: number }> {
  const send = (token: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', '/api/models/upload');
      xhr.setRequestHeader('X-CodefyUI-Token', token);
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable && e.total > 0) onProgress(e.loaded / e.total);
      };
      xhr.onload = () => resolve({ status: xhr.status, text: xhr.responseText });
      xhr.onerror = () => reject(new Error('the server did not answer'));
      xhr.onabort = () => reject(new Error('the upload was cancelled'));
      const form = new FormData();
      form.append('file', file, file.name);
      xhr.send(form);
    });
  let res = await send(await sessionToken());
  if (res.status === 403) {
    // A restarted server has a new token: ask again once (as apiFetch does).
    forgetToken();
    res = await send(await sessionToken());
  }
  return parseAnswer(res.status, res.text);
}
