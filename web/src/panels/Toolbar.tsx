import { useRef, type ChangeEvent } from 'react';
import type { DeviceEntry } from '../api/types';
import { t, useT } from '../i18n';
import { useCatalogue } from '../store/catalogue';
import { useMemoryPlan } from '../store/memoryPlan';
import { useDocument } from '../store/document';
import { importFile, newGraph, saveGraph } from '../store/editor';
import { usePanels } from '../store/panels';
import { usePreferences } from '../store/preferences';
import { useRunSession, useShownRun } from '../store/runSession';
import { RecordOutputsToggle } from '../inspector/Inspector';
import { RunsPanelToggle } from './RunsPanelToggle';
import { ServerPanelToggle } from './ServerPanel';

const GIB = 1024 ** 3;

/** A device's line in the select: its label, and its memory when the label does not say it. */
export function deviceOptionLabel(d: DeviceEntry): string {
  if (/GiB/.test(d.label) || d.free_bytes === null || d.total_bytes === null) return d.label;
  return t('device.memory', {
    label: d.label,
    free: (d.free_bytes / GIB).toFixed(1),
    total: (d.total_bytes / GIB).toFixed(1),
  });
}

function download(filename: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function fileNameFor(name: string): string {
  const stem = name.trim().replace(/[^\p{L}\p{N}_-]+/gu, '_').replace(/^_+|_+$/g, '');
  return `${stem || 'graph'}.json`;
}

/** The graph's name (its description as the hint) and the unsaved mark. */
function GraphName() {
  const t = useT();
  const name = useDocument((s) => s.meta.name);
  const description = useDocument((s) => s.meta.description);
  const unsaved = useDocument((s) => s.unsaved);
  return (
    <>
      <input
        className="graph-name"
        data-testid="graph-name"
        aria-label={t('toolbar.graphName')}
        placeholder={t('graph.untitled')}
        title={description || undefined}
        value={name}
        onChange={(e) => useDocument.getState().setGraphName(e.target.value)}
      />
      {unsaved && (
        <span className="unsaved" title={t('toolbar.unsaved')}>
          ●
        </span>
      )}
    </>
  );
}

/** Open, New, Save, Import (through a hidden file input) and Export. */
function FileActions() {
  const t = useT();
  const status = useCatalogue((s) => s.status);
  const fileInput = useRef<HTMLInputElement>(null);

  const onImport = async (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    e.target.value = '';
    if (file) await importFile(file);
  };

  const onExport = () => {
    const doc = useDocument.getState();
    const graph = doc.exportGraph();
    download(fileNameFor(graph.name ?? ''), `${JSON.stringify(graph, null, 2)}\n`);
    doc.markExported();
  };

  return (
    <div className="tool-group">
      <button type="button" data-testid="files" onClick={() => usePanels.getState().setFilesOpen(true)}>
        {t('toolbar.open')}
      </button>
      <button type="button" data-testid="new-graph" onClick={() => void newGraph()}>
        {t('toolbar.new')}
      </button>
      <button type="button" data-testid="save" onClick={() => void saveGraph()} disabled={status !== 'ready'}>
        {t('toolbar.save')}
      </button>
      <button type="button" data-testid="import" onClick={() => fileInput.current?.click()}>
        {t('toolbar.import')}
      </button>
      <input
        ref={fileInput}
        type="file"
        accept=".json,application/json"
        data-testid="import-file"
        className="visually-hidden"
        tabIndex={-1}
        aria-hidden="true"
        onChange={(e) => void onImport(e)}
      />
      <button type="button" data-testid="export" onClick={onExport}>
        {t('toolbar.export')}
      </button>
    </div>
  );
}

/** Undo, Redo, Tidy up, Validate and Plan memory. */
function EditActions() {
  const t = useT();
  const status = useCatalogue((s) => s.status);
  const canUndo = useDocument((s) => s.history.past.length > 0);
  const canRedo = useDocument((s) => s.history.future.length > 0);
  const planning = useMemoryPlan((s) => s.planning !== null);
  const doc = useDocument.getState();
  return (
    <div className="tool-group">
      <button type="button" className="icon" data-testid="undo" onClick={() => doc.undo()} disabled={!canUndo} title={`${t('edit.undo')} (Ctrl+Z)`} aria-label={t('edit.undo')}>
        ↶
      </button>
      <button type="button" className="icon" data-testid="redo" onClick={() => doc.redo()} disabled={!canRedo} title={`${t('edit.redo')} (Ctrl+Shift+Z)`} aria-label={t('edit.redo')}>
        ↷
      </button>
      <button type="button" data-testid="tidy" onClick={() => void doc.tidyUp()} title={t('toolbar.tidyHint')}>
        {t('toolbar.tidy')}
      </button>
      <button type="button" data-testid="validate" onClick={() => void useRunSession.getState().validate()} disabled={status !== 'ready'}>
        {t('toolbar.validate')}
      </button>
      <button
        type="button"
        data-testid="plan-memory"
        onClick={() => void useMemoryPlan.getState().planShown(true)}
        disabled={status !== 'ready' || planning}
        aria-busy={planning}
        title={t('toolbar.planHint')}
      >
        {planning ? t('toolbar.planning') : t('toolbar.plan')}
      </button>
    </div>
  );
}

/** The graph's device: the server's devices, and the graph's own when the server does not list it. */
function DeviceMenu() {
  const t = useT();
  const devices = useCatalogue((s) => s.devices);
  const device = useDocument((s) => s.device);
  const deviceListed = devices.some((d) => d.device === device);
  return (
    <label className="device">
      <span>{t('toolbar.device')}</span>
      <select
        data-testid="device-select"
        value={device}
        onChange={(e) => useDocument.getState().setDevice(e.target.value)}
        title={t('toolbar.deviceHint')}
      >
        {!deviceListed && <option value={device}>{device}</option>}
        {devices.map((d) => (
          <option key={d.device} value={d.device}>
            {deviceOptionLabel(d)}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Run and Stop, saying which phase the shown tab's run is in. */
function RunControls() {
  const t = useT();
  const phase = useShownRun((r) => r.phase);
  const status = useCatalogue((s) => s.status);
  const run = useRunSession.getState();
  const running = phase !== 'idle';
  return (
    <>
      <button
        type="button"
        className="run"
        data-testid="run"
        onClick={() => void run.runGraph()}
        disabled={running || status !== 'ready'}
      >
        ▶ {phase === 'starting' ? t('toolbar.starting') : phase === 'running' ? t('toolbar.running') : t('toolbar.run')}
      </button>
      <button type="button" className="stop" data-testid="stop" onClick={() => run.stopRun()} disabled={!running}>
        ■ {phase === 'stopping' ? t('toolbar.stopping') : t('toolbar.stop')}
      </button>
    </>
  );
}

/** The connection's dot, Settings, the shortcut sheet and the theme. */
function AppButtons() {
  const t = useT();
  const socket = useRunSession((s) => s.socket);
  const theme = usePreferences((s) => s.theme);
  const panels = usePanels.getState();
  return (
    <>
      <span
        className={`socket-dot ${socket}`}
        data-testid="connection"
        data-state={socket}
        title={t(`socket.${socket}`)}
        aria-label={t(`socket.${socket}`)}
      />
      <button
        type="button"
        data-testid="settings"
        className="icon"
        onClick={() => panels.setSettingsOpen(true)}
        title={t('settings.open')}
        aria-label={t('settings.open')}
      >
        ⚙
      </button>
      <button
        type="button"
        data-testid="help"
        className="icon"
        onClick={() => panels.setHelpOpen(true)}
        title={`${t('help.open')} (?)`}
        aria-label={t('help.open')}
      >
        ?
      </button>
      <button
        type="button"
        data-testid="theme-toggle"
        className="icon"
        onClick={() => usePreferences.getState().setTheme(theme === 'dark' ? 'light' : 'dark')}
        title={theme === 'dark' ? t('toolbar.light') : t('toolbar.dark')}
        aria-label={theme === 'dark' ? t('toolbar.light') : t('toolbar.dark')}
      >
        {theme === 'dark' ? '☀' : '☾'}
      </button>
    </>
  );
}

export function Toolbar() {
  const t = useT();
  return (
    <header className="toolbar" role="toolbar" aria-label={t('toolbar.label')}>
      <span className="brand">Codefy</span>
      <GraphName />
      <FileActions />
      <EditActions />
      <span className="spacer" />
      <DeviceMenu />
      <RecordOutputsToggle />
      <RunControls />
      <RunsPanelToggle />
      <ServerPanelToggle />
      <AppButtons />
    </header>
  );
}
