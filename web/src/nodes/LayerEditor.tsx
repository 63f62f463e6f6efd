import { useEffect, useMemo, useRef, useState, type RefObject } from 'react';
import { createPortal } from 'react-dom';
import type { ShapeTraceResponse } from '../api/layers';
import {
  chainOf,
  guessInputShape,
  innerNodes,
  insertLayer,
  newLayer,
  parseSpec,
  specOfChain,
  specValue,
  type Chain,
  type Parsed,
} from '../graph/layerSpec';
import { t, useLocale } from '../i18n';
import { localizeLayerType } from '../i18n/nodeText';
import { useDocument } from '../store/document';
import { useLayerStore } from '../store/layerStore';
import '../styles/layers.css';
import { AddLayer } from './AddLayer';
import { LayerList } from './LayerList';
import { LayerToolbar } from './LayerToolbar';
import { RawSpec } from './RawSpec';
import { useInputShape, useShapeTrace } from './useShapeTrace';

/** In the side panel, for SequentialModel's `layers`: opens the layer editor. */
export function LayerEditorLauncher(props: { nodeId: string; value: unknown; onChange(value: unknown): void }) {
  useLocale(); // re-render in the chosen language
  const [open, setOpen] = useState(false);
  const parsed = parseSpec(props.value);
  const layers = parsed.ok ? innerNodes(parsed.spec).length : 0;
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

/** The open graph's guess at the sample's sizes, as text. */
function initialShapeText(parsed: Parsed): string {
  const nodes = useDocument.getState().nodes.map((n) => ({ type: n.data.nodeType, params: n.data.params }));
  return guessInputShape(nodes, parsed.ok ? parsed.spec : null).join(', ');
}

/** On opening: the layer types asked for, the dialog focused, and Escape closes it. */
function useDialogOpened(dialog: RefObject<HTMLDivElement | null>, onClose: () => void) {
  useEffect(() => {
    void useLayerStore.getState().loadTypes();
    dialog.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [dialog, onClose]);
}

/** The trace's problem when no listed row shows it: the request failed, or it stopped outside the layers. */
function TraceProblems({ parsed, trace, problem }: { parsed: Parsed; trace: ShapeTraceResponse | null; problem: string | null }) {
  const errorId = trace?.error?.node_id ?? null;
  const failedNodeShown = errorId !== null && parsed.ok && innerNodes(parsed.spec).some((n) => n.id === errorId);
  return (
    <>
      {problem && (
        <p className="layer-problem" role="alert" data-testid="layer-error">
          {t('layers.traceFailed', { error: problem })}
        </p>
      )}
      {trace?.error && !failedNodeShown && (
        <p className="layer-problem" role="alert" data-testid="layer-error">
          {trace.error.message}
        </p>
      )}
    </>
  );
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
  const [shapeText, setShapeText] = useState(() => initialShapeText(parsed));
  const inputShape = useInputShape(shapeText);
  const { trace, problem, computing } = useShapeTrace(parsed, inputShape);
  const [selected, setSelected] = useState<number | null>(null);
  const dialog = useRef<HTMLDivElement>(null);
  useDialogOpened(dialog, onClose);

  const commit = (next: Chain) => onChange(specValue(specOfChain(next), value));
  const selectedInChain = chain !== null && selected !== null && selected < chain.layers.length ? selected : null;

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

        <LayerToolbar
          shapeText={shapeText}
          onShapeText={setShapeText}
          inputShape={inputShape}
          computing={computing}
          raw={raw}
          onRaw={setRaw}
        />
        <TraceProblems parsed={parsed} trace={trace} problem={problem} />

        {raw || !parsed.ok ? (
          <RawSpec value={value} onChange={onChange} problem={parsed.ok ? null : parsed.error} />
        ) : (
          <>
            {!chain && <p className="muted">{t('layers.notChain')}</p>}
            <LayerList
              spec={parsed.spec}
              chain={chain}
              types={types}
              inputShape={inputShape}
              trace={trace}
              selected={selected}
              onSelect={setSelected}
              onCommit={commit}
            />
            {chain && (
              <AddLayer
                types={types}
                status={typesStatus}
                after={selectedInChain !== null ? chain.layers[selectedInChain]!.id : null}
                onAdd={(def) => {
                  const after = selectedInChain ?? chain.layers.length - 1;
                  commit(insertLayer(chain, after, newLayer(chain, def)));
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
