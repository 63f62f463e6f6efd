import { useEffect, useMemo, useRef, useState } from 'react';
import { createPortal } from 'react-dom';
import type { LayerParamDefinition, LayerTypeDefinition, ShapeTraceResponse } from '../api/layers';
import {
  chainOf,
  formatShape,
  guessInputShape,
  insertLayer,
  moveLayer,
  newLayerId,
  parseShapeText,
  parseSpec,
  removeLayer,
  setLayerParam,
  specOfChain,
  specValue,
  type Chain,
  type SpecNode,
} from '../graph/layerSpec';
import { t, useLocale, type MessageKey } from '../i18n';
import { localizeLayerType } from '../i18n/nodeText';
import { useDocument } from '../store/document';
import { useLayerStore } from '../store/layerStore';
import '../styles/layers.css';

/** How long the spec must stay unchanged before its shapes are asked for. */
const TRACE_DELAY_MS = 300;

const count = (n: number) => n.toLocaleString('en-US');

/** In the side panel, for SequentialModel's `layers`: opens the layer editor. */
export function LayerEditorLauncher(props: { nodeId: string; value: unknown; onChange(value: unknown): void }) {
  useLocale(); // re-render in the chosen language
  const [open, setOpen] = useState(false);
  const parsed = parseSpec(props.value);
  const layers = parsed.ok ? parsed.spec.nodes.filter((n) => n.type !== 'Input' && n.type !== 'Output').length : 0;
  return (
    <div className="layer-launcher">
      <button
        type="button"
        data-testid="layer-editor-open"
        title={t('layers.openHint')}
        onClick={() => setOpen(true)}
      >
        {t('layers.open')} ({layers})
      </button>
      {/* On the page's body: the side panel's stacking context would keep the dialog under the toolbar. */}
      {open && createPortal(<LayerEditor {...props} onClose={() => setOpen(false)} />, document.body)}
    </div>
  );
}

interface LayerEditorProps {
  nodeId: string;
  value: unknown;
  onChange(value: unknown): void;
  onClose(): void;
}

/** The server's layer categories with a translation (others are shown as the server names them). */
const LAYER_CATEGORY_LABEL: Record<string, MessageKey> = {
  Activation: 'layers.category.activation',
  Attention: 'layers.category.attention',
  Convolution: 'layers.category.convolution',
  Linear: 'layers.category.linear',
  Merge: 'layers.category.merge',
  Normalization: 'layers.category.normalization',
  Pooling: 'layers.category.pooling',
  Recurrent: 'layers.category.recurrent',
  Regularization: 'layers.category.regularization',
  Utility: 'layers.category.utility',
};

/**
 * SequentialModel's layers as a list in evaluation order, each with its
 * params, output shape and weight count for a sample input (from the
 * server's POST /api/layers/shapes, asked again a moment after each change),
 * and the layer the trace stopped at marked with the server's message. A
 * straight chain is edited here; anything else is listed read-only and
 * edited as raw JSON.
 */
