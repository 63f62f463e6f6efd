// Every HTTP route the editor uses. Components never call these: the store does.
import { apiFetch } from './auth';
import type {
  DevicesResponse,
  ExampleEntry,
  GraphJson,
  ModelFileEntry,
  NodeDefinition,
  PlanOptions,
  PlanResponse,
  SavedGraphEntry,
  TypesResponse,
  ValidateResponse,
} from './types';

/** An HTTP answer that was not 2xx, with the server's `detail` when it gave one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** An answer's JSON, or an ApiError with the server's reason (its `detail`, else the text it sent). */
export function parseAnswer<T>(status: number, text: string): T {
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  if (status < 200 || status > 299) {
    const detail = (body as { detail?: unknown } | null)?.detail;
    const message = typeof detail === 'string' ? detail : typeof body === 'string' && body ? body : `HTTP ${status}`;
    throw new ApiError(status, message, body);
  }
  return body as T;
}

/** A fetch response read as parseAnswer reads it. */
export const readAnswer = async <T>(res: Response): Promise<T> => parseAnswer<T>(res.status, await res.text());
const json = readAnswer;

const get = async <T>(url: string) => json<T>(await apiFetch(url));
const post = async <T>(url: string, body: unknown) =>
  json<T>(
    await apiFetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );

export const listNodes = () => get<NodeDefinition[]>('/api/nodes');
export const listDevices = () => get<DevicesResponse>('/api/system/devices');
export const listExamples = () => get<ExampleEntry[]>('/api/examples/list');
export const loadExample = (path: string) =>
  get<GraphJson>(`/api/examples/load?path=${encodeURIComponent(path)}`);
export const listGraphs = () => get<SavedGraphEntry[]>('/api/graph/list');
export const loadGraph = (name: string) => get<GraphJson>(`/api/graph/load/${encodeURIComponent(name)}`);
export const listModels = () => get<ModelFileEntry[]>('/api/models');
export const validateGraph = (graph: GraphJson) => post<ValidateResponse>('/api/graph/validate', graph);
/**
 * Plans each TrainingLoop's memory (the server trains a few steps to measure, so it takes seconds):
 * the graph as validate takes it, with the planner's options beside it under `plan_options`.
 */
export const planGraph = (graph: GraphJson, options: PlanOptions) =>
  post<PlanResponse>('/api/graph/plan', { ...graph, plan_options: options });

/** The type rules, or null when this server does not have GET /api/types yet. */
export async function getTypes(): Promise<TypesResponse | null> {
  const res = await apiFetch('/api/types');
  if (res.status === 404) return null;
  return json<TypesResponse>(res);
}

export interface SaveResult {
  message: string;
  path: string;
  file: string;
}

/**
 * Saves under the graph's name. With `overwrite: false` an existing file is
 * refused with 409 ({detail: {error: "graph_exists", file, name}}).
 */
export const saveGraph = (graph: GraphJson, overwrite: boolean) =>
  post<SaveResult>('/api/graph/save', overwrite ? graph : { ...graph, overwrite: false });

/** A run as /api/runs/{id} reports it (status: queued, running, completed, failed, stopped). */
export interface RunRecord {
  run_id: string;
  status: string;
  error?: unknown;
}

export async function getRun(id: string): Promise<RunRecord> {
  return get<RunRecord>(`/api/runs/${encodeURIComponent(id)}`);
}
