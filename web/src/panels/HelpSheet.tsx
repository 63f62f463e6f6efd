import { useEffect, useRef } from 'react';
import { SHORTCUTS } from '../canvas/shortcuts';
import { useT, type MessageKey } from '../i18n';
import { usePanels } from '../store/panels';

const MOUSE: MessageKey[] = ['mouse.pan', 'mouse.connect', 'mouse.dblclick'];

/** `Mod` as this computer writes it. */
export function keyLabel(keys: string, mac: boolean): string {
  return keys.replace(/Mod\+/g, mac ? '⌘' : 'Ctrl+');
}

/** Every shortcut the editor has, from the table the key handler uses. */
export function HelpSheet() {
  const t = useT();
  const open = usePanels((s) => s.helpOpen);
  const dialog = useRef<HTMLDivElement>(null);
  const mac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform);

  useEffect(() => {
    if (!open) return;
    dialog.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') usePanels.getState().setHelpOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open]);

  if (!open) return null;
  const close = () => usePanels.getState().setHelpOpen(false);
  return (
    <div className="dialog-backdrop" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div
        className="dialog help-sheet"
        role="dialog"
        aria-modal="true"
        aria-label={t('help.title')}
        data-testid="help-sheet"
        tabIndex={-1}
        ref={dialog}
      >
        <header>
          <h2>{t('help.title')}</h2>
          <button type="button" className="icon" onClick={close} aria-label={t('help.close')}>
            ×
          </button>
        </header>
        <h3>{t('help.keys')}</h3>
        <table>
          <tbody>
            {SHORTCUTS.map((s) => (
              <tr key={s.command} data-testid={`shortcut-${s.command}`}>
                <td>
                  {s.keys.map((k) => (
                    <kbd key={k}>{keyLabel(k, mac)}</kbd>
                  ))}
                </td>
                <td>{t(s.what)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <h3>{t('help.mouse')}</h3>
        <ul>
          {MOUSE.map((k) => (
            <li key={k}>{t(k)}</li>
          ))}
        </ul>
      </div>
    </div>
  );
}
