// The Runs panel's pure parts (rows, sorting, filters, the compare tables,
// the overlaid series, the run colours) and its store against a stubbed fetch.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { historyQuery, type CompareResponse, type HistoryEntry } from '../src/api/runs';
import { COMPARE_KINDS, overlay, SERIES_OF } from '../src/charts/overlay';
import { runColor } from '../src/charts/runColors';
import { compareOptions, LOG_KINDS, logTickLabels } from '../src/charts/compareOptions';
import { cellOf, diffRows, metricRows, CELL_CHARS } from '../src/store/compareRows';
import { useDocument } from '../src/store/document';
import { resetEditorForTests, snapshotName } from '../src/store/editor';
import {
  finalMetric,
  formatWhen,
  historyRow,
  listed,
  mergeEntries,
  nextSort,
  passesFilter,
  shortRunId,
  sortRows,
  type HistoryRow,
} from '../src/store/historyRows';
import { createPoller } from '../src/store/poller';
import { COMPARE_SERIES, PAGE, POLL_ACTIVE_MS, POLL_IDLE_MS, useRunHistory } from '../src/store/runHistory';

const T0 = new Date(2026, 10, 1, 14, 3, 22).getTime() / 1000; // local time

/** A history entry as GET /api/runs?history=1 lists one. */
function entry(id: string, over: Partial<HistoryEntry> = {}): HistoryEntry {
  return {
    run_id: id,
    id,
    graph: 'Toy MLP',
    source: 'editor',
    status: 'completed',
    device: 'cpu',
    devices: ['cpu'],
    precision: 'fp32',
    precision_requested: 'auto',
    effective_batch: 32,
    started_at: T0,
    ended_at: T0 + 12,
    duration_s: 12,
    seconds: 12,
    error: null,
    peak_memory: { cpu: 3 * 1024 * 1024 },
    final_metrics: { train: { final_train_loss: 0.41, final_val_loss: 0.52, final_val_accuracy: 0.8125, val_accuracies: [0.5, 0.8125] } },
    from_history: true,
    ...over,
  };
}

