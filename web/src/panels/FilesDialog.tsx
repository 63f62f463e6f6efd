import { useEffect, useRef, type ChangeEvent } from 'react';
import { useT } from '../i18n';
import { useCatalogue } from '../store/catalogue';
import { importFile, openExample, openSaved } from '../store/editor';
import { usePanels } from '../store/panels';
import { ModelFiles } from './ModelFiles';

/** A file time (seconds since 1970) as text; null for one no clock could have written. */
export function plausibleDate(seconds: number): string | null {
  const d = new Date(seconds * 1000);
  const year = d.getFullYear();
  return Number.isFinite(year) && year >= 2000 && year < 2200 ? d.toLocaleString('en-GB') : null;
}

/** Examples from the server, graphs saved on it, and a graph.json from this computer. */
export function FilesDialog() {
  const t = useT();
  const examples = useCatalogue((s) => s.examples);
  const saved = useCatalogue((s) => s.savedGraphs);
  const dialog = useRef<HTMLDivElement>(null);

  useEffect(() => {
    dialog.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') usePanels.getState().setFilesOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const close = () => usePanels.getState().setFilesOpen(false);
  const showExample = async (path: string) => {
    close();
    await openExample(path);
  };
  const showSaved = async (name: string) => {
    close();
    await openSaved(name);
  };
  const onFile = async (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    e.target.value = '';
    if (!file) return;
    close();
    await importFile(file);
  };

  return (
    <div className="dialog-backdrop" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div
        className="dialog"
        role="dialog"
        aria-modal="true"
        aria-label={t('files.title')}
        data-testid="files-dialog"
        tabIndex={-1}
        ref={dialog}
      >
        <header>
          <h2>{t('files.title')}</h2>
          <button type="button" className="icon" onClick={close} aria-label={t('files.close')}>
            ×
          </button>
        </header>
        <section>
          <h3>{t('files.examples')}</h3>
          {examples.length === 0 && <p className="muted">{t('files.noExamples')}</p>}
          <ul className="gallery">
            {examples.map((x) => (
              <li key={x.path}>
                <button type="button" data-testid={`example-${x.path}`} onClick={() => void showExample(x.path)}>
                  <strong>{x.name}</strong>
                  <span className="muted">{t('files.counts', { nodes: x.node_count, edges: x.edge_count })}</span>
                  <span className="gallery-desc">{x.description}</span>
                </button>
              </li>
            ))}
          </ul>
        </section>
        <section>
          <h3>{t('files.saved')}</h3>
          {saved.length === 0 && <p className="muted">{t('files.noSaved')}</p>}
          <ul className="saved-list">
            {saved.map((g) => (
              <li key={g.file}>
                <button type="button" data-testid={`saved-${g.file}`} onClick={() => void showSaved(g.file)}>
                  <strong>{g.name}</strong>
                  {plausibleDate(g.modified) && <span className="muted">{plausibleDate(g.modified)}</span>}
                </button>
              </li>
            ))}
          </ul>
        </section>
        <section>
          <h3>{t('files.fromComputer')}</h3>
          <input type="file" accept=".json,application/json" data-testid="files-import" onChange={(e) => void onFile(e)} />
        </section>
        <section>
          <h3>{t('models.title')}</h3>
          <ModelFiles />
        </section>
      </div>
    </div>
  );
}
