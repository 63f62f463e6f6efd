// The Runs panel: a drawer over the canvas with the server's run history —
// this graph's runs or all, by status, sortable by column, a page more at a
// time — polled while open, so the editor's own run shows as it runs. Ticking
// two or more runs compares them below the list (RunCompare.tsx); each run's
// graph snapshot opens in a new tab, runs again there, or is deleted. Loaded
// the first time it opens (App.tsx); its button is RunsPanelToggle.tsx.
import { useEffect, useRef } from 'react';
import { t, useLocale, type MessageKey } from '../i18n';
import { runColor } from '../charts/runColors';
import { useDocument } from '../store/document';
import { openRunSnapshot } from '../store/editor';
import {
  HISTORY_STATUSES,
  formatDateTime,
  formatMetric,
  formatPercent,
  formatWhen,
  historyRow,
  listed,
  passesFilter,
  sortRows,
  type HistoryRow,
  type SortKey,
} from '../store/historyRows';
import { usePanels } from '../store/panels';
import { usePreferences, type Theme } from '../store/preferences';
import { ownRunGraph, shownGraphName, useRunHistory } from '../store/runHistory';
import { useRunSession } from '../store/runSession';
import { formatBytes, formatDuration } from '../store/serverRows';
import { RunCompare } from './RunCompare';
import { RunSwatch } from './RunSwatch';
import { statusText } from './runText';
import '../styles/server.css';
import '../styles/runs.css';

const clock = (ms: number) => new Date(ms).toLocaleTimeString('en-GB');

const COLUMNS: { key: SortKey; label: MessageKey; num?: boolean; hint?: MessageKey }[] = [
  { key: 'when', label: 'runs.col.when' },
  { key: 'graph', label: 'runs.col.graph' },
  { key: 'status', label: 'runs.col.status' },
  { key: 'precision', label: 'runs.col.precision' },
  { key: 'batch', label: 'runs.col.batch', num: true, hint: 'runs.col.batchHint' },
  { key: 'loss', label: 'runs.col.loss', num: true },
  { key: 'accuracy', label: 'runs.col.accuracy', num: true },
  { key: 'duration', label: 'runs.col.duration', num: true },
  { key: 'memory', label: 'runs.col.memory', num: true },
];

function SortHeader({ column }: { column: (typeof COLUMNS)[number] }) {
  const sort = useRunHistory((s) => s.sort);
  const sorted = sort.key === column.key;
  return (
    <th
      className={column.num ? 'num' : undefined}
      aria-sort={sorted ? (sort.dir === 'asc' ? 'ascending' : 'descending') : 'none'}
    >
      <button
        type="button"
        className="runs-sort"
        data-testid={`runs-sort-${column.key}`}
        title={column.hint ? `${t(column.hint)} · ${t('runs.sortHint')}` : t('runs.sortHint')}
        onClick={() => useRunHistory.getState().sortBy(column.key)}
      >
        {t(column.label)}
        <span className="runs-sort-mark" aria-hidden="true">
          {sorted ? (sort.dir === 'asc' ? '▲' : '▼') : ''}
        </span>
      </button>
    </th>
  );
}

function RunLine({ row, index, nowMs, own, theme }: { row: HistoryRow; index: number; nowMs: number; own: boolean; theme: Theme }) {
  const s = useRunHistory.getState();
  const selected = index >= 0;
  const remove = () => {
    if (window.confirm(t('runs.deleteConfirm', { id: row.id, graph: row.graph ?? '?' }))) void s.deleteRun(row.id);
  };
  const peakTitle = Object.entries(row.peakByDevice)
    .map(([device, bytes]) => `${device}: ${formatBytes(bytes)}`)
    .join('\n');
  return (
    <tr
      data-testid={`runs-row-${row.id}`}
      data-status={row.status}
      data-selected={selected ? 'true' : 'false'}
      className={selected ? 'selected' : undefined}
    >
      <td className="runs-check">
        <label title={row.inHistory ? t('runs.select', { id: row.id }) : t('runs.notInHistory')}>
          <input
            type="checkbox"
            data-testid={`runs-select-${row.id}`}
            aria-label={t('runs.select', { id: row.id })}
            checked={selected}
            disabled={!row.inHistory && !selected}
            onChange={() => s.toggleSelected(row.id)}
          />
          {selected && <RunSwatch color={runColor(index, theme)} />}
        </label>
      </td>
      <td className="runs-when" title={`${formatDateTime(row.startedAt)}\n${row.id}`}>
        {formatWhen(row.startedAt, nowMs)}
      </td>
      <td className="runs-graph">
        <span className="runs-graph-name" title={row.graph ?? undefined}>
          {row.graph ?? '—'}
        </span>
        <span className="mono muted runs-id" title={row.id}>
          {row.short}
        </span>
        {own && <span className="muted runs-own"> · {t('runs.thisEditor')}</span>}
      </td>
      <td title={row.error ?? undefined}>
        <span className={`run-status ${row.status}`}>{statusText(row.status)}</span>
        {row.status === 'queued' && row.position > 0 && <span className="muted"> · {t('runs.ahead', { count: row.position })}</span>}
      </td>
      <td className="mono">{row.precision ?? ''}</td>
      <td className="num">{row.effectiveBatch ?? ''}</td>
      <td className="num">{formatMetric(row.finalLoss)}</td>
      <td className="num">{formatPercent(row.valAccuracy)}</td>
      <td className="num">{row.duration === null ? '' : formatDuration(row.duration)}</td>
      <td className="num" title={peakTitle || undefined}>
        {row.peakBytes === null ? '' : formatBytes(row.peakBytes)}
      </td>
      <td className="runs-actions">
        <button
          type="button"
          className="small"
          data-testid={`runs-open-${row.id}`}
          disabled={!row.inHistory}
          title={t('runs.openHint', { id: row.id })}
          onClick={() => void openRunSnapshot(row.id).then((ok) => ok && s.setOpen(false))}
        >
          {t('runs.open')}
        </button>
        <button
          type="button"
          className="small"
          data-testid={`runs-rerun-${row.id}`}
          disabled={!row.inHistory}
          title={t('runs.rerunHint', { id: row.id })}
          onClick={() => void openRunSnapshot(row.id, true)}
        >
          {t('runs.rerun')}
        </button>
        <button
          type="button"
          className="small danger"
          data-testid={`runs-delete-${row.id}`}
          disabled={!row.inHistory}
          title={t('runs.deleteHint', { id: row.id })}
          onClick={remove}
        >
          {t('runs.delete')}
        </button>
      </td>
    </tr>
  );
}

