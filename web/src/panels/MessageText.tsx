import { textBlocks } from '../graph/issues';
import { useT } from '../i18n';

/** A message's text with its paragraphs and lists kept (the out-of-memory report's advice is a list). */
export function MessageText({ text }: { text: string }) {
  const t = useT();
  const blocks = textBlocks(text);
  return (
    <div className="message-text">
      {blocks.map((b, i) => {
        if (b.kind === 'p') return <p key={i}>{b.text}</p>;
        if (b.kind === 'trace')
          return (
            <details key={i} className="trace">
              <summary>{t('messages.trace', { count: b.lines.length })}</summary>
              <pre>{b.lines.join('\n')}</pre>
            </details>
          );
        const items = b.items.map((item, k) => <li key={k}>{item}</li>);
        return b.kind === 'ol' ? <ol key={i}>{items}</ol> : <ul key={i}>{items}</ul>;
      })}
    </div>
  );
}