describe('rows of the run history', () => {
  it('short ids: a queue’s id whole, a history id by its random tail', () => {
    expect(shortRunId('run-12')).toBe('run-12');
    expect(shortRunId('run-123456789')).toBe('run-123456789');
    expect(shortRunId('run-5c0ffe-12')).toBe('run-5c0ffe-12');
    expect(shortRunId('20261101-140322-3fa2b1')).toBe('3fa2b1');
    expect(shortRunId('a-very-long-id-without-hex-tail-zz')).toBe('-tail-zz');
  });

  it('a row: final loss and accuracy of the training node, the highest peak, the recorded duration', () => {
    const r = historyRow(entry('run-3', { peak_memory: { cpu: 100, 'cuda:0': 5000 } }), T0 * 1000);
    expect(r).toMatchObject({
      id: 'run-3',
      graph: 'Toy MLP',
      status: 'completed',
      precision: 'fp32',
      effectiveBatch: 32,
      finalLoss: 0.41,
      finalValLoss: 0.52,
      valAccuracy: 0.8125,
      duration: 12,
      peakBytes: 5000,
      active: false,
      inHistory: true,
    });
    expect(finalMetric({ print: { text: 'x' } as Record<string, unknown>, loop2: { final_train_loss: 1.5 } }, 'final_train_loss')).toBe(1.5);
    expect(finalMetric(null, 'final_train_loss')).toBeNull();
  });

  it('a running run is timed from its start; a queue’s run the history does not know has no history fields', () => {
    const running = historyRow(entry('run-4', { status: 'running', duration_s: 0, worker: 'cpu', position: 0 }), (T0 + 7.5) * 1000);
    expect(running).toMatchObject({ active: true, duration: 7.5 });
    const queued = historyRow({ run_id: 'run-5', device: 'cpu', worker: 'cpu', status: 'queued', position: 2 }, T0 * 1000, 'Mine');
    expect(queued).toMatchObject({ graph: 'Mine', startedAt: null, inHistory: false, active: true, position: 2, finalLoss: null, duration: null });
    // A failed run's error, whether the list gives the object or the record the message.
    expect(historyRow(entry('x', { status: 'failed', error: { kind: 'node_error', message: 'boom' } }), 0).error).toBe('boom');
    expect(historyRow(entry('x', { error: '' }), 0).error).toBeNull();
  });

  it('a later page adds only runs not listed yet', () => {
    const first = [entry('run-9', { status: 'running' }), entry('a'), entry('b')];
    expect(mergeEntries(first, [entry('run-9'), entry('c')]).map((e) => e.run_id)).toEqual(['run-9', 'a', 'b', 'c']);
  });

  it('lists the history’s runs and the queue’s under way, not a finished one the history does not have', () => {
    expect(listed(historyRow(entry('a'), 0))).toBe(true);
    expect(listed(historyRow({ run_id: 'run-5', status: 'running', worker: 'cpu', position: 0 }, 0))).toBe(true);
    expect(listed(historyRow({ run_id: 'run-6', status: 'completed', worker: 'cpu', position: 0 }, 0))).toBe(false);
  });

  it('filters by graph and status', () => {
    const r = historyRow(entry('a'), 0);
    expect(passesFilter(r, null, '')).toBe(true);
    expect(passesFilter(r, 'Toy MLP', 'completed')).toBe(true);
    expect(passesFilter(r, 'Iris', '')).toBe(false);
    expect(passesFilter(r, null, 'failed')).toBe(false);
  });

  it('the history query leaves out what is not set', () => {
    expect(historyQuery({ limit: 50 })).toBe('history=1&limit=50');
    expect(historyQuery({ graph: 'Toy MLP', status: 'failed', limit: 100, cursor: '1762000000.000000' })).toBe(
      'history=1&graph=Toy+MLP&status=failed&limit=100&cursor=1762000000.000000',
    );
  });

  it('when: the time today, the day this year, the date before', () => {
    const now = new Date(2026, 10, 1, 18, 0, 0).getTime();
    expect(formatWhen(T0, now)).toBe('14:03:22');
    expect(formatWhen(new Date(2026, 9, 31, 9, 5).getTime() / 1000, now)).toBe('10-31 09:05');
    expect(formatWhen(new Date(2025, 0, 2).getTime() / 1000, now)).toBe('2025-01-02');
    expect(formatWhen(null, now)).toBe('');
  });
});

describe('sorting', () => {
  const rows: HistoryRow[] = [
    historyRow(entry('a', { started_at: T0, final_metrics: { t: { final_train_loss: 0.3 } }, graph: 'beta' }), 0),
    historyRow(entry('b', { started_at: T0 + 60, final_metrics: null, graph: 'Alpha' }), 0),
    historyRow(entry('c', { started_at: T0 + 30, final_metrics: { t: { final_train_loss: 0.1 } }, graph: 'gamma' }), 0),
    historyRow({ run_id: 'run-7', status: 'queued', position: 0 }, 0),
  ];
  const ids = (key: Parameters<typeof sortRows>[1]) => sortRows(rows, key).map((r) => r.id);

  it('newest first by default, a queued run (not started) on top', () => {
    expect(ids({ key: 'when', dir: 'desc' })).toEqual(['run-7', 'b', 'c', 'a']);
    expect(ids({ key: 'when', dir: 'asc' })).toEqual(['a', 'c', 'b', 'run-7']);
  });

  it('runs without the value go last both ways', () => {
    expect(ids({ key: 'loss', dir: 'asc' })).toEqual(['c', 'a', 'run-7', 'b']);
    expect(ids({ key: 'loss', dir: 'desc' })).toEqual(['a', 'c', 'run-7', 'b']);
  });

  it('names without regard to case', () => {
    expect(ids({ key: 'graph', dir: 'asc' })).toEqual(['b', 'a', 'c', 'run-7']);
  });

  it('a header click sorts by it, a second one the other way; newest and best accuracy start descending', () => {
    expect(nextSort({ key: 'when', dir: 'desc' }, 'loss')).toEqual({ key: 'loss', dir: 'asc' });
    expect(nextSort({ key: 'loss', dir: 'asc' }, 'loss')).toEqual({ key: 'loss', dir: 'desc' });
    expect(nextSort({ key: 'loss', dir: 'asc' }, 'accuracy')).toEqual({ key: 'accuracy', dir: 'desc' });
  });
});

