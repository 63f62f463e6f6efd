// The toolbar's Runs button. Apart from the panel, which is loaded the first
// time it opens (App.tsx): the first screen does without it.
import { t, useLocale } from '../i18n';
import { useRunHistory } from '../store/runHistory';
import { useServer } from '../store/serverStore';

/** The toolbar's button that opens and closes the panel (the Server panel closes: both are drawers on the right). */
export function RunsPanelToggle() {
  useLocale(); // re-render in the chosen language
  const open = useRunHistory((s) => s.open);
  return (
    <button
      type="button"
      data-testid="runs-panel-toggle"
      aria-pressed={open}
      title={t('runs.toggleHint')}
      onClick={() => {
        if (!open) useServer.getState().setOpen(false);
        useRunHistory.getState().setOpen(!open);
      }}
    >
      {t('runs.toggle')}
    </button>
  );
}
