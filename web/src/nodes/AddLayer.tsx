// The layer editor's bar that adds a layer of a chosen type, the types
// grouped by the server's categories.
import { useState } from 'react';
import type { LayerTypeDefinition } from '../api/layers';
import { t, type MessageKey } from '../i18n';

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

export function AddLayer(p: {
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
