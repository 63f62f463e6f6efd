// @vitest-environment jsdom
// The Server panel and model files: the pure row mapping, the poller, the
// store against a stubbed fetch, and the rendered panel.
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HealthResponse, RunListEntry } from '../src/api/server';
import { ModelFiles } from '../src/panels/ModelFiles';
import { ServerPanel } from '../src/panels/ServerPanel';
import { useCatalogue } from '../src/store/catalogue';
import { useDocument } from '../src/store/document';
import { resetEditorForTests } from '../src/store/editor';
import { useRunSession } from '../src/store/runSession';
import { useModelFiles } from '../src/store/modelFilesStore';
import { createPoller } from '../src/store/poller';
import {
  fillFraction,
  formatBytes,
  formatDuration,
  queueRows,
  runRows,
  runsNeedingDetail,
  storeRows,
  type KnownDetail,
} from '../src/store/serverRows';
import { POLL_MS, useServer } from '../src/store/serverStore';

const GIB = 1024 ** 3;

/** /api/health as `codefy serve` answered it with one run going and two editors connected. */
const health: HealthResponse = {
  boot_id: '89b3',
  caches: {
    execution_cache: { bytes: 3 * 1024 * 1024, entries: 7, instances: 2, max_bytes_each: GIB },
    node_state_store: { bytes: 52_000, max_bytes: GIB, max_modules: 200, modules: 1 },
    run_output_store: { bytes: 0, max_bytes: 2 * GIB, max_runs: 20, runs: 0 },
  },
  nodes_loaded: 18,
  queues: {
    'cuda:1': { devices: ['cuda:1'], queued: 0, running: null },
    cpu: { devices: ['cpu'], queued: 1, running: 'run-2' },
    gpus: { devices: ['cuda:0', 'cuda:2'], queued: 0, running: null },
  },
  status: 'ok',
  version: '0.1.0',
};

const runs: RunListEntry[] = [
  { run_id: 'run-1', device: 'cpu', worker: 'cpu', status: 'completed', position: 0 },
  { run_id: 'run-2', device: 'cpu', worker: 'cpu', status: 'running', position: 0 },
  { run_id: 'run-10', device: 'cpu', worker: 'cpu', status: 'queued', position: 1 },
];

const detail = (id: string, status: string, seenAs: string, extra: Partial<KnownDetail> = {}): KnownDetail => ({
  run_id: id,
  device: 'cpu',
  worker: 'cpu',
  status,
  queue_position: 0,
  seconds: 0,
  seenAs,
  ...extra,
});

describe('formatting', () => {
  it('bytes in binary units, one decimal below ten', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1.0 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(52_000)).toBe('51 KiB');
    expect(formatBytes(1024 * 1024 - 1)).toBe('1.0 MiB'); // never "1024 KiB"
    expect(formatBytes(GIB)).toBe('1.0 GiB');
    expect(formatBytes(2 * GIB)).toBe('2.0 GiB');
    expect(formatBytes(300 * GIB)).toBe('300 GiB');
    expect(formatBytes(-1)).toBe('?');
  });

  it('durations', () => {
    expect(formatDuration(0.43)).toBe('0.4 s');
    expect(formatDuration(12.4)).toBe('12 s');
    expect(formatDuration(185)).toBe('3 min 05 s');
    expect(formatDuration(7620)).toBe('2 h 07 min');
  });

  it('a bar never fills past its cap, and is empty without a cap', () => {
    expect(fillFraction(5, 10)).toBe(0.5);
    expect(fillFraction(20, 10)).toBe(1);
    expect(fillFraction(5, 0)).toBe(0);
  });
});

