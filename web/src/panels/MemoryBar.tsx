// The Memory section's bar: the predicted peak's parts against the device's
// memory, the margin kept free, the measured peak, and a legend.
import type { MemoryPlan } from '../api/types';
import { memoryBar, SEGMENT_KEYS } from '../graph/memoryPlan';
import { useT } from '../i18n';
import { formatBytes } from '../store/serverRows';

const pct = (fraction: number) => `${(fraction * 100).toFixed(2)}%`;
/** A prediction under this share of the bar is drawn a second time on its own, so its parts can be seen. */
const ZOOM_BELOW = 0.1;

/** The bar: the breakdown's parts left to right, the margin hatched, the device's end and the measured peak marked. */
export function MemoryBarView({ plan, margin, measured }: { plan: MemoryPlan; margin: number; measured: number | null }) {
  const t = useT();
  const bar = memoryBar(plan, margin, measured);
  const percent = Math.round(margin * 100);
  return (
    <>
      <div
        className={`memory-bar${bar.over ? ' over' : ''}`}
        data-testid="memory-bar"
        data-predicted={plan.predicted_peak_bytes}
        data-available={plan.available_bytes}
        role="img"
        aria-label={t('plan.predicted', { predicted: formatBytes(plan.predicted_peak_bytes), available: formatBytes(plan.available_bytes) })}
      >
        {bar.usableAt !== null && bar.availableAt !== null && (
          <span
            className="memory-margin"
            style={{ left: pct(bar.usableAt), width: pct(bar.availableAt - bar.usableAt) }}
            title={t('plan.marginMark', { percent })}
          />
        )}
        {bar.segments.map((s) => (
          <span
            key={s.key}
            className={`memory-seg seg-${s.key}`}
            data-testid={`memory-seg-${s.key}`}
            data-bytes={s.bytes}
            style={{ left: pct(s.start), width: pct(s.width) }}
            title={`${t(`plan.segment.${s.key}`)}: ${formatBytes(s.bytes)}`}
          />
        ))}
        {bar.availableAt !== null && bar.availableAt < 1 && (
          <span className="memory-mark available" style={{ left: pct(bar.availableAt) }} />
        )}
        {bar.measuredAt !== null && (
          <span
            className="memory-mark measured"
            data-testid="memory-measured-mark"
            style={{ left: pct(bar.measuredAt) }}
            title={`${t('plan.measuredMark')}: ${formatBytes(measured ?? 0)}`}
          />
        )}
      </div>
      {bar.predictedAt < ZOOM_BELOW && bar.composition.length > 1 && (
        <div className="memory-zoom" data-testid="memory-zoom">
          <span className="muted">{t('plan.zoom')}</span>
          <div className="memory-bar small">
            {bar.composition.map((s) => (
              <span
                key={s.key}
                className={`memory-seg seg-${s.key}`}
                style={{ left: pct(s.start), width: pct(s.width) }}
                title={`${t(`plan.segment.${s.key}`)}: ${formatBytes(s.bytes)}`}
              />
            ))}
          </div>
        </div>
      )}
      <ul className="memory-legend">
        {SEGMENT_KEYS.map((key) => {
          const seg = bar.segments.find((s) => s.key === key);
          if (!seg) return null;
          return (
            <li key={key}>
              <span className={`memory-swatch seg-${key}`} />
              {t(`plan.segment.${key}`)} <span className="num">{formatBytes(seg.bytes)}</span>
            </li>
          );
        })}
        {bar.usableAt !== null && (
          <li>
            <span className="memory-swatch margin" />
            {t('plan.marginMark', { percent })}
          </li>
        )}
      </ul>
    </>
  );
}
