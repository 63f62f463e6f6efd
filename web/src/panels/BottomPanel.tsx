import { ChartsPanel } from '../charts/ChartsPanel';
import { useT } from '../i18n';
import { usePanels } from '../store/panels';
import { Messages } from './Messages';

export function BottomPanel() {
  const t = useT();
  const open = usePanels((s) => s.bottomOpen);
  const setOpen = usePanels((s) => s.setBottomOpen);
  return (
    <section className={`bottom-panel${open ? '' : ' closed'}`} aria-label={t('bottom.label')}>
      <button
        type="button"
        className="bottom-toggle"
        data-testid="bottom-toggle"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
        title={open ? t('bottom.hide') : t('bottom.show')}
      >
        {open ? '▾' : '▴'}
      </button>
      <Messages />
      <ChartsPanel />
    </section>
  );
}
