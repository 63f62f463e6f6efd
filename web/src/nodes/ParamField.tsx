import { useEffect, useId, useRef, useState } from 'react';
import type { DeviceEntry, ModelFileEntry, ParamDefinition } from '../api/types';
import { checkParamValue, coerceParam, displayValue, widgetOf, type ParamProblem } from '../graph/params';
import { inWords, t, useLocale } from '../i18n';

export interface ParamFieldProps {
  def: ParamDefinition;
  value: unknown;
  onChange(value: unknown): void;
  /** data-testid of the control itself (so a test can fill, check or select it). */
  testId: string;
  /** A problem the server found with this param, shown until the value changes. */
  issue?: string | undefined;
  devices: readonly DeviceEntry[];
  models: readonly ModelFileEntry[];
  /** On a node: long texts fold into a button that opens the side panel. */
  compact?: boolean;
  onOpenLong?: () => void;
  /** The field holds text that is not a good value (the message), or no longer does (null). */
  onInvalid?: (error: string | null) => void;
}

/** One param's label and control, chosen by its type. */
export function ParamField(props: ParamFieldProps) {
  const { def, value, compact, onInvalid } = props;
  const widget = widgetOf(def, value);
  const id = useId();
  /** The text typed into a text field since it last showed the value; null: it shows the value. */
  const [draft, setDraft] = useState<string | null>(null);
  const [focused, setFocused] = useState(false);
  /** Why the option picked in a select is refused. */
  const [picked, setPicked] = useState<ParamProblem | null>(null);
  // A value changed elsewhere (undo, the node's other field for this param) replaces text that is
  // not being typed, and its complaint with it (set while rendering, so the old text never shows).
  const [synced, setSynced] = useState(value);
  if (!Object.is(synced, value)) {
    setSynced(value);
    if (!focused) setDraft(null);
  }
  useLocale(); // the complaint is put into words here: follow a language switch
  const typed = draft === null ? null : coerceParam(def, draft);
  const refusal = typed && !typed.ok ? typed.error : picked;
  const error = refusal ? inWords(refusal) : null;
  // Whoever listens (the run session: Run refuses while a field holds text that is not a good
  // value) hears when this field's complaint comes or goes, not of every render.
  const reported = useRef<string | null>(null);
  useEffect(() => {
    if (reported.current === error) return;
    reported.current = error;
    onInvalid?.(error);
  }, [onInvalid, error]);
  const shown = error ?? props.issue ?? null;
  const limits = [
    def.min_value !== null && def.min_value !== undefined ? `≥ ${def.min_value}` : '',
    def.max_value !== null && def.max_value !== undefined ? `≤ ${def.max_value}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  const title = [def.description, limits].filter(Boolean).join(' · ');

  return (
    <div className={`param param-${widget}${shown ? ' invalid' : ''}`} title={title || undefined}>
      <label htmlFor={id} className="param-label">
        {def.name}
      </label>
      <div className="param-control">
        <Control
          {...props}
          id={id}
          widget={widget}
          draft={draft}
          setDraft={setDraft}
          setFocused={setFocused}
          setPicked={setPicked}
        />
      </div>
      {shown && (
        <div className="param-error" role="alert" title={shown}>
          {compact ? shown.split('\n')[0] : shown}
        </div>
      )}
    </div>
  );
}

interface ControlProps extends ParamFieldProps {
  id: string;
  widget: ReturnType<typeof widgetOf>;
  /** A text field's typed text (null: it shows the value). */
  draft: string | null;
  setDraft(text: string | null): void;
  setFocused(focused: boolean): void;
  /** A select's refused option (null: none). */
  setPicked(problem: ParamProblem | null): void;
}

const CONTROL = 'nodrag nowheel';

function Control(p: ControlProps) {
  useLocale(); // summarize() below reads t(): follow a language switch
  const { def, value, onChange, testId, id, widget } = p;
  switch (widget) {
    case 'bool':
      return (
        <input
          id={id}
          type="checkbox"
          className={CONTROL}
          data-testid={testId}
          checked={value === true}
          onChange={(e) => onChange(e.target.checked)}
        />
      );
    case 'select':
    case 'device': {
      const current = typeof value === 'string' ? value : displayValue(value);
      const options = [...def.options];
      if (widget === 'device')
        for (const d of p.devices) if (!options.includes(d.device)) options.push(d.device);
      if (current && !options.includes(current)) options.push(current);
      const label = (o: string) => {
        if (widget !== 'device') return o;
        const entry = p.devices.find((d) => d.device === o);
        return entry ? `${o} — ${entry.label}` : o;
      };
      return (
        <select
          id={id}
          className={CONTROL}
          data-testid={testId}
          value={current}
          onChange={(e) => {
            p.setPicked(checkParamValue(def, e.target.value));
            onChange(e.target.value);
          }}
        >
          {options.map((o) => (
            <option key={o} value={o}>
              {label(o)}
            </option>
          ))}
        </select>
      );
    }
    case 'longtext':
      if (p.compact)
        return (
          <button type="button" className={`${CONTROL} param-long`} data-testid={testId} onClick={p.onOpenLong}>
            {summarize(displayValue(value))}
          </button>
        );
      return <TextControl {...p} multiline />;
    default:
      return <TextControl {...p} />;
  }
}

/** A short stand-in for a long text or JSON value on a node. */
export function summarize(text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      const j = JSON.parse(trimmed) as { nodes?: unknown[]; version?: unknown };
      if (j && Array.isArray(j.nodes)) return t('param.specSummary', { count: j.nodes.length });
    } catch {
      /* not JSON after all */
    }
    return t('param.jsonSummary', { chars: trimmed.length });
  }
  return trimmed.length > 28 ? `${trimmed.slice(0, 27)}…` : trimmed;
}

/**
 * A text or number field: typed text is checked, and only a good value reaches the graph; text
 * that is not one stays in the field with its complaint (ParamField says it) after the field is left.
 */
function TextControl(p: ControlProps & { multiline?: boolean }) {
  const { def, value, onChange, testId, id, widget, draft } = p;

  const take = (text: string) => {
    p.setDraft(text);
    const r = coerceParam(def, text);
    if (r.ok && r.value !== value) onChange(r.value);
  };

  const common = {
    id,
    'data-testid': testId,
    className: CONTROL,
    value: draft ?? displayValue(value),
    spellCheck: false,
    onFocus: () => p.setFocused(true),
    onBlur: () => {
      p.setFocused(false);
      // Good text gives way to the value it became (written as the field writes it).
      if (draft !== null && coerceParam(def, draft).ok) p.setDraft(null);
    },
  };

  if (p.multiline) return <textarea {...common} rows={8} onChange={(e) => take(e.target.value)} />;
  const numeric = widget === 'int' || widget === 'float';
  const listId = widget === 'model_file' ? `${id}-models` : undefined;
  return (
    <>
      <input
        {...common}
        type="text"
        inputMode={numeric ? (widget === 'int' ? 'numeric' : 'decimal') : undefined}
        list={listId}
        onChange={(e) => take(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') (e.target as HTMLInputElement).blur();
        }}
      />
      {listId && (
        <datalist id={listId}>
          {p.models.map((m) => (
            <option key={m.filename} value={m.filename} />
          ))}
        </datalist>
      )}
    </>
  );
}
