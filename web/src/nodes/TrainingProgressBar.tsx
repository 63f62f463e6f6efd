import type { TrainingProgress } from '../store/runReducer';
import { useT } from '../i18n';

const fmt = (n: number | null, digits = 4) => (n === null ? '–' : n.toPrecision(digits));

/** TrainingLoop's progress on its node: epoch x/y, step, speed, loss. */
export function TrainingProgressBar({ progress: p, running }: { progress: TrainingProgress | null; running: boolean }) {
  const t = useT();
  if (!p)
    return (
      <div className="train-progress idle" data-testid="training-progress" data-fraction="0">
        <div className="bar" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={0}>
          <div className="fill" style={{ width: 0 }} />
        </div>
        <div className="train-line">
          <span>{t('train.notStarted')}</span>
        </div>
      </div>
    );
  const pct = Math.round(p.fraction * 100);
  return (
    <div className="train-progress" data-testid="training-progress" data-fraction={p.fraction.toFixed(3)}>
      <div className="bar" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct}>
        <div className={`fill${running ? ' running' : ''}`} style={{ width: `${pct}%` }} />
      </div>
      <div className="train-line">
        <span>{t('train.epoch', { epoch: p.epoch || 0, total: p.totalEpochs || '?' })}</span>
        {p.totalBatches > 0 && <span>{t('train.batch', { batch: p.batch, total: p.totalBatches })}</span>}
        <span>{t('train.step', { step: p.step })}</span>
      </div>
      <div className="train-line">
        <span>{t('train.loss', { loss: fmt(p.loss) })}</span>
        {p.valLoss !== null && <span>{t('train.val', { loss: fmt(p.valLoss) })}</span>}
        {p.samplesPerS !== null && <span>{t('train.speed', { rate: Math.round(p.samplesPerS).toLocaleString('en') })}</span>}
      </div>
    </div>
  );
}
