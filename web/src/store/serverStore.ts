// The Server panel's state: what /api/health, /api/runs and the node state
// store last said, polled every 2 s while the panel is open and not at all
// while it is closed. A failed poll keeps the last answer but says so.
import { create } from 'zustand';
import {
  getHealth,
  getRunDetail,
  listRuns,
  resetGraphState,
  stateOfGraph,
  stateTotal,
  stopServerRun,
  type HealthResponse,
  type RunListEntry,
  type StateListGraph,
} from '../api/server';
import { t } from '../i18n';
import { runsNeedingDetail, type KnownDetail } from './serverRows';
import { useDocument } from './document';
import { createPoller } from './poller';

export const POLL_MS = 2000;
/** Runs shown (and asked about) at most: the server keeps up to 200 finished ones. */
export const RUNS_SHOWN = 50;

export interface ServerNotice {
  level: 'info' | 'error';
  text: string;
}

export interface ServerState {
  open: boolean;
  health: HealthResponse | null;
  runs: RunListEntry[];
  details: Record<string, KnownDetail>;
  /** Modules in the node state store, all graphs together. */
  stateTotal: number | null;
  /** The open graph's modules in the node state store (its scope is the graph's name, as the editor's runs send it). */
  graphState: StateListGraph | null;
  /** Why the last poll failed; null when it was answered. */
  error: string | null;
  /** When the server last answered (ms since 1970). */
  answeredAt: number | null;
  /** The outcome of the last Stop or Reset. */
  notice: ServerNotice | null;

  setOpen(open: boolean): void;
  refresh(): Promise<void>;
  stopRun(id: string): Promise<void>;
  resetGraphState(): Promise<void>;
}

/** The state scope the editor's runs of the open graph use (its execute message's graph_id). */
export function openGraphStateId(): string {
  return useDocument.getState().meta.name || 'editor';
}

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e));

export const useServer = create<ServerState>()((set, get) => {
  const poller = createPoller(() => get().refresh(), POLL_MS);
  return {
    open: false,
    health: null,
    runs: [],
    details: {},
    stateTotal: null,
    graphState: null,
    error: null,
    answeredAt: null,
    notice: null,

    setOpen(open) {
      if (open === get().open) return;
      set({ open, notice: null });
      if (open) poller.start();
      else poller.stop();
    },

    async refresh() {
      try {
        const graphId = openGraphStateId();
        const [health, runs, total, graphState] = await Promise.all([
          getHealth(),
          listRuns(),
          stateTotal(),
          stateOfGraph(graphId),
        ]);
        const known = get().details;
        const ask = runsNeedingDetail(runs, known, RUNS_SHOWN);
        const asked = await Promise.all(
          ask.map((id) =>
            getRunDetail(id).then(
              (d) => d,
              () => null, // forgotten meanwhile: the next list drops it too
            ),
          ),
        );
        const listed = new Set(runs.map((r) => r.run_id));
        const details: Record<string, KnownDetail> = {};
        for (const [id, d] of Object.entries(known)) if (listed.has(id)) details[id] = d;
        asked.forEach((d, i) => {
          const seenAs = runs.find((r) => r.run_id === ask[i])?.status;
          if (d && seenAs) details[d.run_id] = { ...d, seenAs };
        });
        set({ health, runs, details, stateTotal: total.total, graphState, error: null, answeredAt: Date.now() });
      } catch (e) {
        set({ error: describe(e) });
      }
    },

    async stopRun(id) {
      try {
        const r = await stopServerRun(id);
        set({ notice: { level: 'info', text: r.stopping ? t('server.stopAsked', { id }) : t('server.stopNothing', { id }) } });
      } catch (e) {
        set({ notice: { level: 'error', text: t('server.stopFailed', { id, error: describe(e) }) } });
      }
      await get().refresh();
    },

    async resetGraphState() {
      const graphId = openGraphStateId();
      try {
        const r = await resetGraphState(graphId);
        set({ notice: { level: 'info', text: t('server.resetDone', { count: r.evicted, graph: graphId }) } });
      } catch (e) {
        set({ notice: { level: 'error', text: t('server.resetFailed', { error: describe(e) }) } });
      }
      await get().refresh();
    },
  };
});
