// The Runs panel's table: a sortable header, and one line per run with its
// compare tick, settings, results and what can be done with its snapshot.
import { t, type MessageKey } from '../i18n';
import { runColor } from '../charts/runColors';
import { openRunSnapshot } from '../store/editor';
import { formatDateTime, formatMetric, formatPercent, formatWhen, type HistoryRow, type SortKey } from '../store/historyRows';
import { usePreferences, type Theme } from '../store/preferences';
import { useRunHistory } from '../store/runHistory';
import { useRunSession } from '../store/runSession';
import { formatBytes, formatDuration } from '../store/serverRows';
import { RunSwatch } from './RunSwatch';
import { statusText } from './runText';

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

/** The server's run ids of this editor's runs. */
function ownRunIds(): Set<string> {
  const ids = new Set<string>();
  for (const r of Object.values(useRunSession.getState().runs)) if (r.serverRunId) ids.add(r.serverRunId);
  return ids;
}

export function RunsTable({ rows, nowMs }: { rows: HistoryRow[]; nowMs: number }) {
  const selected = useRunHistory((s) => s.selected);
  const theme = usePreferences((p) => p.theme); // the run colours differ by theme
  const ownIds = ownRunIds();
  return (
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
          <RunLine key={row.id} row={row} index={selected.indexOf(row.id)} nowMs={nowMs} own={ownIds.has(row.id)} theme={theme} />
        ))}
      </tbody>
    </table>
  );
}
