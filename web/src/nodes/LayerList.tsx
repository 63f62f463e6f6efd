// The layer editor's list: the sample input, one row per layer in
// evaluation order (editable when the spec is a chain), and the model's
// output shape and weights.
import type { LayerTypeDefinition, ShapeTraceResponse } from '../api/layers';
import {
  formatShape,
  innerNodes,
  moveLayer,
  removeLayer,
  setLayerParam,
  type Chain,
  type LayerSpec,
  type SpecNode,
} from '../graph/layerSpec';
import { t } from '../i18n';
import { count, LayerRow } from './LayerRow';

interface LayerListProps {
  spec: LayerSpec;
  /** The spec as a chain, or null when it is not one (then listed read-only). */
  chain: Chain | null;
  types: LayerTypeDefinition[];
  inputShape: number[] | null;
  trace: ShapeTraceResponse | null;
  selected: number | null;
  onSelect(index: number | null): void;
  onCommit(next: Chain): void;
}

/** A spec that is not a chain: its layers in the server's evaluation order when known. */
function readOnlyNodes(spec: LayerSpec, trace: ShapeTraceResponse | null): SpecNode[] {
  const inner = innerNodes(spec);
  if (!trace) return inner;
  const order = new Map(trace.nodes.map((n, i) => [n.id, i]));
  return [...inner].sort((a, b) => (order.get(a.id) ?? 1e9) - (order.get(b.id) ?? 1e9));
}

export function LayerList({ spec, chain, types, inputShape, trace, selected, onSelect, onCommit }: LayerListProps) {
  const byType = new Map(types.map((d) => [d.type, d]));
  const traced = new Map((trace?.nodes ?? []).map((n) => [n.id, n]));
  const errorId = trace?.error?.node_id ?? null;

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
        onSelect={() => onSelect(index)}
        onParam={(name, v) => chain && onCommit(setLayerParam(chain, index, name, v))}
        onMove={(delta) => {
          if (!chain) return;
          onCommit(moveLayer(chain, index, delta));
          onSelect(index + delta);
        }}
        onRemove={() => {
          if (!chain) return;
          onCommit(removeLayer(chain, index));
          onSelect(null);
        }}
      />
    );
  };

  return (
    <ol className="layer-list">
      <li className="layer-boundary muted">
        {t('layers.input')} · {inputShape ? formatShape([1, ...inputShape]) : t('layers.noShape')}
      </li>
      {chain && chain.layers.length === 0 && <li className="muted">{t('layers.empty')}</li>}
      {chain ? chain.layers.map((l, i) => rowOf(l, i, true)) : readOnlyNodes(spec, trace).map((l, i) => rowOf(l, i, false))}
      <li className="layer-boundary muted" data-testid="layer-total">
        {t('layers.output')} ·{' '}
        {trace?.output_shape
          ? t('layers.total', { shape: formatShape(trace.output_shape), count: count(trace.total_params) })
          : trace?.error?.node_id
            ? t('layers.stopped', { node: trace.error.node_id })
            : t('layers.noShape')}
      </li>
    </ol>
  );
}
