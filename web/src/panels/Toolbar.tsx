import { useRef, type ChangeEvent } from 'react';
import type { DeviceEntry } from '../api/types';
import { t, useT } from '../i18n';
import { useEditor } from '../store/editorStore';
import { RecordOutputsToggle } from '../inspector/Inspector';
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

export function Toolbar() {
  const t = useT();
  const name = useEditor((s) => s.meta.name);
  const description = useEditor((s) => s.meta.description);
  const unsaved = useEditor((s) => s.unsaved);
  const phase = useEditor((s) => s.run.phase);
  const status = useEditor((s) => s.status);
  const socket = useEditor((s) => s.socket);
  const devices = useEditor((s) => s.devices);
  const device = useEditor((s) => s.device);
  const theme = useEditor((s) => s.theme);
  const canUndo = useEditor((s) => s.history.past.length > 0);
  const canRedo = useEditor((s) => s.history.future.length > 0);
  const a = useEditor.getState();
  const fileInput = useRef<HTMLInputElement>(null);

  const onImport = async (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    e.target.value = '';
    if (file) await a.importFile(file);
  };

  const onExport = () => {
    const graph = a.exportGraph();
    download(fileNameFor(graph.name ?? ''), `${JSON.stringify(graph, null, 2)}\n`);
    a.markExported();
  };

  const running = phase !== 'idle';
  const deviceListed = devices.some((d) => d.device === device);

  return (
    <header className="toolbar" role="toolbar" aria-label={t('toolbar.label')}>
      <span className="brand">Codefy</span>
      <input
        className="graph-name"
        data-testid="graph-name"
        aria-label={t('toolbar.graphName')}
        placeholder={t('graph.untitled')}
        title={description || undefined}
        value={name}
        onChange={(e) => a.setGraphName(e.target.value)}
      />
      {unsaved && (
        <span className="unsaved" title={t('toolbar.unsaved')}>
          ●
        </span>
      )}
      <div className="tool-group">
        <button type="button" data-testid="files" onClick={() => a.setFilesOpen(true)}>
          {t('toolbar.open')}
        </button>
        <button type="button" data-testid="new-graph" onClick={() => void a.newGraph()}>
          {t('toolbar.new')}
        </button>
        <button type="button" data-testid="save" onClick={() => void a.saveGraph()} disabled={status !== 'ready'}>
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
      <div className="tool-group">
        <button type="button" className="icon" data-testid="undo" onClick={() => a.undo()} disabled={!canUndo} title={`${t('edit.undo')} (Ctrl+Z)`} aria-label={t('edit.undo')}>
          ↶
        </button>
        <button type="button" className="icon" data-testid="redo" onClick={() => a.redo()} disabled={!canRedo} title={`${t('edit.redo')} (Ctrl+Shift+Z)`} aria-label={t('edit.redo')}>
          ↷
        </button>
        <button type="button" data-testid="tidy" onClick={() => void a.tidyUp()} title={t('toolbar.tidyHint')}>
          {t('toolbar.tidy')}
        </button>
        <button type="button" data-testid="validate" onClick={() => void a.validate()} disabled={status !== 'ready'}>
          {t('toolbar.validate')}
        </button>
      </div>
      <span className="spacer" />
      <label className="device">
        <span>{t('toolbar.device')}</span>
        <select
          data-testid="device-select"
          value={device}
          onChange={(e) => a.setDevice(e.target.value)}
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
      <RecordOutputsToggle />
      <button
        type="button"
        className="run"
        data-testid="run"
        onClick={() => void a.runGraph()}
        disabled={running || status !== 'ready'}
      >
        ▶ {phase === 'starting' ? t('toolbar.starting') : phase === 'running' ? t('toolbar.running') : t('toolbar.run')}
      </button>
      <button type="button" className="stop" data-testid="stop" onClick={() => a.stopRun()} disabled={!running}>
        ■ {phase === 'stopping' ? t('toolbar.stopping') : t('toolbar.stop')}
      </button>
      <ServerPanelToggle />
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
        onClick={() => a.setSettingsOpen(true)}
        title={t('settings.open')}
        aria-label={t('settings.open')}
      >
        ⚙
      </button>
      <button
        type="button"
        data-testid="help"
        className="icon"
        onClick={() => a.setHelpOpen(true)}
        title={`${t('help.open')} (?)`}
        aria-label={t('help.open')}
      >
        ?
      </button>
      <button
        type="button"
        data-testid="theme-toggle"
        className="icon"
        onClick={() => a.setTheme(theme === 'dark' ? 'light' : 'dark')}
        title={theme === 'dark' ? t('toolbar.light') : t('toolbar.dark')}
        aria-label={theme === 'dark' ? t('toolbar.light') : t('toolbar.dark')}
      >
        {theme === 'dark' ? '☀' : '☾'}
      </button>
    </header>
  );
}
