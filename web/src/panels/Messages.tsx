import { useReactFlow } from '@xyflow/react';
import { memo, useCallback, useEffect, useRef } from 'react';
import { useLocale, useT, type Locale } from '../i18n';
import { useDocument } from '../store/document';
import { useMessages, type Message } from '../store/messages';
import { MessageText } from './MessageText';

// One formatter for every line: toLocaleTimeString builds a new one per call,
// which at a fast run's dozens of lines a second took a quarter of the editor's time.
const timeFormat = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });

/**
 * One line; drawn once (memo): a fast run adds lines many times a second, and
 * the 500 kept before them do not change.
 */
const MessageRow = memo(function MessageRow({
  m,
  t,
  show,
}: {
  m: Message;
  t: ReturnType<typeof useT>;
  show: (nodeId: string) => void;
  /** Only to draw the line again in another language (t itself stays the same function). */
  locale: Locale;
}) {
  return (
    <li
      className={`message ${m.level}`}
      data-testid="message"
      data-level={m.level}
      data-node={m.nodeId ?? undefined}
      data-param={m.param ?? undefined}
    >
      <span className="message-time">{timeFormat.format(m.time)}</span>
      <span className={`message-level ${m.level}`}>{t(`level.${m.level}`)}</span>
      {m.nodeId && (
        <button type="button" className="node-chip" onClick={() => show(m.nodeId!)} title={t('messages.showNode')}>
          {m.nodeId}
          {m.param ? `.${m.param}` : ''}
        </button>
      )}
      <MessageText text={m.text} />
    </li>
  );
});

/** Warnings, errors and run notes, newest last; a node's name selects and shows it. */
export function Messages() {
  const t = useT();
  const locale = useLocale();
  const messages = useMessages((s) => s.messages);
  const clear = useMessages((s) => s.clearMessages);
  const list = useRef<HTMLOListElement>(null);
  // The same `show` every render, so the lines (memo) are not drawn again for it.
  const reactFlow = useReactFlow();
  const flow = useRef(reactFlow);
  useEffect(() => {
    flow.current = reactFlow;
  }, [reactFlow]);

  useEffect(() => {
    const el = list.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [messages]);

  const show = useCallback(
    (nodeId: string) => {
      useDocument.getState().select(nodeId);
      const { getNode, setCenter, getZoom } = flow.current;
      const n = getNode(nodeId);
      if (n) {
        const w = n.measured?.width ?? 240;
        const h = n.measured?.height ?? 120;
        void setCenter(n.position.x + w / 2, n.position.y + h / 2, { zoom: Math.max(getZoom(), 0.8), duration: 300 });
      }
    },
    [],
  );

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
          <MessageRow key={m.id} m={m} t={t} show={show} locale={locale} />
        ))}
      </ol>
    </section>
  );
}