describe('rows from the server’s JSON', () => {
  it('the three stores: bytes used and capped, entries; the execution cache capped per connection', () => {
    const rows = storeRows(health);
    expect(rows.map((r) => r.name)).toEqual(['execution_cache', 'node_state_store', 'run_output_store']);
    expect(rows[0]).toMatchObject({ usedBytes: 3 * 1024 * 1024, capBytes: 2 * GIB, entries: 7, maxEntries: null, instances: 2 });
    expect(rows[1]).toMatchObject({ usedBytes: 52_000, capBytes: GIB, entries: 1, maxEntries: 200 });
    expect(rows[2]).toMatchObject({ usedBytes: 0, capBytes: 2 * GIB, entries: 0, maxEntries: 20 });
  });

  it('one queue per worker, in name order, with its running run and queued count', () => {
    expect(queueRows(health)).toEqual([
      { worker: 'cpu', devices: ['cpu'], running: 'run-2', queued: 1 },
      { worker: 'cuda:1', devices: ['cuda:1'], running: null, queued: 0 },
      { worker: 'gpus', devices: ['cuda:0', 'cuda:2'], running: null, queued: 0 },
    ]);
  });

  it('runs newest first (run-10 after run-2), Stop only on queued and running ones', () => {
    const rows = runRows(runs, {});
    expect(rows.map((r) => r.id)).toEqual(['run-10', 'run-2', 'run-1']);
    expect(rows.map((r) => r.stoppable)).toEqual([true, true, false]);
    expect(rows[0]).toMatchObject({ status: 'queued', position: 1, graph: null, seconds: null });
  });

  it('a finished run’s time and error come from a detail asked for once it had finished', () => {
    const finished: RunListEntry[] = [{ run_id: 'run-1', device: 'cpu', worker: 'cpu', status: 'failed', position: 0 }];
    const askedWhileRunning = { 'run-1': detail('run-1', 'failed', 'running', { seconds: 0, graph: 'g' }) };
    expect(runRows(finished, askedWhileRunning)[0]).toMatchObject({ graph: 'g', seconds: null, error: null });
    const askedAfter = {
      'run-1': detail('run-1', 'failed', 'failed', { seconds: 2.5, graph: 'g', error: { message: 'boom' } }),
    };
    expect(runRows(finished, askedAfter)[0]).toMatchObject({ graph: 'g', seconds: 2.5, error: 'boom' });
  });

  it('asks about new runs and runs whose status changed, never again about a finished one', () => {
    expect(runsNeedingDetail(runs, {}, 50)).toEqual(['run-10', 'run-2', 'run-1']);
    expect(runsNeedingDetail(runs, {}, 2)).toEqual(['run-10', 'run-2']); // the newest only
    const known = {
      'run-1': detail('run-1', 'completed', 'completed'),
      'run-2': detail('run-2', 'running', 'running'),
      'run-10': detail('run-10', 'queued', 'queued'),
    };
    expect(runsNeedingDetail(runs, known, 50)).toEqual([]);
    const moved = runs.map((r) => (r.run_id === 'run-2' ? { ...r, status: 'stopped' } : r));
    expect(runsNeedingDetail(moved, known, 50)).toEqual(['run-2']);
  });
});

describe('the poller', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('calls now, then every interval after each call settles, and not after stop', async () => {
    let calls = 0;
    const p = createPoller(async () => void ++calls, 2000);
    p.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1999);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(4000);
    expect(calls).toBe(4);
    p.stop();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toBe(4);
    expect(p.running).toBe(false);
  });

  it('never has two calls in flight, and a failing call does not end polling', async () => {
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    const p = createPoller(async () => {
      ++calls;
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 5000)); // slower than the interval
      --inFlight;
      if (calls === 1) throw new Error('no answer');
    }, 2000);
    p.start();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(most).toBe(1);
    expect(calls).toBe(3); // 0, 7 s, 14 s
    p.stop();
  });

  it('a call in flight when it stopped schedules nothing, even if started again meanwhile', async () => {
    let calls = 0;
    const p = createPoller(async () => {
      ++calls;
      await new Promise((r) => setTimeout(r, 1000));
    }, 2000);
    p.start();
    await vi.advanceTimersByTimeAsync(500);
    p.stop();
    p.start(); // a second call at once; the first one's follow-up is dropped
    await vi.advanceTimersByTimeAsync(500 + 1000 + 2000);
    expect(calls).toBe(3); // first, restart, one follow-up of the restart
    p.stop();
  });
});

