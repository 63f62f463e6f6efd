// The Runs panel's state: the run history as GET /api/runs?history=1 last
// listed it (this graph's runs or all, by status), polled while the panel is
// open (every 2 s while a run is under way, so the editor's own run shows
// live; every 10 s otherwise) and not at all while it is closed; the runs
// selected for comparing, what /api/runs/compare said of them and their
// series; Delete. Opening a run's snapshot is editor.ts's (it spans stores).
import { create } from 'zustand';
import {
  COMPARE_MAX,
  compareRuns,
  deleteHistoryRun,
  getRunSeries,
  listHistory,
  type CompareResponse,
  type HistoryEntry,
  type SeriesPoints,
} from '../api/runs';
import { t } from '../i18n';
import { useDocument } from './document';
import { isActive, mergeEntries, nextSort, type Sort, type SortKey } from './historyRows';
import { describeError } from './messages';
import { createPoller } from './poller';
import { useRunSession } from './runSession';

/** Polling while a run is queued or running (the editor's or one listed), and otherwise. */
export const POLL_ACTIVE_MS = 2000;
export const POLL_IDLE_MS = 10_000;
/** Runs a page asks for (Load more asks for as many again). */
export const PAGE = 50;
/** The most one listing may ask for (the server's limit). */
export const LIMIT_MAX = 1000;
/** Points a compared series is thinned to. */
export const SERIES_POINTS = 500;
/** The series the compare view draws (per epoch: its loss, validation loss and accuracy, learning rate). */
export const COMPARE_SERIES = ['epoch_loss', 'val_loss', 'val_accuracy', 'epoch_lr'] as const;

export type RunScope = 'graph' | 'all';

export interface RunsNotice {
  level: 'info' | 'error';
  text: string;
}

/** A run's series as last fetched; `final` once fetched after the run ended (never asked for again). */
export interface FetchedSeries {
  series: Record<string, SeriesPoints>;
  final: boolean;
}

interface RunHistoryData {
  open: boolean;
  /** This graph's runs (the shown tab's graph name) or every graph's. */
  scope: RunScope;
  /** '' for any status. */
  status: string;
  sort: Sort;
  /** As the server listed them: the queue's runs first, then the history's, newest first. */
  entries: HistoryEntry[];
  nextCursor: string | null;
  /** How many runs each poll asks for: a page more after each Load more, so every listed run stays current. */
  limit: number;
  /** The graph `entries` were listed for (null: every graph). */
  listedFor: string | null;
  /** Nothing answered yet for the filters now set. */
  loading: boolean;
  loadingMore: boolean;
  /** Why the last listing failed; null when it was answered. */
  error: string | null;
  /** Why the server could not read its history (it still listed its queue). */
  historyError: string | null;
  answeredAt: number | null;
  /** Run ids ticked for comparing, in the order ticked (their colours follow it). */
  selected: string[];
  /** What /api/runs/compare said of `compareKey`'s runs. */
  compare: CompareResponse | null;
  /** The selected ids (joined by commas) `compare` is for. */
  compareKey: string;
  compareError: string | null;
  comparing: boolean;
  series: Record<string, FetchedSeries>;
  /** The outcome of the last Delete, Open, Re-run or Load more. */
  notice: RunsNotice | null;
}

export interface RunHistoryState extends RunHistoryData {
  setOpen(open: boolean): void;
  setScope(scope: RunScope): void;
  setStatus(status: string): void;
  /** A click on a column's header: sorts by it, or the other way round when it already does. */
  sortBy(key: SortKey): void;
  refresh(): Promise<void>;
  loadMore(): Promise<void>;
  toggleSelected(id: string): void;
  clearSelected(): void;
  /** Asks /api/runs/compare and the series again where they may have changed (or all, with `force`). */
  refreshCompare(force?: boolean): Promise<void>;
  deleteRun(id: string): Promise<void>;
  /** The shown graph may have changed (another tab, a rename): this graph's runs are asked for again if so. */
  graphChanged(): void;
  say(notice: RunsNotice | null): void;
}

export const initialRunHistory = (): RunHistoryData => ({
  open: false,
  scope: 'graph',
  status: '',
  sort: { key: 'when', dir: 'desc' },
  entries: [],
  nextCursor: null,
  limit: PAGE,
  listedFor: null,
  loading: false,
  loadingMore: false,
  error: null,
  historyError: null,
  answeredAt: null,
  selected: [],
  compare: null,
  compareKey: '',
  compareError: null,
  comparing: false,
  series: {},
  notice: null,
});

/** The graph "this graph" means: the shown tab's name (null, every graph, for a graph with no name). */
export function shownGraphName(): string | null {
  return useDocument.getState().meta.name.trim() || null;
}

/** The graph name of a run this editor started (any tab), by the server's run id; null when none did. */
export function ownRunGraph(runId: string): string | null {
  const runs = useRunSession.getState().runs;
  const doc = useDocument.getState();
  for (const [tab, run] of Object.entries(runs))
    if (run.serverRunId === runId) return doc.docOf(Number(tab))?.meta.name || null;
  return null;
}

/** Whether any tab of this editor has a run under way. */
const editorRunning = () => Object.values(useRunSession.getState().runs).some((r) => r.phase !== 'idle');

