// The Memory section's options: one row per way to train, with Apply.
import type { MemoryPlan, PlanOption } from '../api/types';
import { bestOption, optionEdits, type ParamEdit } from '../graph/memoryPlan';
import { useT } from '../i18n';
import { applyPlanOption } from '../store/editor';
import { formatBytes } from '../store/serverRows';

/** The options table: one row per way to train, with Apply (one undo step). */
export function OptionsTable({ plan, pending }: { plan: MemoryPlan; pending: (edits: ParamEdit[]) => boolean }) {
  const t = useT();
  const best = bestOption(plan);
  const source = plan.batch_source?.node_id ? `${plan.batch_source.node_id}.${plan.batch_source.param}` : '—';
  return (
    <div className="memory-table-wrap">
      <table className="memory-options" data-testid="memory-options">
        <thead>
          <tr>
            <th scope="col">{t('plan.col.precision')}</th>
            <th scope="col" title={t('plan.col.microHint', { source })}>
              {t('plan.col.micro')}
            </th>
            <th scope="col" title={t('plan.col.stepsHint')}>
              {t('plan.col.steps')}
            </th>
            <th scope="col" title={t('plan.col.effectiveHint')}>
              {t('plan.col.effective')}
            </th>
            <th scope="col" title={t('plan.col.peakHint')}>
              {t('plan.col.peak')}
            </th>
            <th scope="col" title={t('plan.col.fits')} aria-label={t('plan.col.fits')}>
              ✓
            </th>
            <th scope="col" aria-label={t('plan.apply')} />
          </tr>
        </thead>
        <tbody>
          {plan.options.map((o: PlanOption, i) => {
            const edits = optionEdits(plan, o);
            const current = edits !== null && !pending(edits);
            const settings = edits?.map((e) => `${e.nodeId}.${e.param} = ${String(e.value)}`).join(', ') ?? '';
            return (
              <tr
                key={i}
                data-testid={`memory-option-${i}`}
                data-fits={o.fits}
                data-current={current}
                className={[current ? 'current' : '', o === best ? 'best' : ''].filter(Boolean).join(' ') || undefined}
                title={current ? t('plan.currentRow') : undefined}
              >
                <td>{o.precision}</td>
                <td className="num">{o.micro_batch}</td>
                <td className="num">{o.accumulate_steps}</td>
                <td className="num">{o.effective_batch}</td>
                <td className="num">{formatBytes(o.predicted_peak_bytes)}</td>
                <td className={o.fits ? 'fit-yes' : 'fit-no'} aria-label={o.fits ? t('plan.fits') : t('plan.noFit')}>
                  {o.fits ? '✓' : '✗'}
                </td>
                <td>
                  <button
                    type="button"
                    className="memory-apply"
                    data-testid={`memory-apply-${i}`}
                    disabled={edits === null || current}
                    title={edits === null ? t('plan.applyNoSource') : t('plan.applyHint', { settings })}
                    onClick={() => applyPlanOption(plan, o)}
                  >
                    {t('plan.apply')}
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