/** GET /api/runs/compare as the server answers it for two toy runs with different learning rates. */
const compared: CompareResponse = {
  runs: [entry('r1'), entry('r2')],
  differences: [
    { key: 'seed', label: 'seed', values: [1, 2] },
    { key: 'devices', label: 'devices', values: [['cpu'], ['cpu', 'cuda:0']] },
    { key: 'optimizer.params.lr', label: 'optimizer (Optimizer) lr', node: 'optimizer', node_type: 'Optimizer', param: 'lr', values: [0.05, 0.01] },
    { key: 'extra.type', label: 'extra type', node: 'extra', values: ['Print', null] },
    { key: 'mlp.params.layers', label: 'mlp (SequentialModel) layers', node: 'mlp', node_type: 'SequentialModel', param: 'layers', values: ['x'.repeat(100), 'y'] },
    { key: 'whatever', label: 'something new', values: [{ a: 1 }, null] },
  ],
  metrics: [
    { key: 'train.best_epoch', label: 'train.best_epoch', values: [20, 20] },
    { key: 'train.final_train_loss', label: 'train.final_train_loss', values: [0.41, 0.63] },
    { key: 'train.final_val_accuracy', label: 'train.final_val_accuracy', values: [0.8125, 0.9] },
    { key: 'duration_s', label: 'duration (s)', values: [12.4, 75] },
    { key: 'peak_memory.cpu', label: 'peak memory cpu', values: [3 * 1024 * 1024, null] },
  ],
};

describe('the compare tables', () => {
  it('a row a differing setting, a cell a run, saying what each is about', () => {
    const rows = diffRows(compared);
    expect(rows.map((r) => r.key)).toEqual(compared.differences.map((d) => d.key));
    expect(rows[0]!.what).toEqual({ kind: 'field', field: 'seed' });
    expect(rows[2]!.what).toEqual({ kind: 'param', node: 'optimizer', nodeType: 'Optimizer', param: 'lr' });
    expect(rows[2]!.cells.map((c) => c.text)).toEqual(['0.05', '0.01']);
    expect(rows[1]!.cells.map((c) => c.text)).toEqual(['cpu', 'cpu, cuda:0']);
    expect(rows[3]!.what).toEqual({ kind: 'nodeType', node: 'extra' });
    expect(rows[3]!.cells[1]).toEqual({ text: '', full: '', absent: true });
    expect(rows[5]!.what).toEqual({ kind: 'other', label: 'something new' });
    expect(rows[5]!.cells[0]!.text).toBe('{"a":1}');
  });

  it('a long value is cut in its cell and whole in its tooltip', () => {
    const c = cellOf('x'.repeat(100));
    expect(c.text).toHaveLength(CELL_CHARS);
    expect(c.text.endsWith('…')).toBe(true);
    expect(c.full).toHaveLength(100);
    expect(cellOf(false)).toEqual({ text: 'false', full: 'false', absent: false });
  });

  it('metrics: losses, accuracy, duration and peak first; the best loss and accuracy marked; units', () => {
    const rows = metricRows(compared);
    expect(rows.map((r) => r.key)).toEqual([
      'train.final_train_loss',
      'train.final_val_accuracy',
      'duration_s',
      'peak_memory.cpu',
      'train.best_epoch',
    ]);
    expect(rows.map((r) => r.primary)).toEqual([true, true, true, true, false]);
    const [loss, accuracy, duration, peak, epoch] = rows;
    expect(loss!.what).toEqual({ kind: 'metric', node: 'train', name: 'final_train_loss' });
    expect(loss!.cells).toEqual([
      { text: '0.41', best: true },
      { text: '0.63', best: false },
    ]);
    expect(accuracy!.cells.map((c) => [c.text, c.best])).toEqual([
      ['81.3%', false],
      ['90.0%', true],
    ]);
    expect(duration!.cells.map((c) => c.text)).toEqual(['12 s', '1 min 15 s']);
    expect(peak!.what).toEqual({ kind: 'peak', device: 'cpu' });
    expect(peak!.cells.map((c) => c.text)).toEqual(['3.0 MiB', '']);
    expect(epoch!.cells.every((c) => !c.best)).toBe(true); // the same in both: nothing is best
  });
});

