// @vitest-environment jsdom
// The Runs panel as a person sees it: the table, sorting, filters, ticking
// runs to compare (legend, charts, the settings that differ, metrics), Delete
// asking first, Open and Re-run of a snapshot, and the zh-TW strings.
import './dom';
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CompareResponse, HistoryEntry } from '../src/api/runs';
import { setLocale } from '../src/i18n';
import { RunsPanel } from '../src/panels/RunsPanel';
import { RunsPanelToggle } from '../src/panels/RunsPanelToggle';
import { ServerPanelToggle } from '../src/panels/ServerPanel';
import { useCatalogue } from '../src/store/catalogue';
import { useDocument } from '../src/store/document';
import { resetEditorForTests } from '../src/store/editor';
import { useRunHistory } from '../src/store/runHistory';
import { useRunSession } from '../src/store/runSession';
import { useServer } from '../src/store/serverStore';
import { defsByName } from './helpers';

/** uPlot stands in: what each chart was made with and last given. */
const plots: { series: { label?: string; stroke?: unknown }[]; data: unknown[][] }[] = [];
vi.mock('../src/charts/uplot', () => ({
  cssVar: (_: string, fallback: string) => fallback,
  loadUPlot: async () =>
    class FakePlot {
      series: { label?: string; stroke?: unknown }[];
      record: { series: { label?: string; stroke?: unknown }[]; data: unknown[][] };
      constructor(opts: { series: { label?: string; stroke?: unknown }[] }, data: unknown[][]) {
        this.series = opts.series;
        this.record = { series: opts.series, data };
        plots.push(this.record);
      }
      setData(data: unknown[][]) {
        this.record.data = data;
      }
      setSize() {}
      destroy() {}
    },
}));

const T0 = Date.now() / 1000 - 3600;

function entry(id: string, over: Partial<HistoryEntry> = {}): HistoryEntry {
  return {
    run_id: id,
    id,
    graph: 'Toy MLP',
    source: 'editor',
    status: 'completed',
    device: 'cpu',
    precision: 'fp32',
    effective_batch: 32,
    started_at: T0,
    duration_s: 12,
    peak_memory: { cpu: 3 * 1024 * 1024 },
    final_metrics: { train: { final_train_loss: 0.41, final_val_accuracy: 0.8125 } },
    from_history: true,
    ...over,
  };
}

const entries = [
  entry('20261101-140322-aaaaaa', { started_at: T0, final_metrics: { train: { final_train_loss: 0.6, final_val_accuracy: 0.7 } } }),
  entry('20261101-150000-bbbbbb', { started_at: T0 + 60, final_metrics: { train: { final_train_loss: 0.3, final_val_accuracy: 0.9 } } }),
  entry('run-7', { status: 'failed', started_at: T0 + 120, error: { kind: 'node_error', message: 'boom' }, final_metrics: null }),
];
const [A, B] = [entries[0]!.run_id, entries[1]!.run_id];

const compared: CompareResponse = {
  runs: [entries[0]!, entries[1]!],
  differences: [
    { key: 'seed', label: 'seed', values: [1, 2] },
    { key: 'optimizer.params.lr', label: 'optimizer (Optimizer) lr', node: 'optimizer', node_type: 'Optimizer', param: 'lr', values: [0.05, 0.01] },
  ],
  metrics: [
    { key: 'train.final_train_loss', label: 'train.final_train_loss', values: [0.6, 0.3] },
    { key: 'train.best_epoch', label: 'train.best_epoch', values: [3, 3] },
    { key: 'duration_s', label: 'duration (s)', values: [12, 12] },
  ],
};

function stubFetch(routes: Record<string, unknown>) {
  const calls: string[] = [];
  const fetch = vi.fn(async (url: string, init?: RequestInit) => {
    const method = init?.method ?? 'GET';
    calls.push(`${method} ${url}`);
    const answer = `${method} ${url}` in routes ? routes[`${method} ${url}`] : routes[url];
    if (answer === undefined) return new Response(JSON.stringify({ detail: `Not Found: ${url}` }), { status: 404 });
    return new Response(JSON.stringify(answer), { status: 200 });
  });
  vi.stubGlobal('fetch', fetch);
  return calls;
}

