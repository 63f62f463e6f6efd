// One layer of the layer editor's list: its type, id, traced output shape
// and weight count, the params it sets (the rest folded away), and the
// server's message when the trace stopped there.
import { useState } from 'react';
import type { LayerParamDefinition, LayerTypeDefinition } from '../api/layers';
import { formatShape, layerParamFromText, type SpecNode } from '../graph/layerSpec';
import { t } from '../i18n';

/** A count as the editor writes it (1,234,567). */
export const count = (n: number) => n.toLocaleString('en-US');

export interface LayerRowProps {
  index: number;
  layer: SpecNode;
  def: LayerTypeDefinition | undefined;
  shape: number[] | null;
  params: number | null;
  error: string | null;
  errorParam: string | null;
  editable: boolean;
  selected: boolean;
  last: boolean;
  onSelect(): void;
  onParam(name: string, value: unknown): void;
  onMove(delta: number): void;
  onRemove(): void;
}

export function LayerRow(p: LayerRowProps) {
  const [more, setMore] = useState(false);
  const given = p.layer.params ?? {};
  const defs = p.def?.params ?? [];
  const shown = defs.filter((d) => d.required || d.name in given || d.name === p.errorParam);
  const folded = defs.filter((d) => !shown.includes(d));
  // Params the type does not list (a typo, or a server without /api/layers) still show, as text.
  const unknown = Object.keys(given).filter((k) => !defs.some((d) => d.name === k));
  const field = (d: LayerParamDefinition) => (
    <LayerParamField
      key={d.name}
      def={d}
      value={given[d.name]}
      testId={`layer-param-${p.index}-${d.name}`}
      disabled={!p.editable}
      onChange={(v) => p.onParam(d.name, v)}
    />
  );
  return (
    <li
      className={`layer-row${p.error ? ' failed' : ''}${p.selected ? ' selected' : ''}`}
      data-testid={`layer-row-${p.index}`}
      data-layer-id={p.layer.id}
      data-type={p.layer.type}
      data-shape={p.shape ? p.shape.join(',') : ''}
      data-error={p.error ? 'true' : 'false'}
      aria-selected={p.selected}
      onClick={p.onSelect}
    >
      <div className="layer-head">
        <span className="layer-index">{p.index + 1}</span>
        <strong className="layer-type">{p.layer.type}</strong>
        <span className="muted layer-id">{p.layer.id}</span>
        <span className="layer-shape" title={p.shape ? p.shape.join(', ') : ''}>
          {p.shape ? formatShape(p.shape) : t('layers.noShape')}
        </span>
        <span className="layer-count muted">{p.params !== null ? t('layers.params', { count: count(p.params) }) : ''}</span>
        {p.editable && (
          <span className="layer-actions">
            <button type="button" className="icon" data-testid={`layer-up-${p.index}`} disabled={p.index === 0}
              onClick={(e) => { e.stopPropagation(); p.onMove(-1); }} aria-label={t('layers.up')} title={t('layers.up')}>
              ↑
            </button>
            <button type="button" className="icon" data-testid={`layer-down-${p.index}`} disabled={p.last}
              onClick={(e) => { e.stopPropagation(); p.onMove(1); }} aria-label={t('layers.down')} title={t('layers.down')}>
              ↓
            </button>
            <button type="button" className="icon" data-testid={`layer-remove-${p.index}`}
              onClick={(e) => { e.stopPropagation(); p.onRemove(); }} aria-label={t('layers.remove')} title={t('layers.remove')}>
              ×
            </button>
          </span>
        )}
      </div>
      {(shown.length > 0 || unknown.length > 0 || folded.length > 0) && (
        <div className="layer-params">
          {shown.map(field)}
          {unknown.map((name) =>
            field({ name, param_type: 'string', default: null, description: '', options: [], min_value: null, max_value: null, required: false }),
          )}
          {more && folded.map(field)}
          {folded.length > 0 && (
            <button type="button" className="link layer-more" data-testid={`layer-more-${p.index}`}
              onClick={(e) => { e.stopPropagation(); setMore(!more); }}>
              {more ? t('layers.less') : t('layers.more', { count: folded.length })}
            </button>
          )}
        </div>
      )}
      {p.error && (
        <div className="layer-row-error" role="alert">
          {p.error}
        </div>
      )}
    </li>
  );
}

const textOf = (v: unknown) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

function LayerParamField(p: {
  def: LayerParamDefinition;
  value: unknown;
  testId: string;
  disabled: boolean;
  onChange(value: unknown): void;
}) {
  const { def, value } = p;
  /** The text typed since the field was entered (null: it shows the value). */
  const [draft, setDraft] = useState<string | null>(null);
  const bad = draft !== null && !layerParamFromText(def, draft).ok;
  const hint = [def.description, def.default !== null && !def.required ? t('layers.defaultHint', { value: textOf(def.default) }) : '']
    .filter(Boolean)
    .join(' · ');
  let control;
  if (def.param_type === 'bool') {
    control = (
      <input
        type="checkbox"
        data-testid={p.testId}
        disabled={p.disabled}
        checked={(value ?? def.default) === true}
        onChange={(e) => p.onChange(e.target.checked)}
      />
    );
  } else if (def.param_type === 'select') {
    const current = typeof value === 'string' ? value : String(def.default ?? '');
    const options = def.options.includes(current) ? def.options : [...def.options, current];
    control = (
      <select data-testid={p.testId} disabled={p.disabled} value={current} onChange={(e) => p.onChange(e.target.value)}>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  } else {
    control = (
      <input
        type="text"
        data-testid={p.testId}
        disabled={p.disabled}
        value={draft ?? textOf(value)}
        placeholder={def.required ? '' : textOf(def.default)}
        spellCheck={false}
        onBlur={() => setDraft(null)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') (e.target as HTMLInputElement).blur();
        }}
        onChange={(e) => {
          setDraft(e.target.value);
          const r = layerParamFromText(def, e.target.value);
          if (r.ok && JSON.stringify(r.value) !== JSON.stringify(value)) p.onChange(r.value);
        }}
      />
    );
  }
  return (
    <label className={`layer-param${bad ? ' invalid' : ''}`} title={hint || undefined} onClick={(e) => e.stopPropagation()}>
      <span className="layer-param-name">{def.name}</span>
      {control}
    </label>
  );
}