describe('overlaid series', () => {
  it('one x axis, the union of the runs’ steps; a column a run with gaps', () => {
    const o = overlay([
      [
        [1, 2.0],
        [2, 1.5],
        [3, 1.2],
      ],
      [
        [2, 1.9],
        [4, 1.0],
      ],
      undefined,
    ]);
    expect(o.data).toEqual([
      [1, 2, 3, 4],
      [2.0, 1.5, 1.2, null],
      [null, 1.9, null, 1.0],
      [null, null, null, null],
    ]);
    expect(o.points).toBe(5);
    expect(o.drawn).toEqual([true, true, false]);
  });

  it('drops values that are not finite; an empty comparison is empty', () => {
    expect(overlay([[[1, Number.NaN]]]).data).toEqual([[], []]);
    expect(overlay([]).data).toEqual([[]]);
  });

  it('every chart draws a series the store fetches', () => {
    for (const k of COMPARE_KINDS) expect(COMPARE_SERIES).toContain(SERIES_OF[k]);
  });
});

describe('a compare chart’s options', () => {
  const lines = [0, 1, 10].map((i) => ({ label: `run-${i}`, color: runColor(i, 'dark') }));

  it('a line a run in its colour, dashed from the eleventh, no legend of its own', () => {
    const o = compareOptions('lr', 400, 200, { axis: '#999', grid: '#333' }, lines);
    expect(o.series.slice(1).map((s) => [s.label, s.stroke, s.dash])).toEqual([
      ['run-0', runColor(0, 'dark').stroke, undefined],
      ['run-1', runColor(1, 'dark').stroke, undefined],
      ['run-10', runColor(0, 'dark').stroke, [6, 4]],
    ]);
    expect(o.legend?.show).toBe(false);
    expect(o.scales?.y?.distr).toBeUndefined();
  });

  it('a loss falling twentyfold draws on a log scale, labelled by decade', () => {
    const o = compareOptions('epochLoss', 400, 200, { axis: '#999', grid: '#333' }, lines, true);
    expect(o.scales?.y?.distr).toBe(3);
    const values = o.axes![1]!.values as (u: unknown, splits: number[]) => string[];
    expect(values(null, [0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3])).toEqual(['0.01', '0.02', '', '0.05', '0.1', '0.2', '']);
    // Over more than two decades, the decades alone.
    expect(logTickLabels([0.001, 0.002, 0.01, 0.1, 0.5, 1])).toEqual(['0.001', '', '0.01', '0.1', '', '1']);
    expect(LOG_KINDS.has('valAccuracy')).toBe(false);
  });
});

describe('run colours', () => {
  it('ten distinct colours per theme, then the same ones dashed', () => {
    for (const theme of ['dark', 'light'] as const) {
      const first = Array.from({ length: 10 }, (_, i) => runColor(i, theme));
      expect(new Set(first.map((c) => c.stroke)).size).toBe(10);
      expect(first.every((c) => c.dash === null)).toBe(true);
      const all = Array.from({ length: 20 }, (_, i) => runColor(i, theme));
      expect(new Set(all.map((c) => `${c.stroke} ${String(c.dash)}`)).size).toBe(20);
      expect(runColor(10, theme).stroke).toBe(runColor(0, theme).stroke);
    }
    expect(runColor(0, 'dark').stroke).not.toBe(runColor(0, 'light').stroke);
  });
});

describe('a snapshot’s tab name', () => {
  it('"<graph> @ <short id>", never twice', () => {
    expect(snapshotName('Toy MLP', '20261101-140322-3fa2b1')).toBe('Toy MLP @ 3fa2b1');
    expect(snapshotName('Toy MLP @ 3fa2b1', 'run-4')).toBe('Toy MLP @ run-4');
    expect(snapshotName('', 'run-4')).toBe('Untitled graph @ run-4');
  });
});

