// The Server panel: a drawer on the right over the canvas with the server's
// three memory stores, its queue per worker, the run list (Stop on queued and
// running runs) and the open graph's kept node state (Reset). It polls while
// open (src/store/serverStore.ts) and says so when the server stops answering.
import { useEffect } from 'react';
import { t, useLocale, type MessageKey } from '../i18n';
import { useDocument } from '../store/document';
import { usePanels } from '../store/panels';
import { useShownRun } from '../store/runSession';
import {
  fillFraction,
  formatBytes,
  formatCount,
  formatDuration,
  queueRows,
  runRows,
  storeRows,
  type RunRow,
  type StoreRow,
} from '../store/serverRows';
import { useRunHistory } from '../store/runHistory';
import { openGraphStateId, RUNS_SHOWN, useServer } from '../store/serverStore';
import '../styles/server.css';

const clock = (ms: number) => new Date(ms).toLocaleTimeString('en-GB');

const STATUSES = new Set(['queued', 'running', 'completed', 'failed', 'stopped']);
const statusText = (status: string) => (STATUSES.has(status) ? t(`runStatus.${status}` as MessageKey) : status);

/** The toolbar's button that opens and closes the panel. */
export function ServerPanelToggle() {
  useLocale(); // re-render in the chosen language
  const open = useServer((s) => s.open);
  return (
    <button
      type="button"
      data-testid="server-panel-toggle"
      aria-pressed={open}
      title={t('server.toggleHint')}
      onClick={() => {
        if (!open) useRunHistory.getState().setOpen(false); // both are drawers on the right
        useServer.getState().setOpen(!open);
      }}
    >
      {t('server.toggle')}
    </button>
  );
}

function StoreBar({ row }: { row: StoreRow }) {
  const fraction = fillFraction(row.usedBytes, row.capBytes);
  const count = t(`server.count.${row.name}`, {
    count: formatCount(row.entries),
    max: row.maxEntries === null ? '' : formatCount(row.maxEntries),
  });
  return (
    <li
      className="server-store"
      data-testid={`store-${row.name}`}
      data-used={row.usedBytes}
      data-cap={row.capBytes}
      data-entries={row.entries}
    >
      <div className="server-store-head">
        <strong>{t(`server.store.${row.name}`)}</strong>
        <span className="muted">{count}</span>
      </div>
      <div
        className={`server-bar ${fraction > 0.9 ? 'full' : ''}`}
        role="meter"
        aria-valuemin={0}
        aria-valuemax={row.capBytes}
        aria-valuenow={row.usedBytes}
        aria-label={t(`server.store.${row.name}`)}
      >
        <div style={{ width: `${(fraction * 100).toFixed(1)}%` }} />
      </div>
      <div className="muted server-store-bytes">
        {t('server.storeBytes', { used: formatBytes(row.usedBytes), cap: formatBytes(row.capBytes) })}
        {row.instances !== undefined && (
          <> · {t('server.cacheEach', { count: row.instances, each: formatBytes(row.capEachBytes ?? 0) })}</>
        )}
      </div>
    </li>
  );
}

function RunLine({ row, ownRunId, ownName }: { row: RunRow; ownRunId?: string; ownName: string }) {
  // This editor's own run says so; the server now names every run's graph (from its run history).
  const graph = row.id === ownRunId ? t('server.thisEditor', { name: ownName }) : (row.graph ?? null);
  return (
    <tr data-testid={`run-row-${row.id}`} data-status={row.status} title={row.error ?? undefined}>
      <td className="mono">{row.id}</td>
      <td>{graph ?? <span className="muted" title={t('server.editorRunHint')}>{t('server.editorRun')}</span>}</td>
      <td className="mono">{row.device}</td>
      <td>
        <span className={`run-status ${row.status}`}>{statusText(row.status)}</span>
        {row.status === 'queued' && row.position > 0 && (
          <span className="muted"> · {t('server.ahead', { count: row.position })}</span>
        )}
      </td>
      <td className="num">{row.seconds === null ? '' : formatDuration(row.seconds)}</td>
      <td>
        {row.stoppable && (
          <button
            type="button"
            className="small"
            data-testid={`run-stop-${row.id}`}
            onClick={() => void useServer.getState().stopRun(row.id)}
          >
            {t('server.stop')}
          </button>
        )}
      </td>
    </tr>
  );
}

