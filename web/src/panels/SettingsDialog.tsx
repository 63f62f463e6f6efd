import { useEffect, useRef } from 'react';
import { useT } from '../i18n';
import { useCatalogue } from '../store/catalogue';
import { setDefaultDevice } from '../store/editor';
import { usePanels } from '../store/panels';
import { usePreferences } from '../store/preferences';
import { LanguageSelect } from './LanguageSelect';
import { deviceOptionLabel } from './Toolbar';

/** The editor's settings: where graphs run by default, the language and the theme. */
export function SettingsDialog() {
  const t = useT();
  const open = usePanels((s) => s.settingsOpen);
  const devices = useCatalogue((s) => s.devices);
  const device = usePreferences((s) => s.defaultDevice);
  const theme = usePreferences((s) => s.theme);
  const dialog = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!open) return;
    dialog.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') usePanels.getState().setSettingsOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open]);

  if (!open) return null;
  const close = () => usePanels.getState().setSettingsOpen(false);
  const listed = devices.some((d) => d.device === device);
  return (
    <div className="dialog-backdrop" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div
        className="dialog settings-dialog"
        role="dialog"
        aria-modal="true"
        aria-label={t('settings.title')}
        data-testid="settings-dialog"
        tabIndex={-1}
        ref={dialog}
      >
        <header>
          <h2>{t('settings.title')}</h2>
          <button type="button" className="icon" onClick={close} aria-label={t('help.close')}>
            ×
          </button>
        </header>
        <label className="setting">
          <span>{t('settings.device')}</span>
          <select data-testid="settings-device" value={device} onChange={(e) => setDefaultDevice(e.target.value)}>
            {!listed && <option value={device}>{device}</option>}
            {devices.map((d) => (
              <option key={d.device} value={d.device}>
                {deviceOptionLabel(d)}
              </option>
            ))}
          </select>
          <small className="muted">{t('settings.deviceHint')}</small>
        </label>
        <label className="setting">
          <span>{t('language.label')}</span>
          <LanguageSelect />
        </label>
        <label className="setting">
          <span>{t('settings.theme')}</span>
          <select data-testid="settings-theme" value={theme} onChange={(e) => usePreferences.getState().setTheme(e.target.value === 'light' ? 'light' : 'dark')}>
            <option value="dark">{t('settings.dark')}</option>
            <option value="light">{t('settings.light')}</option>
          </select>
        </label>
      </div>
    </div>
  );
}
