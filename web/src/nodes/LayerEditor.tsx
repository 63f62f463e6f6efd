import { useEffect, useMemo, useRef, useState } from 'react';
import { createPortal } from 'react-dom';
import type { ShapeTraceResponse } from '../api/layers';
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
import { t, useLocale } from '../i18n';
import { localizeLayerType } from '../i18n/nodeText';
import { useDocument } from '../store/document';
import { useLayerStore } from '../store/layerStore';
import '../styles/layers.css';
import { AddLayer } from './AddLayer';
import { count, LayerRow } from './LayerRow';
import { RawSpec } from './RawSpec';

/** How long the spec must stay unchanged before its shapes are asked for. */
const TRACE_DELAY_MS = 300;

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
  const shapeKey = parseShapeText(shapeText)?.join(',') ?? '';
  /** The sample's sizes (null when the text is not a shape): the same array while the sizes stay the same. */
  const inputShape = useMemo(() => (shapeKey ? shapeKey.split(',').map(Number) : null), [shapeKey]);
  const [trace, setTrace] = useState<ShapeTraceResponse | null>(null);
  const [traceProblem, setTraceProblem] = useState<string | null>(null);
  /** The spec and sample the shown trace (or its problem) answers. */
  const [answered, setAnswered] = useState<{ spec: typeof parsed; shape: number[] } | null>(null);
  const computing = parsed.ok && inputShape !== null && (answered?.spec !== parsed || answered.shape !== inputShape);
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
          if (!abort.signal.aborted) setAnswered({ spec: parsed, shape: inputShape });
        });
    }, TRACE_DELAY_MS);
    return () => {
      window.clearTimeout(timer);
      abort.abort();
    };
  }, [parsed, inputShape]);

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