describe('the poller with an interval asked each time', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('waits what the function says after each call', async () => {
    let calls = 0;
    let fast = true;
    const p = createPoller(async () => void ++calls, () => (fast ? 1000 : 5000));
    p.start();
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(2);
    fast = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(3); // the wait after call 2 was set while fast
    await vi.advanceTimersByTimeAsync(4999);
    expect(calls).toBe(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(4);
    p.stop();
  });
});

/** A fetch answering from a table of "METHOD url" (or url) → JSON, a Response, or a thrown error. */
function stubServer(routes: Record<string, unknown>) {
  const calls: string[] = [];
  const fetch = vi.fn(async (url: string, init?: RequestInit) => {
    const method = init?.method ?? 'GET';
    calls.push(`${method} ${url}`);
    const answer = `${method} ${url}` in routes ? routes[`${method} ${url}`] : routes[url];
    if (answer instanceof Error) throw answer;
    if (answer === undefined) return new Response(JSON.stringify({ detail: `Not Found: ${url}` }), { status: 404 });
    if (answer instanceof Response) return answer;
    return new Response(JSON.stringify(answer), { status: 200 });
  });
  vi.stubGlobal('fetch', fetch);
  return { calls, fetch };
}

const listUrl = (q: string) => `/api/runs?history=1${q}`;
const page = (runs: HistoryEntry[], next: string | null = null) => ({ runs, next_cursor: next });
const seriesOf = (id: string, lr: number) => ({
  run_id: id,
  series: {
    epoch_loss: [
      [1, 1.2],
      [2, 0.8],
    ],
    val_loss: [
      [1, 1.3],
      [2, 0.9],
    ],
    val_accuracy: [
      [1, 0.6],
      [2, 0.8],
    ],
    epoch_lr: [
      [1, lr],
      [2, lr],
    ],
  },
});
const SERIES_Q = '/series?names=epoch_loss,val_loss,val_accuracy,epoch_lr&points=500';