export const useRunHistory = create<RunHistoryState>()((set, get) => {
  // Bumped when the filters change: a listing asked for under the old ones is dropped.
  let filters = 0;
  const query = () => {
    const { scope, status } = get();
    return { graph: scope === 'graph' ? (shownGraphName() ?? undefined) : undefined, status: status || undefined };
  };
  const anyActive = () => editorRunning() || get().entries.some((e) => isActive(e.status));
  const poller = createPoller(() => get().refresh(), () => (anyActive() ? POLL_ACTIVE_MS : POLL_IDLE_MS));
  /** The filters changed: the list starts again from its first page. */
  const refilter = () => {
    ++filters;
    set({ entries: [], nextCursor: null, limit: PAGE, listedFor: query().graph ?? null, loading: true, error: null, historyError: null });
    if (get().open) {
      poller.stop();
      poller.start();
    }
  };
  /** Whether the runs listed are another graph's than "this graph" now is. */
  const otherGraph = () => get().scope === 'graph' && (query().graph ?? null) !== get().listedFor;
  const statusOf = (id: string): string | undefined =>
    get().entries.find((e) => e.run_id === id)?.status ?? get().compare?.runs.find((e) => e.run_id === id)?.status;

  return {
    ...initialRunHistory(),

    setOpen(open) {
      if (open === get().open) return;
      set({ open, notice: null });
      if (!open) return poller.stop();
      if (otherGraph()) refilter(); // another tab is shown since it closed
      else if (get().entries.length === 0) set({ loading: true });
      poller.start();
    },

    setScope(scope) {
      if (scope === get().scope) return;
      set({ scope });
      refilter();
    },

    setStatus(status) {
      if (status === get().status) return;
      set({ status });
      refilter();
    },

    sortBy(key) {
      set((s) => ({ sort: nextSort(s.sort, key) }));
    },

    graphChanged() {
      if (otherGraph()) refilter();
    },

    async refresh() {
      const asked = filters;
      try {
        const page = await listHistory({ ...query(), limit: get().limit });
        if (asked !== filters) return;
        set({
          entries: page.runs,
          nextCursor: page.next_cursor,
          historyError: page.history_error ?? null,
          error: null,
          loading: false,
          answeredAt: Date.now(),
        });
      } catch (e) {
        if (asked === filters) set({ error: describeError(e), loading: false });
        return;
      }
      await get().refreshCompare();
    },

    async loadMore() {
      const { nextCursor, loadingMore } = get();
      if (!nextCursor || loadingMore) return;
      const asked = filters;
      set({ loadingMore: true });
      try {
        const page = await listHistory({ ...query(), limit: PAGE, cursor: nextCursor });
        if (asked !== filters) return;
        set((s) => ({
          entries: mergeEntries(s.entries, page.runs),
          nextCursor: page.next_cursor,
          limit: Math.min(LIMIT_MAX, s.limit + PAGE),
        }));
      } catch (e) {
        set({ notice: { level: 'error', text: t('runs.moreFailed', { error: describeError(e) }) } });
      } finally {
        set({ loadingMore: false });
      }
    },

    toggleSelected(id) {
      const { selected } = get();
      if (selected.includes(id)) set({ selected: selected.filter((x) => x !== id) });
      else if (selected.length >= COMPARE_MAX) {
        set({ notice: { level: 'error', text: t('runs.selectedMost', { count: COMPARE_MAX }) } });
        return;
      } else set({ selected: [...selected, id] });
      void get().refreshCompare();
    },

    clearSelected() {
      set({ selected: [], compare: null, compareKey: '', compareError: null });
    },

    async refreshCompare(force = false) {
      const ids = get().selected;
      const key = ids.join(',');
      if (ids.length < 2) {
        if (get().compare || get().compareError) set({ compare: null, compareKey: '', compareError: null });
        return;
      }
      // Runs still under way change: their comparison and series are asked for again on each poll.
      const changing = ids.some((id) => isActive(statusOf(id) ?? '')) || (get().compare?.runs ?? []).some((r) => isActive(r.status));
      const askCompare = force || key !== get().compareKey || changing || get().compareError !== null;
      const askSeries = ids.filter((id) => force || !get().series[id]?.final);
      if (!askCompare && askSeries.length === 0) return;
      if (askCompare) set({ comparing: true });
      const compared = askCompare
        ? compareRuns(ids).then(
            (c) => {
              if (get().selected.join(',') === key) set({ compare: c, compareKey: key, compareError: null });
            },
            (e: unknown) => {
              if (get().selected.join(',') === key) set({ compareError: describeError(e), compareKey: key });
            },
          )
        : Promise.resolve();
      const fetched = askSeries.map((id) => {
        const ended = !isActive(statusOf(id) ?? 'running');
        return getRunSeries(id, COMPARE_SERIES, SERIES_POINTS).then(
          (r) => set((s) => ({ series: { ...s.series, [id]: { series: r.series, final: ended } } })),
          () => undefined, // a run deleted meantime or not in the history: no curves; the comparison says why
        );
      });
      await Promise.all([compared, ...fetched]);
      if (askCompare) set({ comparing: false });
    },

    async deleteRun(id) {
      try {
        await deleteHistoryRun(id);
        set((s) => {
          const series = { ...s.series };
          delete series[id];
          return {
            entries: s.entries.filter((e) => e.run_id !== id),
            selected: s.selected.filter((x) => x !== id),
            series,
            notice: { level: 'info', text: t('runs.deleted', { id }) },
          };
        });
      } catch (e) {
        set({ notice: { level: 'error', text: t('runs.deleteFailed', { id, error: describeError(e) }) } });
      }
      await get().refresh();
    },

    say(notice) {
      set({ notice });
    },
  };
});