export function RunsPanel() {
  useLocale(); // re-render in the chosen language
  const s = useRunHistory();
  const theme = usePreferences((p) => p.theme); // the run colours differ by theme
  const graphName = useDocument((d) => d.meta.name);
  // The editor's runs (which tab runs what): a run starting or ending is asked about at once.
  const editorRuns = useRunSession((r) =>
    Object.values(r.runs)
      .map((run) => `${run.phase}:${run.serverRunId ?? ''}`)
      .join(','),
  );

  useEffect(() => {
    if (!s.open) return;
    const onKey = (e: KeyboardEvent) => {
      const p = usePanels.getState();
      // A dialog over it closes first.
      if (e.key === 'Escape' && !p.filesOpen && !p.settingsOpen && !p.helpOpen) useRunHistory.getState().setOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [s.open]);

  // Another tab shown, or the graph renamed: this graph's runs are asked for again.
  useEffect(() => {
    useRunHistory.getState().graphChanged();
  }, [graphName]);

  // A run of this editor starting or ending: asked about at once (opening the panel asks already).
  const seenRuns = useRef(editorRuns);
  useEffect(() => {
    if (seenRuns.current === editorRuns) return;
    seenRuns.current = editorRuns;
    if (useRunHistory.getState().open) void useRunHistory.getState().refresh();
  }, [editorRuns]);

  const nowMs = s.answeredAt ?? 0;
  const graph = s.scope === 'graph' ? shownGraphName() : null;
  if (!s.open) return null;

  // A run of this editor the server names no graph for gets its tab's graph name.
  const rows = sortRows(
    s.entries
      .map((e) => historyRow(e, nowMs, e.graph ? null : ownRunGraph(e.run_id)))
      .filter((r) => listed(r) && passesFilter(r, graph, s.status)),
    s.sort,
  );

  const ownIds = new Set(
    Object.values(useRunSession.getState().runs)
      .map((r) => r.serverRunId)
      .filter(Boolean),
  );
  const close = () => s.setOpen(false);
  const empty = s.status ? t('runs.noneMatch') : graph ? t('runs.noneGraph', { name: graph }) : t('runs.none');
  const comparing = s.selected.length >= 2;

  return (
    <aside
      className={`runs-panel${comparing ? ' comparing' : ''}`}
      data-testid="runs-panel"
      aria-label={t('runs.title')}
      data-stale={s.error ? 'true' : 'false'}
      data-loading={s.loading ? 'true' : 'false'}
    >
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
        <button type="button" className="icon" onClick={close} aria-label={t('runs.close')} title={t('runs.close')}>
          ×
        </button>
      </header>

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

      <div className={`runs-list${s.error ? ' stale' : ''}`}>
        {s.loading && rows.length === 0 ? (
          <p className="muted">{t('runs.asking')}</p>
        ) : rows.length === 0 ? (
          <p className="muted" data-testid="runs-empty">
            {empty}
          </p>
        ) : (
          <table className="runs-table" data-testid="runs-table">
            <thead>
              <tr>
                <th className="runs-check">
                  <span className="visually-hidden">{t('runs.col.compare')}</span>
                </th>
                {COLUMNS.map((c) => (
                  <SortHeader key={c.key} column={c} />
                ))}
                <th />
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <RunLine key={row.id} row={row} index={s.selected.indexOf(row.id)} nowMs={nowMs} own={ownIds.has(row.id)} theme={theme} />
              ))}
            </tbody>
          </table>
        )}
        {s.nextCursor && (
          <button type="button" className="runs-more" data-testid="runs-more" disabled={s.loadingMore} onClick={() => void s.loadMore()}>
            {s.loadingMore ? t('runs.loadingMore') : t('runs.more')}
          </button>
        )}
      </div>

      {s.selected.length > 0 && (
        <div className="runs-selection" data-testid="runs-selection" data-count={s.selected.length}>
          <span>{t('runs.selected', { count: s.selected.length })}</span>
          {!comparing && <span className="muted">{t('runs.selectTwo')}</span>}
          <button type="button" className="small" data-testid="runs-clear" onClick={() => s.clearSelected()}>
            {t('runs.clear')}
          </button>
        </div>
      )}
      {comparing && <RunCompare />}
    </aside>
  );
}