export function LayerEditor({ nodeId, value, onChange, onClose }: LayerEditorProps) {
  const locale = useLocale(); // and re-render in the chosen language
  const serverTypes = useLayerStore((s) => s.types);
  const types = useMemo(() => serverTypes.map((d) => localizeLayerType(d, locale)), [serverTypes, locale]);
  const typesStatus = useLayerStore((s) => s.typesStatus);
  const parsed = useMemo(() => parseSpec(value), [value]);
  const chain = useMemo(() => (parsed.ok ? chainOf(parsed.spec) : null), [parsed]);
  const [raw, setRaw] = useState(!parsed.ok);
  const [shapeText, setShapeText] = useState(() => {
    const nodes = useDocument.getState().nodes.map((n) => ({ type: n.data.nodeType, params: n.data.params }));
    return guessInputShape(nodes, parsed.ok ? parsed.spec : null).join(', ');
  });
  const inputShape = parseShapeText(shapeText);
  const shapeKey = inputShape?.join(',') ?? '';
  const [trace, setTrace] = useState<ShapeTraceResponse | null>(null);
  const [traceProblem, setTraceProblem] = useState<string | null>(null);
  const [computing, setComputing] = useState(false);
  const [selected, setSelected] = useState<number | null>(null);
  const dialog = useRef<HTMLDivElement>(null);

  useEffect(() => {
    void useLayerStore.getState().loadTypes();
    dialog.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  // Shapes: asked a moment after the spec or the sample stops changing; an older answer never wins.
  useEffect(() => {
    if (!parsed.ok || !inputShape) return;
    const abort = new AbortController();
    setComputing(true);
    const timer = window.setTimeout(() => {
      useLayerStore
        .getState()
        .traceShapes(parsed.spec, inputShape, abort.signal)
        .then((r) => {
          setTrace(r);
          setTraceProblem(null);
        })
        .catch((e: unknown) => {
          if (abort.signal.aborted) return;
          setTrace(null);
          setTraceProblem(e instanceof Error ? e.message : String(e));
        })
        .finally(() => {
          if (!abort.signal.aborted) setComputing(false);
        });
    }, TRACE_DELAY_MS);
    return () => {
      window.clearTimeout(timer);
      abort.abort();
      setComputing(false);
    };
    // The spec's text and the shape's text are what change; the parsed objects are derived from them.
  }, [parsed, shapeKey]);

  const byType = useMemo(() => new Map(types.map((d) => [d.type, d])), [types]);
  const traced = new Map((trace?.nodes ?? []).map((n) => [n.id, n]));
  const errorId = trace?.error?.node_id ?? null;

  const commit = (next: Chain) => onChange(specValue(specOfChain(next), value));

  const rowOf = (layer: SpecNode, index: number, editable: boolean) => {
    const shape = traced.get(layer.id);
    const failed = errorId === layer.id;
    return (
      <LayerRow
        key={`${layer.id}:${index}`}
        index={index}
        layer={layer}
        def={byType.get(layer.type)}
        shape={shape?.output_shape ?? null}
        params={shape?.params ?? null}
        error={failed ? (trace?.error?.message ?? null) : null}
        errorParam={failed ? (trace?.error?.param ?? null) : null}
        editable={editable}
        selected={selected === index}
        last={chain ? index === chain.layers.length - 1 : true}
        onSelect={() => setSelected(index)}
        onParam={(name, v) => chain && commit(setLayerParam(chain, index, name, v))}
        onMove={(delta) => {
          if (!chain) return;
          commit(moveLayer(chain, index, delta));
          setSelected(index + delta);
        }}
        onRemove={() => {
          if (!chain) return;
          commit(removeLayer(chain, index));
          setSelected(null);
        }}
      />
    );
  };

  // A spec that is not a chain: its nodes in the server's evaluation order when known.
  const readOnlyNodes = (): SpecNode[] => {
    if (!parsed.ok) return [];
    const inner = parsed.spec.nodes.filter((n) => n.type !== 'Input' && n.type !== 'Output');
    if (!trace) return inner;
    const order = new Map(trace.nodes.map((n, i) => [n.id, i]));
    return [...inner].sort((a, b) => (order.get(a.id) ?? 1e9) - (order.get(b.id) ?? 1e9));
  };

  const failedNodeShown =
    errorId !== null && parsed.ok && parsed.spec.nodes.some((n) => n.id === errorId && n.type !== 'Input' && n.type !== 'Output');

  return (
    <div className="dialog-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div
        className="dialog layer-editor"
        role="dialog"
        aria-modal="true"
        aria-label={t('layers.title', { node: nodeId })}
        data-testid="layer-editor"
        data-computing={computing ? 'true' : 'false'}
        tabIndex={-1}
        ref={dialog}
      >
        <header>
          <h2>{t('layers.title', { node: nodeId })}</h2>
          <button type="button" className="icon" data-testid="layer-editor-close" onClick={onClose} aria-label={t('layers.close')}>
            ×
          </button>
        </header>

        <div className="layer-toolbar">
          <label className={`layer-input-shape${inputShape ? '' : ' invalid'}`} title={t('layers.inputShapeHint')}>
            {t('layers.inputShape')}
            <input
              type="text"
              data-testid="layer-input-shape"
              value={shapeText}
              spellCheck={false}
              onChange={(e) => setShapeText(e.target.value)}
            />
          </label>
          {!inputShape && <span className="layer-problem">{t('layers.inputShapeBad')}</span>}
          <span className="layer-status muted">{computing ? t('layers.computing') : ''}</span>
          <button
            type="button"
            data-testid="layer-raw-toggle"
            aria-pressed={raw}
            title={t('layers.rawHint')}
            onClick={() => setRaw(!raw)}
          >
            {t('layers.raw')}
          </button>
        </div>

        {traceProblem && (
          <p className="layer-problem" role="alert" data-testid="layer-error">
            {t('layers.traceFailed', { error: traceProblem })}
          </p>
        )}
        {trace?.error && !failedNodeShown && (
          <p className="layer-problem" role="alert" data-testid="layer-error">
            {trace.error.message}
          </p>
        )}

        {raw || !parsed.ok ? (
          <RawSpec value={value} onChange={onChange} problem={parsed.ok ? null : parsed.error} />
        ) : (
          <>
            {!chain && <p className="muted">{t('layers.notChain')}</p>}
            <ol className="layer-list">
              <li className="layer-boundary muted">
                {t('layers.input')} · {inputShape ? formatShape([1, ...inputShape]) : t('layers.noShape')}
              </li>
              {chain && chain.layers.length === 0 && <li className="muted">{t('layers.empty')}</li>}
              {chain ? chain.layers.map((l, i) => rowOf(l, i, true)) : readOnlyNodes().map((l, i) => rowOf(l, i, false))}
              <li className="layer-boundary muted" data-testid="layer-total">
                {t('layers.output')} ·{' '}
                {trace?.output_shape
                  ? t('layers.total', { shape: formatShape(trace.output_shape), count: count(trace.total_params) })
                  : trace?.error?.node_id
                    ? t('layers.stopped', { node: trace.error.node_id })
                    : t('layers.noShape')}
              </li>
            </ol>
            {chain && (
              <AddLayer
                types={types}
                status={typesStatus}
                after={selected !== null && selected < chain.layers.length ? chain.layers[selected]!.id : null}
                onAdd={(def) => {
                  const after = selected !== null && selected < chain.layers.length ? selected : chain.layers.length - 1;
                  const params: Record<string, unknown> = {};
                  for (const p of def.params) if (p.required) params[p.name] = p.default;
                  const node: SpecNode = { id: newLayerId(chain, def.type), type: def.type };
                  if (Object.keys(params).length > 0) node.params = params;
                  commit(insertLayer(chain, after, node));
                  setSelected(after + 1);
                }}
              />
            )}
          </>
        )}
      </div>
    </div>
  );
}

interface LayerRowProps {
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

function LayerRow(p: LayerRowProps) {
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

/** What a param's text becomes: JSON when it reads as JSON (3, [3, 5], null, true), else the text itself ("same", "64,7,7"). */
export function layerParamFromText(def: LayerParamDefinition, text: string): { ok: true; value: unknown } | { ok: false } {
  const s = text.trim();
  if (s === '') return def.required ? { ok: false } : { ok: true, value: undefined };
  if (def.param_type === 'string') return { ok: true, value: text };
  try {
    return { ok: true, value: JSON.parse(s) as unknown };
  } catch {
    return { ok: true, value: s };
  }
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
  const [draft, setDraft] = useState(textOf(value));
  const [focused, setFocused] = useState(false);
  const [bad, setBad] = useState(false);
  useEffect(() => {
    if (!focused) {
      setDraft(textOf(value));
      setBad(false);
    }
  }, [value, focused]);
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
        value={draft}
        placeholder={def.required ? '' : textOf(def.default)}
        spellCheck={false}
        onFocus={() => setFocused(true)}
        onBlur={() => setFocused(false)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') (e.target as HTMLInputElement).blur();
        }}
        onChange={(e) => {
          setDraft(e.target.value);
          const r = layerParamFromText(def, e.target.value);
          setBad(!r.ok);
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

function AddLayer(p: {
  types: LayerTypeDefinition[];
  status: string;
  after: string | null;
  onAdd(def: LayerTypeDefinition): void;
}) {
  const layers = p.types.filter((d) => d.kind === 'layer');
  const [type, setType] = useState('ReLU');
  const def = layers.find((d) => d.type === type) ?? layers[0];
  if (p.status === 'failed') return <p className="layer-problem">{t('layers.typesFailed')}</p>;
  if (layers.length === 0) return <p className="muted">{t('layers.loadingTypes')}</p>;
  const categories = [...new Set(layers.map((d) => d.category))];
  return (
    <div className="layer-add">
      <label>
        {t('layers.addType')}
        <select data-testid="layer-add-type" value={def?.type ?? ''} onChange={(e) => setType(e.target.value)}>
          {categories.map((c) => (
            <optgroup key={c} label={LAYER_CATEGORY_LABEL[c] ? t(LAYER_CATEGORY_LABEL[c]) : c}>
              {layers
                .filter((d) => d.category === c)
                .map((d) => (
                  <option key={d.type} value={d.type}>
                    {d.type}
                  </option>
                ))}
            </optgroup>
          ))}
        </select>
      </label>
      <button type="button" data-testid="layer-add" disabled={!def} onClick={() => def && p.onAdd(def)}>
        {p.after ? t('layers.add', { layer: p.after }) : t('layers.addFirst')}
      </button>
    </div>
  );
}

/** The spec as JSON text; only text that parses reaches the graph. */
function RawSpec(p: { value: unknown; onChange(value: unknown): void; problem: string | null }) {
  const text = typeof p.value === 'string' ? p.value : JSON.stringify(p.value, null, 2);
  const [draft, setDraft] = useState(text);
  const [error, setError] = useState<string | null>(null);
  const [focused, setFocused] = useState(false);
  useEffect(() => {
    if (!focused) {
      setDraft(text);
      setError(null);
    }
  }, [text, focused]);
  return (
    <div className="layer-raw">
      {p.problem && <p className="layer-problem">{t('layers.notSpec', { error: p.problem })}</p>}
      <textarea
        data-testid="layer-raw"
        value={draft}
        rows={18}
        spellCheck={false}
        onFocus={() => setFocused(true)}
        onBlur={() => setFocused(false)}
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
