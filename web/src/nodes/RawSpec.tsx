// The layer spec as raw JSON text, for specs the list cannot edit.
import { useState } from 'react';
import { t } from '../i18n';

/** The spec as JSON text; only text that parses reaches the graph. */
export function RawSpec(p: { value: unknown; onChange(value: unknown): void; problem: string | null }) {
  const text = typeof p.value === 'string' ? p.value : JSON.stringify(p.value, null, 2);
  /** The text typed since the field was entered (null: it shows the spec). */
  const [draft, setDraft] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <div className="layer-raw">
      {p.problem && <p className="layer-problem">{t('layers.notSpec', { error: p.problem })}</p>}
      <textarea
        data-testid="layer-raw"
        value={draft ?? text}
        rows={18}
        spellCheck={false}
        onBlur={() => {
          setDraft(null);
          setError(null);
        }}
        onChange={(e) => {
          setDraft(e.target.value);
          try {
            const parsed = JSON.parse(e.target.value) as unknown;
            setError(null);
            p.onChange(typeof p.value === 'string' ? e.target.value : parsed);
          } catch (err) {
            setError(err instanceof Error ? err.message : String(err));
          }
        }}
      />
      {error && <p className="layer-problem">{t('layers.rawBad', { error })}</p>}
    </div>
  );
}