const SERIES_Q = '/series?names=epoch_loss,val_loss,val_accuracy,epoch_lr&points=500';
const curve = (lr: number) => ({
  epoch_loss: [
    [1, 1.0],
    [2, 0.7],
  ],
  val_loss: [
    [1, 1.1],
    [2, 0.8],
  ],
  val_accuracy: [
    [1, 0.6],
    [2, 0.75],
  ],
  epoch_lr: [
    [1, lr],
    [2, lr],
  ],
});

const routes = () => ({
  '/api/runs?history=1&graph=Toy+MLP&limit=50': { runs: entries, next_cursor: null },
  '/api/runs?history=1&limit=50': { runs: entries, next_cursor: null },
  [`/api/runs/compare?ids=${A},${B}`]: compared,
  [`/api/runs/${A}${SERIES_Q}`]: { run_id: A, series: curve(0.05) },
  [`/api/runs/${B}${SERIES_Q}`]: { run_id: B, series: curve(0.01) },
  '/api/auth/bootstrap': { token: 'tok' },
});

/** The panel open, its first listing answered. */
async function openPanel() {
  const calls = stubFetch(routes());
  const view = render(<RunsPanel />);
  await act(async () => {
    useRunHistory.getState().setOpen(true);
    await new Promise((r) => setTimeout(r, 0));
  });
  return { calls, view };
}

const rowIds = () => screen.getAllByTestId(/^runs-row-/).map((r) => r.dataset.testid!.replace('runs-row-', ''));