describe('the run history store', () => {
  beforeEach(() => {
    resetEditorForTests();
    useDocument.setState({ meta: { ...useDocument.getState().meta, name: 'Toy MLP' } });
    vi.useFakeTimers();
  });
  afterEach(() => {
    useRunHistory.getState().setOpen(false);
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it('asks for this graph’s runs while open, every 10 s, every 2 s while one runs, and not when closed', async () => {
    const { calls } = stubServer({ [listUrl('&graph=Toy+MLP&limit=50')]: page([entry('a'), entry('b')]) });
    useRunHistory.getState().setOpen(true);
    expect(useRunHistory.getState().loading).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(useRunHistory.getState().entries.map((e) => e.run_id)).toEqual(['a', 'b']);
    expect(useRunHistory.getState().loading).toBe(false);
    const lists = () => calls.filter((c) => c.startsWith('GET /api/runs?')).length;
    expect(lists()).toBe(1);
    await vi.advanceTimersByTimeAsync(POLL_ACTIVE_MS);
    expect(lists()).toBe(1); // nothing runs: the slow pace
    await vi.advanceTimersByTimeAsync(POLL_IDLE_MS - POLL_ACTIVE_MS);
    expect(lists()).toBe(2);
    // A run under way (the editor's, listed first by the queue): the fast pace.
    stubServer({ [listUrl('&graph=Toy+MLP&limit=50')]: page([entry('run-9', { status: 'running', worker: 'cpu' }), entry('a')]) });
    await vi.advanceTimersByTimeAsync(POLL_IDLE_MS);
    const { calls: later } = stubServer({ [listUrl('&graph=Toy+MLP&limit=50')]: page([entry('a')]) });
    await vi.advanceTimersByTimeAsync(POLL_ACTIVE_MS);
    expect(later).toHaveLength(1);
    useRunHistory.getState().setOpen(false);
    await vi.advanceTimersByTimeAsync(POLL_IDLE_MS * 3);
    expect(later).toHaveLength(1);
  });

  it('all graphs, a status, and Load more with the cursor; the next polls keep the loaded pages', async () => {
    const { calls } = stubServer({
      [listUrl('&limit=50')]: page([entry('a'), entry('b')], '1762000000.000000'),
      [listUrl('&status=failed&limit=50')]: page([entry('f', { status: 'failed' })]),
      [listUrl('&limit=50&cursor=1762000000.000000')]: page([entry('b'), entry('c')]),
      [listUrl('&limit=100')]: page([entry('a'), entry('b'), entry('c')]),
    });
    const s = useRunHistory.getState();
    s.setScope('all');
    s.setOpen(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(useRunHistory.getState().nextCursor).toBe('1762000000.000000');
    await useRunHistory.getState().loadMore();
    expect(useRunHistory.getState().entries.map((e) => e.run_id)).toEqual(['a', 'b', 'c']);
    expect(useRunHistory.getState().limit).toBe(2 * PAGE);
    expect(useRunHistory.getState().nextCursor).toBeNull();
    await vi.advanceTimersByTimeAsync(POLL_IDLE_MS);
    expect(calls).toContain(`GET ${listUrl('&limit=100')}`);
    expect(useRunHistory.getState().entries.map((e) => e.run_id)).toEqual(['a', 'b', 'c']);
    // A status filter starts from the first page again.
    useRunHistory.getState().setStatus('failed');
    expect(useRunHistory.getState().entries).toEqual([]);
    await vi.advanceTimersByTimeAsync(0);
    expect(useRunHistory.getState().entries.map((e) => e.run_id)).toEqual(['f']);
    expect(useRunHistory.getState().limit).toBe(PAGE);
  });

  it('a listing asked for under filters since changed is dropped', async () => {
    let answer: (r: Response) => void = () => undefined;
    const slow = new Promise<Response>((resolve) => (answer = resolve));
    vi.stubGlobal(
      'fetch',
      vi.fn(async (url: string) =>
        url === listUrl('&graph=Toy+MLP&limit=50') ? slow : new Response(JSON.stringify(page([entry('all-1')]))),
      ),
    );
    useRunHistory.getState().setOpen(true);
    useRunHistory.getState().setScope('all');
    await vi.advanceTimersByTimeAsync(0);
    expect(useRunHistory.getState().entries.map((e) => e.run_id)).toEqual(['all-1']);
    answer(new Response(JSON.stringify(page([entry('graph-1')]))));
    await vi.advanceTimersByTimeAsync(0);
    expect(useRunHistory.getState().entries.map((e) => e.run_id)).toEqual(['all-1']);
  });

  it('a failed listing says so and keeps the last runs', async () => {
    stubServer({ [listUrl('&graph=Toy+MLP&limit=50')]: page([entry('a')]) });
    useRunHistory.getState().setOpen(true);
    await vi.advanceTimersByTimeAsync(0);
    stubServer({ [listUrl('&graph=Toy+MLP&limit=50')]: new TypeError('Failed to fetch') });
    await vi.advanceTimersByTimeAsync(POLL_IDLE_MS);
    expect(useRunHistory.getState().error).toBe('Failed to fetch');
    expect(useRunHistory.getState().entries).toHaveLength(1);
    stubServer({ [listUrl('&graph=Toy+MLP&limit=50')]: { ...page([entry('a')]), history_error: 'database is locked' } });
    await vi.advanceTimersByTimeAsync(POLL_IDLE_MS);
    expect(useRunHistory.getState().error).toBeNull();
    expect(useRunHistory.getState().historyError).toBe('database is locked');
  });

  it('two ticked runs are compared, with their series; finished runs’ series are not asked for again', async () => {
    const { calls } = stubServer({
      [listUrl('&graph=Toy+MLP&limit=50')]: page([entry('r1'), entry('r2')]),
      '/api/runs/compare?ids=r1,r2': compared,
      [`/api/runs/r1${SERIES_Q}`]: seriesOf('r1', 0.05),
      [`/api/runs/r2${SERIES_Q}`]: seriesOf('r2', 0.01),
    });
    const s = useRunHistory.getState();
    s.setOpen(true);
    await vi.advanceTimersByTimeAsync(0);
    s.toggleSelected('r1');
    await vi.advanceTimersByTimeAsync(0);
    expect(useRunHistory.getState().compare).toBeNull(); // one run: nothing to compare
    s.toggleSelected('r2');
    await vi.advanceTimersByTimeAsync(0);
    const st = useRunHistory.getState();
    expect(st.selected).toEqual(['r1', 'r2']);
    expect(st.compareKey).toBe('r1,r2');
    expect(st.compare?.differences.some((d) => d.key === 'optimizer.params.lr')).toBe(true);
    expect(st.series.r2?.series.epoch_lr).toEqual([
      [1, 0.01],
      [2, 0.01],
    ]);
    expect(st.series.r1?.final).toBe(true);
    await vi.advanceTimersByTimeAsync(POLL_IDLE_MS);
    expect(calls.filter((c) => c.includes('/series')).length).toBe(2);
    expect(calls.filter((c) => c.includes('/compare')).length).toBe(1);
    // Unticking one leaves nothing to compare.
    s.toggleSelected('r1');
    await vi.advanceTimersByTimeAsync(0);
    expect(useRunHistory.getState().compare).toBeNull();
  });

  it('a running run’s comparison and series are asked for again on each poll', async () => {
    const { calls } = stubServer({
      [listUrl('&graph=Toy+MLP&limit=50')]: page([entry('run-9', { status: 'running' }), entry('r1')]),
      '/api/runs/compare?ids=run-9,r1': { ...compared, runs: [entry('run-9', { status: 'running' }), entry('r1')] },
      [`/api/runs/run-9${SERIES_Q}`]: seriesOf('run-9', 0.05),
      [`/api/runs/r1${SERIES_Q}`]: seriesOf('r1', 0.01),
    });
    useRunHistory.getState().setOpen(true);
    await vi.advanceTimersByTimeAsync(0);
    useRunHistory.getState().toggleSelected('run-9');
    useRunHistory.getState().toggleSelected('r1');
    await vi.advanceTimersByTimeAsync(0);
    expect(useRunHistory.getState().series['run-9']?.final).toBe(false);
    await vi.advanceTimersByTimeAsync(POLL_ACTIVE_MS);
    expect(calls.filter((c) => c.includes('/api/runs/run-9/series')).length).toBe(2);
    expect(calls.filter((c) => c.includes('/api/runs/r1/series')).length).toBe(1);
    expect(calls.filter((c) => c.includes('/compare')).length).toBeGreaterThanOrEqual(2);
  });

  it('at most twenty runs are ticked', () => {
    stubServer({});
    for (let i = 0; i < 21; i++) useRunHistory.getState().toggleSelected(`r${i}`);
    expect(useRunHistory.getState().selected).toHaveLength(20);
    expect(useRunHistory.getState().notice).toEqual({ level: 'error', text: 'At most 20 runs can be compared at once.' });
  });

  it('Delete sends the token, drops the run and its tick; a refusal (409) shows the server’s reason', async () => {
    const { calls, fetch } = stubServer({
      '/api/auth/bootstrap': { token: 'tok' },
      [listUrl('&graph=Toy+MLP&limit=50')]: page([entry('a'), entry('run-9', { status: 'running' })]),
      'DELETE /api/runs/a': { deleted: 'a' },
      'DELETE /api/runs/run-9': new Response(JSON.stringify({ detail: "Run 'run-9' is running: stop it first" }), { status: 409 }),
    });
    useRunHistory.setState({ entries: [entry('a')], selected: ['a'] });
    await useRunHistory.getState().deleteRun('a');
    expect(calls).toContain('DELETE /api/runs/a');
    const sent = fetch.mock.calls.find(([url, init]) => url === '/api/runs/a' && init?.method === 'DELETE')!;
    expect(new Headers(sent[1]!.headers).get('X-CodefyUI-Token')).toBe('tok');
    expect(useRunHistory.getState().selected).toEqual([]);
    expect(useRunHistory.getState().notice).toEqual({ level: 'info', text: 'Deleted a.' });
    await useRunHistory.getState().deleteRun('run-9');
    expect(useRunHistory.getState().notice).toEqual({
      level: 'error',
      text: "Could not delete run-9: Run 'run-9' is running: stop it first",
    });
  });
});
