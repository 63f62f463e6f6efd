// The model files on the server (the Files dialog's "Model files" section):
// name, size, a download link and Delete for each, and an upload picker.
// The list is the editor store's `models`, which file params offer too.
import { type ChangeEvent } from 'react';
import { modelDownloadUrl } from '../api/server';
import { t, useLocale } from '../i18n';
import { useCatalogue } from '../store/catalogue';
import { useModelFiles } from '../store/modelFilesStore';
import { formatBytes } from '../store/serverRows';
import { plausibleDate } from './FilesDialog';
import '../styles/server.css';

export function ModelFiles() {
  useLocale(); // re-render in the chosen language
  const models = useCatalogue((s) => s.models);
  const progress = useModelFiles((s) => s.progress);
  const result = useModelFiles((s) => s.result);

  const onFile = (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    e.target.value = '';
    if (file) void useModelFiles.getState().upload(file);
  };
  const remove = (name: string) => {
    if (window.confirm(t('models.deleteConfirm', { name }))) void useModelFiles.getState().remove(name);
  };
  // CodefyUI's list (and Codefy's) has no file times; shown when a server sends them.
  const withTimes = models.some((m) => typeof m.modified === 'number');

  return (
    <div className="model-files" data-testid="model-files">
      {models.length === 0 ? (
        <p className="muted">{t('models.none')}</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>{t('models.col.name')}</th>
              <th className="num">{t('models.col.size')}</th>
              {withTimes && <th>{t('models.col.modified')}</th>}
              <th />
            </tr>
          </thead>
          <tbody>
            {models.map((m) => (
              <tr key={m.filename} data-testid={`model-row-${m.filename}`} data-size={m.size}>
                <td className="mono">{m.filename}</td>
                <td className="num">{formatBytes(m.size)}</td>
                {withTimes && <td>{typeof m.modified === 'number' ? (plausibleDate(m.modified) ?? '') : ''}</td>}
                <td className="num">
                  <a
                    href={modelDownloadUrl(m.filename)}
                    download={m.filename}
                    data-testid={`model-download-${m.filename}`}
                    title={t('models.downloadHint', { name: m.filename })}
                  >
                    {t('models.download')}
                  </a>{' '}
                  <button
                    type="button"
                    className="small"
                    data-testid={`model-delete-${m.filename}`}
                    title={t('models.deleteHint', { name: m.filename })}
                    onClick={() => remove(m.filename)}
                  >
                    {t('models.delete')}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <label className="model-files-upload">
        <span>{t('models.upload')}</span>
        <input
          type="file"
          accept=".pt,.pth,.safetensors,.ckpt,.bin"
          data-testid="model-upload"
          disabled={progress !== null}
          onChange={onFile}
        />
      </label>
      {progress !== null && (
        <p role="status" data-testid="model-upload-progress">
          <progress max={1} value={progress} /> {t('models.uploading', { percent: Math.round(progress * 100) })}
        </p>
      )}
      {result && (
        <p className={`model-files-result ${result.level}`} role="status" data-testid="model-files-result" data-level={result.level}>
          {result.text}
        </p>
      )}
    </div>
  );
}
