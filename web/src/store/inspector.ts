// The inspector's store (its views are in src/inspector/): whether runs
// record their outputs, which run did, and what was fetched of it (lazily:
// the list on the first hover or inspection, each port when it is shown).
import { create } from 'zustand';
import { ApiError } from '../api/rest';
import { deleteRunOutputs, fetchOutput, listRunOutputs, type OutputData, type RunOutputRef } from '../api/outputs';

const RECORD_KEY = 'codefy.recordOutputs';

export type Loaded<T> = T | 'loading' | { error: string };

export const isLoaded = <T extends object>(x: Loaded<T> | undefined): x is T =>
  x !== undefined && x !== 'loading' && !('error' in x && Object.keys(x).length === 1);

export interface PortRef {
  nodeId: string;
  port: string;
}

interface InspectorState {
  /** Whether the next runs record their outputs (the toolbar's "Record outputs"). */
  record: boolean;
  /** The editor run (its client run_id) that asked the server to record its outputs. */
  recordedRun: string | null;
  /** GET /api/execution/outputs/{run}, by run id. */
  lists: Record<string, Loaded<RunOutputRef[]>>;
  /** GET …/{node}/{port}?slice=…, by outputKey(). */
  outputs: Record<string, Loaded<OutputData>>;
  /** The port the side panel's Inspector shows. */
  selected: PortRef | null;
  /** For tensors of more than two dimensions: the index of each leading dimension. */
  leading: number[];

  setRecord(on: boolean): void;
  loadList(runId: string): void;
  loadOutput(runId: string, ref: PortRef, opts: { slice: string; maxElements?: number }): void;
  inspect(ref: PortRef | null): void;
  setLeading(dim: number, index: number): void;
}

export const outputKey = (runId: string, ref: PortRef, slice: string) => `${runId}\n${ref.nodeId}\n${ref.port}\n${slice}`;

function remembered(): boolean {
  try {
    return globalThis.localStorage?.getItem(RECORD_KEY) === 'true';
  } catch {
    return false;
  }
}

const describe = (e: unknown) => (e instanceof ApiError ? `${e.message} (HTTP ${e.status})` : e instanceof Error ? e.message : String(e));

export const useInspector = create<InspectorState>((set, get) => ({
  record: remembered(),
  recordedRun: null,
  lists: {},
  outputs: {},
  selected: null,
  leading: [],

  setRecord(on) {
    set({ record: on });
    try {
      globalThis.localStorage?.setItem(RECORD_KEY, on ? 'true' : 'false');
    } catch {
      // Storage refused: the choice lasts for this page.
    }
  },

  loadList(runId) {
    if (get().lists[runId] !== undefined) return;
    set((s) => ({ lists: { ...s.lists, [runId]: 'loading' } }));
    listRunOutputs(runId).then(
      (rows) => set((s) => ({ lists: { ...s.lists, [runId]: rows } })),
      (e: unknown) => set((s) => ({ lists: { ...s.lists, [runId]: { error: describe(e) } } })),
    );
  },

  loadOutput(runId, ref, opts) {
    const key = outputKey(runId, ref, opts.slice);
    if (get().outputs[key] !== undefined) return;
    set((s) => ({ outputs: { ...s.outputs, [key]: 'loading' } }));
    fetchOutput(runId, ref.nodeId, ref.port, opts).then(
      (data) => set((s) => ({ outputs: { ...s.outputs, [key]: data } })),
      (e: unknown) => set((s) => ({ outputs: { ...s.outputs, [key]: { error: describe(e) } } })),
    );
  },

  inspect(ref) {
    set({ selected: ref, leading: [] });
  },

  setLeading(dim, index) {
    set((s) => {
      const leading = [...s.leading];
      leading[dim] = index;
      return { leading };
    });
  },
}));

/**
 * For the execute message of run `runId`: whether to record its outputs. When
 * it records, the inspector follows this run and the server forgets the
 * previous recorded run's outputs.
 */
export function recordOutputsFor(runId: string): boolean {
  const s = useInspector.getState();
  if (!s.record) return false;
  const previous = s.recordedRun;
  if (previous && previous !== runId) void deleteRunOutputs(previous).catch(() => undefined);
  useInspector.setState({ recordedRun: runId, lists: {}, outputs: {}, leading: [] });
  return true;
}

export function resetInspectorForTests(): void {
  useInspector.setState({ record: false, recordedRun: null, lists: {}, outputs: {}, selected: null, leading: [] });
}
