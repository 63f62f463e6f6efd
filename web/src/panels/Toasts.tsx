import { useT } from '../i18n';
import { useEditor } from '../store/editorStore';

export function Toasts() {
  const t = useT();
  const toasts = useEditor((s) => s.toasts);
  const dismiss = useEditor((s) => s.dismissToast);
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