/** A fetch answering from a table of URL → JSON (or a thrown error). */
function stubServer(routes: Record<string, unknown>) {
  const calls: string[] = [];
  const fetch = vi.fn(async (url: string, init?: RequestInit) => {
    const method = init?.method ?? 'GET';
    calls.push(`${method} ${url}`);
    const key = `${method} ${url}`;
    const answer = key in routes ? routes[key] : routes[url];
    if (answer instanceof Error) throw answer;
    if (answer === undefined) return new Response(JSON.stringify({ detail: 'Not Found' }), { status: 404 });
    if (answer instanceof Response) return answer;
    return new Response(JSON.stringify(answer), { status: 200 });
  });
  vi.stubGlobal('fetch', fetch);
  return { calls, fetch };
}

const serverRoutes = (over: Record<string, unknown> = {}) => ({
  '/api/health': health,
  '/api/runs': { runs },
  '/api/execution/state/list': { total: 1 },
  '/api/execution/state/list?graph_id=Toy%20MLP': { graph_id: 'Toy MLP', count: 1, node_ids: ['mlp'] },
  '/api/runs/run-1': { ...detail('run-1', 'completed', ''), seconds: 4.2, graph: 'saved_graph' },
  '/api/runs/run-2': { ...detail('run-2', 'running', '') },
  '/api/runs/run-10': { ...detail('run-10', 'queued', ''), graph: 'saved_graph' },
  '/api/auth/bootstrap': { token: 'tok' },
  ...over,
});

function resetServerStore() {
  useServer.getState().setOpen(false);
  useServer.setState({ health: null, runs: [], details: {}, stateTotal: null, graphState: null, error: null, answeredAt: null, notice: null });
}