describe('the Runs panel', () => {
  beforeEach(() => {
    resetEditorForTests();
    useDocument.setState({ meta: { ...useDocument.getState().meta, name: 'Toy MLP' } });
    plots.length = 0;
  });
  afterEach(() => {
    cleanup();
    act(() => setLocale('en'));
    resetEditorForTests();
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });

  it('is not drawn while closed; the toolbar toggle opens it and closes the Server panel', () => {
    stubFetch(routes());
    render(
      <>
        <ServerPanelToggle />
        <RunsPanelToggle />
        <RunsPanel />
      </>,
    );
    expect(screen.queryByTestId('runs-panel')).toBeNull();
    fireEvent.click(screen.getByTestId('server-panel-toggle'));
    expect(useServer.getState().open).toBe(true);
    fireEvent.click(screen.getByTestId('runs-panel-toggle'));
    expect(screen.getByTestId('runs-panel')).toBeTruthy();
    expect(useServer.getState().open).toBe(false);
    fireEvent.click(screen.getByTestId('server-panel-toggle'));
    expect(useRunHistory.getState().open).toBe(false);
    useServer.getState().setOpen(false);
  });

  it('lists this graph’s runs newest first with their facts, and sorts by a column', async () => {
    await openPanel();
    expect(rowIds()).toEqual(['run-7', B, A]);
    const a = screen.getByTestId(`runs-row-${A}`);
    expect(a.dataset.status).toBe('completed');
    expect(a.textContent).toContain('Toy MLP');
    expect(a.textContent).toContain('aaaaaa');
    expect(a.textContent).toContain('fp32');
    expect(a.textContent).toContain('0.6');
    expect(a.textContent).toContain('70.0%');
    expect(a.textContent).toContain('12 s');
    expect(a.textContent).toContain('3.0 MiB');
    const failed = screen.getByTestId('runs-row-run-7');
    expect(failed.textContent).toContain('failed');
    fireEvent.click(screen.getByTestId('runs-sort-loss'));
    expect(rowIds()).toEqual([B, A, 'run-7']); // lowest loss first, none last
    expect(screen.getByTestId('runs-sort-loss').closest('th')!.getAttribute('aria-sort')).toBe('ascending');
    fireEvent.click(screen.getByTestId('runs-sort-loss'));
    expect(rowIds()).toEqual([A, B, 'run-7']);
  });

  it('All graphs and a status ask the server again', async () => {
    const { calls } = await openPanel();
    expect(calls).toContain('GET /api/runs?history=1&graph=Toy+MLP&limit=50');
    await act(async () => {
      fireEvent.click(screen.getByTestId('runs-scope-all'));
      await new Promise((r) => setTimeout(r, 0));
    });
    expect(calls).toContain('GET /api/runs?history=1&limit=50');
    expect(screen.getByTestId('runs-scope-all').getAttribute('aria-pressed')).toBe('true');
    await act(async () => {
      fireEvent.change(screen.getByTestId('runs-status'), { target: { value: 'failed' } });
      await new Promise((r) => setTimeout(r, 0));
    });
    expect(calls).toContain('GET /api/runs?history=1&status=failed&limit=50');
    expect(screen.getByTestId('runs-empty').textContent).toBe('No runs match these filters.');
  });

  it('two ticked runs: a legend in two colours, four charts of two series, the lr row and the metrics', async () => {
    await openPanel();
    await act(async () => {
      fireEvent.click(screen.getByTestId(`runs-select-${A}`));
      await new Promise((r) => setTimeout(r, 0));
    });
    expect(screen.queryByTestId('runs-compare')).toBeNull();
    expect(screen.getByTestId('runs-selection').textContent).toContain('Tick two or more runs');
    await act(async () => {
      fireEvent.click(screen.getByTestId(`runs-select-${B}`));
      await new Promise((r) => setTimeout(r, 10));
    });
    const compare = screen.getByTestId('runs-compare');
    expect(compare.textContent).toContain('Comparing 2 runs');
    const legendA = screen.getByTestId(`runs-legend-${A}`);
    const legendB = screen.getByTestId(`runs-legend-${B}`);
    expect(legendA.textContent).toContain('aaaaaa');
    expect(legendA.textContent).toContain('Toy MLP');
    expect(legendA.dataset.color).not.toBe(legendB.dataset.color);
    for (const kind of ['epochLoss', 'valLoss', 'valAccuracy', 'lr']) {
      const chart = screen.getByTestId(`runs-chart-${kind}`);
      expect(chart.dataset.series).toBe('2');
      expect(chart.dataset.points).toBe('4');
    }
    // The lines are drawn in the legend's colours, labelled by run.
    await act(async () => new Promise((r) => setTimeout(r, 0)));
    const lr = plots.find((p) => p.data.length === 3 && (p.data[1] as number[])[0] === 0.05);
    expect(lr).toBeTruthy();
    expect(lr!.series.slice(1).map((s) => s.stroke)).toEqual([legendA.dataset.color, legendB.dataset.color]);
    expect(lr!.series[1]!.label).toBe('aaaaaa · Toy MLP');

    const lrRow = screen.getByTestId('runs-diff-optimizer.params.lr');
    expect(within(lrRow).getAllByRole('cell').map((c) => c.textContent)).toEqual(['0.05', '0.01']);
    expect(lrRow.textContent).toContain('optimizer.lr');
    expect(screen.getByTestId('runs-diff-seed').textContent).toContain('Seed');
    // The primary metrics at once, the rest folded; the lower loss is the best.
    expect(screen.getByTestId('runs-metric-train.final_train_loss').textContent).toContain('Final training loss');
    expect(screen.getByTestId('runs-metric-train.final_train_loss').querySelector('td.best')!.textContent).toBe('0.3');
    expect(screen.queryByTestId('runs-metric-train.best_epoch')).toBeNull();
    fireEvent.click(screen.getByTestId('runs-more-metrics'));
    expect(screen.getByTestId('runs-metric-train.best_epoch').textContent).toContain('Best epoch');

    fireEvent.click(screen.getByTestId('runs-clear'));
    expect(screen.queryByTestId('runs-compare')).toBeNull();
  });

  it('Delete asks first, and deletes when confirmed', async () => {
    const { calls } = await openPanel();
    const confirm = vi.spyOn(window, 'confirm').mockReturnValue(false);
    fireEvent.click(screen.getByTestId(`runs-delete-${A}`));
    expect(confirm).toHaveBeenCalledWith(`Delete ${A} (Toy MLP) from the run history? Its record and curves are gone for good.`);
    expect(calls.filter((c) => c.startsWith('DELETE'))).toEqual([]);
    confirm.mockReturnValue(true);
    stubFetch({ ...routes(), [`DELETE /api/runs/${A}`]: { deleted: A } });
    await act(async () => {
      fireEvent.click(screen.getByTestId(`runs-delete-${A}`));
      await new Promise((r) => setTimeout(r, 10));
    });
    expect(screen.getByTestId('runs-notice').textContent).toBe(`Deleted ${A}.`);
  });

  it('Open puts the snapshot in a new tab named after the run; Re-run starts it there', async () => {
    useCatalogue.setState({
      defs: defsByName,
      status: 'ready',
      examples: [{ name: 'Toy MLP', description: '', category: 'x', path: 'toy-mlp', node_count: 1, edge_count: 0 }],
    });
    await openPanel();
    const snapshot = {
      name: 'Toy MLP',
      nodes: [{ id: 'start', type: 'Start', position: { x: 0, y: 0 }, data: { params: {} } }],
      edges: [],
    };
    stubFetch({ ...routes(), [`/api/runs/${A}`]: { ...entries[0], graph_snapshot: snapshot } });
    const tabsBefore = useDocument.getState().tabOrder.length;
    await act(async () => {
      fireEvent.click(screen.getByTestId(`runs-open-${A}`));
      await new Promise((r) => setTimeout(r, 20));
    });
    const doc = useDocument.getState();
    expect(doc.meta.name).toBe('Toy MLP @ aaaaaa');
    expect(doc.source).toEqual({ kind: 'run', runId: A, example: 'toy-mlp' });
    expect(doc.tabOrder.length).toBe(tabsBefore + 1);
    expect(useRunHistory.getState().open).toBe(false); // the new tab is in view

    const runGraph = vi.spyOn(useRunSession.getState(), 'runGraph').mockResolvedValue();
    // "This graph" is now the snapshot's ("Toy MLP @ aaaaaa"): all graphs, to find the run again.
    await act(async () => {
      useRunHistory.getState().setScope('all');
      useRunHistory.getState().setOpen(true);
      await new Promise((r) => setTimeout(r, 0));
    });
    const before = useDocument.getState().tabOrder.length;
    await act(async () => {
      fireEvent.click(screen.getByTestId(`runs-rerun-${A}`));
      await new Promise((r) => setTimeout(r, 20));
    });
    expect(useDocument.getState().tabOrder.length).toBe(before + 1);
    expect(runGraph).toHaveBeenCalledTimes(1);
  });

  it('a run without a snapshot says so', async () => {
    await openPanel();
    stubFetch({ ...routes(), [`/api/runs/${A}`]: { ...entries[0], graph_snapshot: null } });
    await act(async () => {
      fireEvent.click(screen.getByTestId(`runs-open-${A}`));
      await new Promise((r) => setTimeout(r, 10));
    });
    expect(screen.getByTestId('runs-notice').textContent).toBe(`Could not open the graph of ${A}: the server did not send the graph it ran`);
  });

  it('speaks Traditional Chinese', async () => {
    act(() => setLocale('zh-TW'));
    await openPanel();
    expect(screen.getByTestId('runs-scope-graph').textContent).toBe('這張圖');
    expect(screen.getByTestId('runs-sort-loss').textContent).toContain('最終損失');
    expect(screen.getByTestId('runs-row-run-7').textContent).toContain('失敗');
  });
});
