// The Server panel: a drawer on the right over the canvas with the server's
// three memory stores, its queue per worker, the run list (Stop on queued and
// running runs) and the open graph's kept node state (Reset). It polls while
// open (src/store/serverStore.ts) and says so when the server stops answering.
import { useEffect } from 'react';
import { t, useLocale } from '../i18n';
import { useDocument } from '../store/document';
import { usePanels } from '../store/panels';
import { useShownRun } from '../store/runSession';
import { useRunHistory } from '../store/runHistory';
import { openGraphStateId, useServer, type ServerState } from '../store/serverStore';
import { QueuesSection, RunsSection, StateSection, StoresSection } from './ServerSections';
import '../styles/server.css';

const clock = (ms: number) => new Date(ms).toLocaleTimeString('en-GB');

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

/** While open, Escape closes the panel (the files dialog over it closes first); the open graph changed: its kept state is asked about at once. */
function useServerPanelFollows(open: boolean, graphName: string) {
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && !usePanels.getState().filesOpen) useServer.getState().setOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open]);

  useEffect(() => {
    if (useServer.getState().open) void useServer.getState().refresh();
  }, [graphName]);
}

/** The title, the server's version, when it last answered, and Close. */
function ServerHeader({ s }: { s: ServerState }) {
  return (
    <header>
      <h2>{t('server.title')}</h2>
      {s.health && (
        <span className="muted">{t('server.version', { version: s.health.version, nodes: s.health.nodes_loaded })}</span>
      )}
      <span className="spacer" />
      {s.answeredAt !== null && !s.error && (
        <span className="muted server-updated">{t('server.answeredAt', { time: clock(s.answeredAt) })}</span>
      )}
      <button type="button" className="icon" onClick={() => s.setOpen(false)} aria-label={t('server.close')} title={t('server.close')}>
        ×
      </button>
    </header>
  );
}

/** What Stop or Reset did, and whether the server answers. */
function ServerMessages({ s }: { s: ServerState }) {
  return (
    <>
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
    </>
  );
}

export function ServerPanel() {
  useLocale(); // re-render in the chosen language
  const s = useServer();
  const ownRunId = useShownRun((r) => r.serverRunId);
  const graphName = useDocument((d) => d.meta.name);
  useServerPanelFollows(s.open, graphName);
  if (!s.open) return null;

  return (
    <aside className="server-panel" data-testid="server-panel" aria-label={t('server.title')} data-stale={s.error ? 'true' : 'false'}>
      <ServerHeader s={s} />
      <ServerMessages s={s} />
      {s.health && (
        <div className={s.error ? 'server-body stale' : 'server-body'}>
          <StoresSection health={s.health} />
          <QueuesSection health={s.health} />
          <RunsSection s={s} ownRunId={ownRunId} ownName={graphName || openGraphStateId()} />
          <StateSection s={s} />
        </div>
      )}
    </aside>
  );
}