describe('the server store', () => {
  beforeEach(() => {
    resetEditorForTests();
    useDocument.setState({ meta: { ...useDocument.getState().meta, name: 'Toy MLP' } });
    resetServerStore();
    vi.useFakeTimers();
  });
  afterEach(() => {
    useServer.getState().setOpen(false);
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it('polls every 2 s while open and stops when closed', async () => {
    const { calls } = stubServer(serverRoutes());
    useServer.getState().setOpen(true);
    await vi.advanceTimersByTimeAsync(0);
    const healthCalls = () => calls.filter((c) => c === 'GET /api/health').length;
    expect(healthCalls()).toBe(1);
    expect(useServer.getState().health?.version).toBe('0.1.0');
    expect(useServer.getState().graphState?.node_ids).toEqual(['mlp']);
    expect(Object.keys(useServer.getState().details).sort()).toEqual(['run-1', 'run-10', 'run-2']);
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(healthCalls()).toBe(2);
    // Finished runs are not asked about again; the running and queued ones keep their status, so neither are they.
    expect(calls.filter((c) => c === 'GET /api/runs/run-1')).toHaveLength(1);
    useServer.getState().setOpen(false);
    await vi.advanceTimersByTimeAsync(POLL_MS * 5);
    expect(healthCalls()).toBe(2);
  });

  it('a failed poll says the server is not answering and keeps the last answer, marked as old', async () => {
    stubServer(serverRoutes());
    useServer.getState().setOpen(true);
    await vi.advanceTimersByTimeAsync(0);
    const answeredAt = useServer.getState().answeredAt;
    expect(useServer.getState().error).toBeNull();
    stubServer(serverRoutes({ '/api/health': new TypeError('Failed to fetch') }));
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(useServer.getState().error).toBe('Failed to fetch');
    expect(useServer.getState().answeredAt).toBe(answeredAt);
    expect(useServer.getState().health).not.toBeNull();
    stubServer(serverRoutes());
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(useServer.getState().error).toBeNull();
  });

  it('Stop and Reset post with the token and say what happened', async () => {
    const { calls, fetch } = stubServer(
      serverRoutes({
        'POST /api/runs/run-2/stop': { run_id: 'run-2', stopping: true },
        'POST /api/execution/state/reset': { graph_id: 'Toy MLP', scope: 'graph', evicted: 1 },
      }),
    );
    await useServer.getState().stopRun('run-2');
    expect(calls).toContain('POST /api/runs/run-2/stop');
    expect(useServer.getState().notice).toEqual({ level: 'info', text: 'Asked run-2 to stop.' });
    await useServer.getState().resetGraphState();
    const reset = fetch.mock.calls.find(([url, init]) => url === '/api/execution/state/reset' && init?.method === 'POST')!;
    expect(JSON.parse(String(reset[1]!.body))).toEqual({ graph_id: 'Toy MLP' });
    expect(new Headers(reset[1]!.headers).get('X-CodefyUI-Token')).toBe('tok');
    expect(useServer.getState().notice?.text).toBe('Reset: 1 module(s) of “Toy MLP” forgotten.');
  });
});

describe('the panel', () => {
  beforeEach(() => {
    resetEditorForTests();
    useDocument.setState({ meta: { ...useDocument.getState().meta, name: 'Toy MLP' } });
    resetServerStore();
  });
  afterEach(() => {
    cleanup();
    useServer.getState().setOpen(false);
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });

  const openWith = (over: Partial<ReturnType<typeof useServer.getState>> = {}) => {
    stubServer(serverRoutes()); // the panel's own poll, should it run
    act(() => {
      useServer.setState({
        open: true,
        health,
        runs,
        details: { 'run-1': detail('run-1', 'completed', 'completed', { seconds: 4.2, graph: 'saved_graph' }) },
        stateTotal: 1,
        graphState: { graph_id: 'Toy MLP', count: 1, node_ids: ['mlp'] },
        answeredAt: Date.now(),
        error: null,
        ...over,
      });
    });
    return render(<ServerPanel />);
  };

  it('is not drawn while closed', () => {
    render(<ServerPanel />);
    expect(screen.queryByTestId('server-panel')).toBeNull();
  });

  it('draws the stores with their bytes, the queues and the runs with Stop where it applies', () => {
    useRunSession.setState({ runs: { [useDocument.getState().activeTab]: { ...useRunSession.getState().runOf(useDocument.getState().activeTab), serverRunId: 'run-2' } } });
    openWith();
    const state = screen.getByTestId('store-node_state_store');
    expect(state.dataset.used).toBe('52000');
    expect(state.dataset.cap).toBe(String(GIB));
    expect(state.textContent).toContain('51 KiB of 1.0 GiB');
    expect(state.textContent).toContain('1 of 200 modules');
    expect(screen.getByTestId('store-execution_cache').textContent).toContain('2 connection(s) × 1.0 GiB each');
    const cpu = screen.getByTestId('queue-cpu');
    expect(cpu.dataset.running).toBe('run-2');
    expect(cpu.dataset.queued).toBe('1');
    expect(screen.getByTestId('queue-gpus').textContent).toContain('cuda:0, cuda:2');
    expect(screen.getByTestId('run-row-run-1').dataset.status).toBe('completed');
    expect(screen.getByTestId('run-row-run-1').textContent).toContain('saved_graph');
    expect(screen.getByTestId('run-row-run-1').textContent).toContain('4.2 s');
    expect(screen.getByTestId('run-row-run-2').textContent).toContain('Toy MLP (this editor)');
    expect(screen.queryByTestId('run-stop-run-1')).toBeNull();
    expect(screen.getByTestId('run-stop-run-2')).toBeTruthy();
    expect(screen.getByTestId('run-stop-run-10')).toBeTruthy();
    expect(screen.getByTestId('state-graph').dataset.count).toBe('1');
    expect(screen.queryByTestId('server-error')).toBeNull();
  });

  it('says the server is not answering, over numbers marked as old', () => {
    openWith({ error: 'Failed to fetch' });
    expect(screen.getByTestId('server-error').textContent).toContain('Server not answering: Failed to fetch');
    expect(screen.getByTestId('server-panel').dataset.stale).toBe('true');
  });

  it('Reset asks first and does nothing when refused', async () => {
    openWith();
    const { calls } = stubServer(
      serverRoutes({ 'POST /api/execution/state/reset': { graph_id: 'Toy MLP', scope: 'graph', evicted: 1 } }),
    );
    const resets = () => calls.filter((c) => c === 'POST /api/execution/state/reset').length;
    const confirm = vi.spyOn(window, 'confirm').mockReturnValue(false);
    fireEvent.click(screen.getByTestId('state-reset'));
    expect(confirm).toHaveBeenCalledWith('Forget the 1 module(s) kept for “Toy MLP”? Its next run builds them anew.');
    await act(async () => new Promise((r) => setTimeout(r, 10)));
    expect(resets()).toBe(0);
    confirm.mockReturnValue(true);
    fireEvent.click(screen.getByTestId('state-reset'));
    await vi.waitFor(() => expect(resets()).toBe(1));
  });

  it('the toolbar toggle opens and closes it', async () => {
    stubServer(serverRoutes());
    const { ServerPanelToggle } = await import('../src/panels/ServerPanel');
    render(
      <>
        <ServerPanelToggle />
        <ServerPanel />
      </>,
    );
    fireEvent.click(screen.getByTestId('server-panel-toggle'));
    expect(screen.getByTestId('server-panel')).toBeTruthy();
    fireEvent.click(screen.getByTestId('server-panel-toggle'));
    expect(screen.queryByTestId('server-panel')).toBeNull();
    expect(useServer.getState().open).toBe(false);
  });
});

describe('model files', () => {
  beforeEach(() => {
    resetEditorForTests();
    useModelFiles.setState({ progress: null, result: null });
  });
  afterEach(() => {
    cleanup();
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });

  it('lists name and size with a download link and Delete; no time column when the server sends none', () => {
    useCatalogue.setState({ models: [{ filename: 'w.pt', size: 1536 }] });
    render(<ModelFiles />);
    expect(screen.getByTestId('model-row-w.pt').textContent).toContain('1.5 KiB');
    expect(screen.getByTestId('model-download-w.pt').getAttribute('href')).toBe('/api/models/download/w.pt');
    expect(screen.queryByText('Modified')).toBeNull();
  });

  it('Delete asks first, then deletes and refreshes the list file params offer', async () => {
    let models = [{ filename: 'w.pt', size: 5 }];
    const { calls } = stubServer({
      '/api/auth/bootstrap': { token: 'tok' },
      'DELETE /api/models/w.pt': { message: 'Deleted w.pt' },
      '/api/examples/list': [],
      '/api/graph/list': [],
    });
    const fetch = globalThis.fetch as ReturnType<typeof vi.fn>;
    const inner = fetch.getMockImplementation()!;
    fetch.mockImplementation(async (url: string, init?: RequestInit) => {
      if (url === '/api/models') return new Response(JSON.stringify(models));
      if (url === '/api/models/w.pt' && init?.method === 'DELETE') models = [];
      return inner(url, init);
    });
    useCatalogue.setState({ models });
    render(<ModelFiles />);
    const confirm = vi.spyOn(window, 'confirm').mockReturnValue(false);
    fireEvent.click(screen.getByTestId('model-delete-w.pt'));
    expect(calls.some((c) => c.startsWith('DELETE'))).toBe(false);
    confirm.mockReturnValue(true);
    await act(async () => {
      fireEvent.click(screen.getByTestId('model-delete-w.pt'));
      await new Promise((r) => setTimeout(r, 0));
    });
    await vi.waitFor(() => expect(useCatalogue.getState().models).toEqual([]));
    expect(calls).toContain('DELETE /api/models/w.pt');
    expect(screen.getByTestId('model-files-result').textContent).toBe('Deleted w.pt.');
    expect(screen.queryByTestId('model-row-w.pt')).toBeNull();
  });
});
