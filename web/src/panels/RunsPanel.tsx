// The Runs panel: a drawer over the canvas with the server's run history —
// this graph's runs or all, by status, sortable by column, a page more at a
// time — polled while open, so the editor's own run shows as it runs. Ticking
// two or more runs compares them below the list (RunCompare.tsx); each run's
// graph snapshot opens in a new tab, runs again there, or is deleted. Loaded
// the first time it opens (App.tsx); its button is RunsPanelToggle.tsx.
import { t, useLocale } from '../i18n';
import { useDocument } from '../store/document';
import { HISTORY_STATUSES, historyRow, listed, passesFilter, sortRows, type HistoryRow } from '../store/historyRows';
import { ownRunGraph, shownGraphName, useRunHistory, type RunHistoryState } from '../store/runHistory';
import { RunCompare } from './RunCompare';
import { RunsTable } from './RunsTable';
import { statusText } from './runText';
import { useEscapeClosesRuns, useRunsFollowEditor } from './useRunsPanelFollows';
import '../styles/server.css';
import '../styles/runs.css';

const clock = (ms: number) => new Date(ms).toLocaleTimeString('en-GB');

/** The listed runs as rows, filtered by scope and status and sorted; a run of this editor the server names no graph for gets its tab's graph name. */
function shownRows(s: RunHistoryState, graph: string | null, nowMs: number): HistoryRow[] {
  return sortRows(
    s.entries
      .map((e) => historyRow(e, nowMs, e.graph ? null : ownRunGraph(e.run_id)))
      .filter((r) => listed(r) && passesFilter(r, graph, s.status)),
    s.sort,
  );
}

/** The title, this graph's or all runs, the status filter, when the server last answered, and Close. */
function RunsHeader({ s, graphName }: { s: RunHistoryState; graphName: string }) {
  return (
    <header>
      <h2>{t('runs.title')}</h2>
      <div className="runs-scope" role="group" aria-label={t('runs.scope')}>
        <button
          type="button"
          className="small"
          data-testid="runs-scope-graph"
          aria-pressed={s.scope === 'graph'}
          title={t('runs.scopeGraphHint', { name: graphName || t('graph.untitled') })}
          onClick={() => s.setScope('graph')}
        >
          {t('runs.scopeGraph')}
        </button>
        <button
          type="button"
          className="small"
          data-testid="runs-scope-all"
          aria-pressed={s.scope === 'all'}
          onClick={() => s.setScope('all')}
        >
          {t('runs.scopeAll')}
        </button>
      </div>
      <label className="runs-status-filter">
        <span className="visually-hidden">{t('runs.status')}</span>
        <select data-testid="runs-status" value={s.status} onChange={(e) => s.setStatus(e.target.value)} aria-label={t('runs.status')}>
          <option value="">{t('runs.statusAny')}</option>
          {HISTORY_STATUSES.map((st) => (
            <option key={st} value={st}>
              {statusText(st)}
            </option>
          ))}
        </select>
      </label>
      <span className="spacer" />
      {s.answeredAt !== null && !s.error && (
        <span className="muted server-updated">{t('runs.answeredAt', { time: clock(s.answeredAt) })}</span>
      )}
      <button type="button" className="icon" onClick={() => s.setOpen(false)} aria-label={t('runs.close')} title={t('runs.close')}>
        ×
      </button>
    </header>
  );
}

/** What Delete, Open or Re-run did, and whether the server or its history answers. */
function RunsMessages({ s }: { s: RunHistoryState }) {
  return (
    <>
      {s.notice && (
        <p className={`server-notice ${s.notice.level}`} role="status" data-testid="runs-notice">
          {s.notice.text}
        </p>
      )}
      {s.error && (
        <div className="server-error" role="alert" data-testid="runs-error">
          <strong>{t('runs.notAnswering', { error: s.error })}</strong>
        </div>
      )}
      {s.historyError && (
        <div className="server-error" role="alert" data-testid="runs-history-error">
          {t('runs.historyError', { error: s.historyError })}
        </div>
      )}
    </>
  );
}

/** The runs' table (or why there is none) and Load more. */
function RunsList({ s, graph, rows, nowMs }: { s: RunHistoryState; graph: string | null; rows: HistoryRow[]; nowMs: number }) {
  const empty = s.status ? t('runs.noneMatch') : graph ? t('runs.noneGraph', { name: graph }) : t('runs.none');
  return (
    <div className={`runs-list${s.error ? ' stale' : ''}`}>
      {s.loading && rows.length === 0 ? (
        <p className="muted">{t('runs.asking')}</p>
      ) : rows.length === 0 ? (
        <p className="muted" data-testid="runs-empty">
          {empty}
        </p>
      ) : (
        <RunsTable rows={rows} nowMs={nowMs} />
      )}
      {s.nextCursor && (
        <button type="button" className="runs-more" data-testid="runs-more" disabled={s.loadingMore} onClick={() => void s.loadMore()}>
          {s.loadingMore ? t('runs.loadingMore') : t('runs.more')}
        </button>
      )}
    </div>
  );
}

/** How many runs are ticked (two or more compare them), and Clear. */
function RunsSelection({ s }: { s: RunHistoryState }) {
  if (s.selected.length === 0) return null;
  return (
    <div className="runs-selection" data-testid="runs-selection" data-count={s.selected.length}>
      <span>{t('runs.selected', { count: s.selected.length })}</span>
      {s.selected.length < 2 && <span className="muted">{t('runs.selectTwo')}</span>}
      <button type="button" className="small" data-testid="runs-clear" onClick={() => s.clearSelected()}>
        {t('runs.clear')}
      </button>
    </div>
  );
}

export function RunsPanel() {
  useLocale(); // re-render in the chosen language
  const s = useRunHistory();
  const graphName = useDocument((d) => d.meta.name);
  useEscapeClosesRuns(s.open);
  useRunsFollowEditor(graphName);

  const nowMs = s.answeredAt ?? 0;
  const graph = s.scope === 'graph' ? shownGraphName() : null;
  if (!s.open) return null;
  const rows = shownRows(s, graph, nowMs);
  const comparing = s.selected.length >= 2;

  return (
    <aside
      className={`runs-panel${comparing ? ' comparing' : ''}`}
      data-testid="runs-panel"
      aria-label={t('runs.title')}
      data-stale={s.error ? 'true' : 'false'}
      data-loading={s.loading ? 'true' : 'false'}
    >
      <RunsHeader s={s} graphName={graphName} />
      <RunsMessages s={s} />
      <RunsList s={s} graph={graph} rows={rows} nowMs={nowMs} />
      <RunsSelection s={s} />
      {comparing && <RunCompare />}
    </aside>
  );
}
