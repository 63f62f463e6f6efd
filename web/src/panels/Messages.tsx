import { useReactFlow } from '@xyflow/react';
import { useEffect, useRef } from 'react';
import { useT } from '../i18n';
import { useEditor } from '../store/editorStore';
import { MessageText } from './MessageText';

const time = (ms: number) => new Date(ms).toLocaleTimeString('en-GB', { hour12: false });

/** Warnings, errors and run notes, newest last; a node's name selects and shows it. */
export function Messages() {
  const t = useT();
  const messages = useEditor((s) => s.messages);
  const clear = useEditor((s) => s.clearMessages);
  const list = useRef<HTMLOListElement>(null);
  const { getNode, setCenter, getZoom } = useReactFlow();

  useEffect(() => {
    const el = list.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [messages]);

  const show = (nodeId: string) => {
    useEditor.getState().select(nodeId);
    const n = getNode(nodeId);
    if (n) {
      const w = n.measured?.width ?? 240;
      const h = n.measured?.height ?? 120;
      void setCenter(n.position.x + w / 2, n.position.y + h / 2, { zoom: Math.max(getZoom(), 0.8), duration: 300 });
    }
  };

  return (
    <section className="messages" data-testid="messages" aria-label={t('messages.label')}>
      <header>
        <h3>{t('messages.label')}</h3>
        <span className="muted">{messages.length}</span>
        <button type="button" className="link" onClick={clear} disabled={messages.length === 0}>
          {t('messages.clear')}
        </button>
      </header>
      <ol ref={list} className="message-list" aria-live="polite">
        {messages.length === 0 && <li className="muted empty">{t('messages.empty')}</li>}
        {messages.map((m) => (
          <li
            key={m.id}
            className={`message ${m.level}`}
            data-testid="message"
            data-level={m.level}
            data-node={m.nodeId ?? undefined}
            data-param={m.param ?? undefined}
          >
            <span className="message-time">{time(m.time)}</span>
            <span className={`message-level ${m.level}`}>{t(`level.${m.level}`)}</span>
            {m.nodeId && (
              <button type="button" className="node-chip" onClick={() => show(m.nodeId!)} title={t('messages.showNode')}>
                {m.nodeId}
                {m.param ? `.${m.param}` : ''}
              </button>
            )}
            <MessageText text={m.text} />
          </li>
        ))}
      </ol>
    </section>
  );
}
