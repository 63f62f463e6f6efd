import { useT } from '../i18n';
import { useMessages } from '../store/messages';

export function Toasts() {
  const t = useT();
  const toasts = useMessages((s) => s.toasts);
  const dismiss = useMessages((s) => s.dismissToast);
  return (
    <div className="toasts" data-testid="toasts" aria-live="assertive">
      {toasts.map((x) => (
        <div key={x.id} className={`toast ${x.level}`} role={x.level === 'error' ? 'alert' : 'status'} data-testid="toast">
          <span className="toast-text">{x.text}</span>
          <button type="button" className="icon" onClick={() => dismiss(x.id)} aria-label={t('toast.dismiss')}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