export function ServerPanel() {
  useLocale(); // re-render in the chosen language
  const s = useServer();
  const ownRunId = useShownRun((r) => r.serverRunId);
  const graphName = useDocument((d) => d.meta.name);

  useEffect(() => {
    if (!s.open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && !usePanels.getState().filesOpen) useServer.getState().setOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [s.open]);

  // The open graph changed: ask at once about its kept state.
  useEffect(() => {
    if (useServer.getState().open) void useServer.getState().refresh();
  }, [graphName]);

  if (!s.open) return null;

  const close = () => s.setOpen(false);
  const runs = runRows(s.runs, s.details);
  const shown = runs.slice(0, RUNS_SHOWN);
  const graphId = openGraphStateId();
  const kept = s.graphState?.graph_id === graphId ? s.graphState : null;
  const reset = () => {
    const count = kept?.count ?? 0;
    if (window.confirm(t('server.resetConfirm', { count, graph: graphId }))) void s.resetGraphState();
  };

  return (
    <aside className="server-panel" data-testid="server-panel" aria-label={t('server.title')} data-stale={s.error ? 'true' : 'false'}>
      <header>
        <h2>{t('server.title')}</h2>
        {s.health && (
          <span className="muted">{t('server.version', { version: s.health.version, nodes: s.health.nodes_loaded })}</span>
        )}
        <span className="spacer" />
        {s.answeredAt !== null && !s.error && (
          <span className="muted server-updated">{t('server.answeredAt', { time: clock(s.answeredAt) })}</span>
        )}
        <button type="button" className="icon" onClick={close} aria-label={t('server.close')} title={t('server.close')}>
          ×
        </button>
      </header>

      {s.notice && (
        <p className={`server-notice ${s.notice.level}`} role="status" data-testid="server-notice">
          {s.notice.text}
        </p>
      )}
      {s.error && (
        <div className="server-error" role="alert" data-testid="server-error">
          <strong>{t('server.notAnswering', { error: s.error })}</strong>
          <div>
            {s.answeredAt !== null ? t('server.staleSince', { time: clock(s.answeredAt) }) : t('server.neverAnswered')}
          </div>
        </div>
      )}
      {!s.health && !s.error && <p className="muted">{t('server.asking')}</p>}

      {s.health && (
        <div className={s.error ? 'server-body stale' : 'server-body'}>
          <section>
            <h3>{t('server.stores')}</h3>
            <ul className="server-stores">
              {storeRows(s.health).map((row) => (
                <StoreBar key={row.name} row={row} />
              ))}
            </ul>
          </section>

          <section>
            <h3>{t('server.queues')}</h3>
            <ul className="server-queues">
              {queueRows(s.health).map((q) => (
                <li
                  key={q.worker}
                  data-testid={`queue-${q.worker}`}
                  data-running={q.running ?? ''}
                  data-queued={q.queued}
                >
                  <strong className="mono">{q.worker}</strong>
                  <span>
                    {q.running ? t('server.queueRunning', { id: q.running }) : t('server.queueIdle')} ·{' '}
                    {t('server.queueQueued', { count: q.queued })}
                  </span>
                  {(q.devices.length !== 1 || q.devices[0] !== q.worker) && (
                    <span className="muted">{t('server.queueDevices', { devices: q.devices.join(', ') })}</span>
                  )}
                </li>
              ))}
            </ul>
          </section>

          <section>
            <h3>{t('server.runs')}</h3>
            {runs.length === 0 ? (
              <p className="muted">{t('server.noRuns')}</p>
            ) : (
              <table className="server-runs">
                <thead>
                  <tr>
                    <th>{t('server.col.id')}</th>
                    <th>{t('server.col.graph')}</th>
                    <th>{t('server.col.device')}</th>
                    <th>{t('server.col.status')}</th>
                    <th className="num">{t('server.col.time')}</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {shown.map((row) => (
                    <RunLine key={row.id} row={row} ownRunId={ownRunId} ownName={graphName || graphId} />
                  ))}
                </tbody>
              </table>
            )}
            {runs.length > shown.length && (
              <p className="muted">{t('server.moreRuns', { count: runs.length - shown.length })}</p>
            )}
          </section>

          <section>
            <h3>{t('server.state')}</h3>
            <p className="muted small-print">{t('server.stateHint')}</p>
            <p data-testid="state-total" data-count={s.stateTotal ?? ''}>
              {t('server.stateTotal', { count: formatCount(s.stateTotal ?? 0) })}
            </p>
            <p data-testid="state-graph" data-count={kept?.count ?? ''}>
              {t('server.stateGraph', { graph: graphId, count: kept?.count ?? 0 })}
              {kept && kept.node_ids.length > 0 && (
                <span className="muted"> · {t('server.stateNodes', { nodes: kept.node_ids.join(', ') })}</span>
              )}
            </p>
            <button type="button" data-testid="state-reset" onClick={reset} disabled={!kept || kept.count === 0}>
              {t('server.reset')}
            </button>
          </section>
        </div>
      )}

    </aside>
  );
}
