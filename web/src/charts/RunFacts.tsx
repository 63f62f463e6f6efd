import { t, useLocale } from '../i18n';
import type { RunFacts as Facts } from '../store/trainSeries';

/** "512 B", "12.0 KiB", "306.7 MiB", "1.23 GiB" (as the server's reports write them). */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(u === 3 ? 2 : 1)} ${units[u]}`;
}

/** The shown TrainingLoop's precision, effective batch, speed and peak memory per device. */
export function RunFacts({ facts }: { facts: Facts | undefined }) {
  useLocale(); // re-render in the chosen language
  if (!facts)
    return (
      <aside className="run-facts" data-testid="run-facts" aria-label={t('facts.label')}>
        <p className="muted">{t('facts.none')}</p>
      </aside>
    );
  const fellBack = facts.precision && facts.precisionRequested && facts.precision !== facts.precisionRequested;
  return (
    <aside className="run-facts" data-testid="run-facts" aria-label={t('facts.label')}>
      <dl>
        {facts.device && (
          <>
            <dt>{t('facts.device')}</dt>
            <dd data-testid="fact-device">{facts.device}</dd>
          </>
        )}
        {facts.precision && (
          <>
            <dt>{t('facts.precision')}</dt>
            <dd data-testid="fact-precision" className={fellBack ? 'warn' : undefined} title={facts.precisionReason}>
              {fellBack ? t('facts.precisionFellBack', { used: facts.precision, requested: facts.precisionRequested! }) : facts.precision}
              {fellBack && facts.precisionReason && <small className="fact-reason">{facts.precisionReason}</small>}
            </dd>
          </>
        )}
        {facts.effectiveBatchSize !== undefined && (
          <>
            <dt>{t('facts.batch')}</dt>
            <dd data-testid="fact-batch">
              {facts.batchSize !== undefined && facts.accumulateSteps !== undefined
                ? t('facts.batchValue', { effective: facts.effectiveBatchSize, micro: facts.batchSize, steps: facts.accumulateSteps })
                : facts.effectiveBatchSize}
            </dd>
          </>
        )}
        {facts.samplesPerS !== undefined && (
          <>
            <dt>{t('facts.speed')}</dt>
            <dd data-testid="fact-speed">{Math.round(facts.samplesPerS).toLocaleString('en')}</dd>
          </>
        )}
        {facts.peakMemory && (
          <>
            <dt>{t('facts.memory')}</dt>
            <dd data-testid="fact-memory">
              {Object.entries(facts.peakMemory).map(([device, bytes]) => (
                <span key={device} className="fact-memory">
                  {device} {formatBytes(bytes)}
                </span>
              ))}
            </dd>
          </>
        )}
      </dl>
    </aside>
  );
}
