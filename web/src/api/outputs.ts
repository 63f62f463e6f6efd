// The inspector's routes: the outputs a run recorded when its execute message
// said `record_outputs: true` (names as in CodefyUI's api/executionOutputs.ts).
import { apiFetch } from './auth';
import { readAnswer as read } from './rest';

/** One recorded output, as GET /api/execution/outputs/{run_id} lists it. */
export interface RunOutputRef {
  node_id: string;
  port: string;
  /** tensor, scalar, string, list, model, dataset, dataloader, optimizer, loss_fn, scheduler, any… */
  type: string;
  /** A tensor's shape; null for other values. */
  full_shape: number[] | null;
}

/** Nested lists of numbers (or booleans; null where a value is NaN or infinite). */
export type Nested = number | boolean | null | Nested[];

/** A tensor output (or a slice of it), as GET /api/execution/outputs/{run_id}/{node_id}/{port} gives it. */
export interface TensorOutput {
  type: 'tensor';
  full_shape: number[];
  /** PyTorch's name, e.g. torch.float32. */
  dtype: string;
  slice: string;
  sliced_shape: number[];
  values: Nested;
  truncated: boolean;
  /** Of the sliced values; absent for booleans and empty slices. */
  min?: number | null;
  max?: number | null;
  mean?: number | null;
  std?: number | null;
  run_id?: string;
  node_id?: string;
  port?: string;
}

/** Any other output: its summary (class, parameters, value, samples…). */
export interface OtherOutput {
  type: string;
  [key: string]: unknown;
}

export type OutputData = TensorOutput | OtherOutput;

export const isTensorOutput = (d: OutputData): d is TensorOutput => d.type === 'tensor' && 'full_shape' in d;


const base = (runId: string) => `/api/execution/outputs/${encodeURIComponent(runId)}`;

/** Every output the run recorded; 404 when the server has none for it (not recorded, failed, or evicted). */
export async function listRunOutputs(runId: string): Promise<RunOutputRef[]> {
  return read<RunOutputRef[]>(await apiFetch(base(runId)));
}

/** One output: a tensor's values under `slice` (numpy-like, e.g. "0,:8,:8") with their min/max/mean, or a summary. */
export async function fetchOutput(
  runId: string,
  nodeId: string,
  port: string,
  opts: { slice?: string; maxElements?: number } = {},
): Promise<OutputData> {
  const q = new URLSearchParams();
  if (opts.slice) q.set('slice', opts.slice);
  if (opts.maxElements !== undefined) q.set('max_elements', String(opts.maxElements));
  const qs = q.toString();
  const url = `${base(runId)}/${encodeURIComponent(nodeId)}/${encodeURIComponent(port)}${qs ? `?${qs}` : ''}`;
  return read<OutputData>(await apiFetch(url));
}

/** Forgets a run's recorded outputs on the server. */
export async function deleteRunOutputs(runId: string): Promise<void> {
  await read<unknown>(await apiFetch(base(runId), { method: 'DELETE' }));
}
