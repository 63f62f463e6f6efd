// The layer editor's bar: the sample input's sizes, whether shapes are being
// asked for, and the raw JSON toggle.
import { t } from '../i18n';

interface LayerToolbarProps {
  shapeText: string;
  onShapeText(text: string): void;
  /** The sizes the text reads as, or null when it is not a shape. */
  inputShape: number[] | null;
  computing: boolean;
  raw: boolean;
  onRaw(raw: boolean): void;
}

export function LayerToolbar({ shapeText, onShapeText, inputShape, computing, raw, onRaw }: LayerToolbarProps) {
  return (
    <div className="layer-toolbar">
      <label className={`layer-input-shape${inputShape ? '' : ' invalid'}`} title={t('layers.inputShapeHint')}>
        {t('layers.inputShape')}
        <input
          type="text"
          data-testid="layer-input-shape"
          value={shapeText}
          spellCheck={false}
          onChange={(e) => onShapeText(e.target.value)}
        />
      </label>
      {!inputShape && <span className="layer-problem">{t('layers.inputShapeBad')}</span>}
      <span className="layer-status muted">{computing ? t('layers.computing') : ''}</span>
      <button type="button" data-testid="layer-raw-toggle" aria-pressed={raw} title={t('layers.rawHint')} onClick={() => onRaw(!raw)}>
        {t('layers.raw')}
      </button>
    </div>
  );
}
