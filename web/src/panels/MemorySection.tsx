// TrainingLoop's Memory section in the side panel: the memory plan's
// predicted peak as a bar against the device's memory (weights, gradients,
// optimizer state, other fixed bytes, activations; the margin kept free; the
// measured peak after a run), the options table with Apply, and the plan button.
import { useEffect, useMemo, useRef } from 'react';
import type { MemoryPlan, PlanOption } from '../api/types';
import { flowToGraph } from '../graph/graphJson';
import { bestOption, measuredPeak, memoryBar, optionEdits, planKey, SEGMENT_KEYS, type ParamEdit } from '../graph/memoryPlan';
import { useT } from '../i18n';
import { useCatalogue } from '../store/catalogue';
import { useDocument } from '../store/document';
import { applyPlanOption } from '../store/editor';
import { useMemoryPlan } from '../store/memoryPlan';
import { useShownRun } from '../store/runSession';
import { formatBytes } from '../store/serverRows';
import '../styles/memory.css';

const pct = (fraction: number) => `${(fraction * 100).toFixed(2)}%`;
/** A prediction under this share of the bar is drawn a second time on its own, so its parts can be seen. */
const ZOOM_BELOW = 0.1;

/** The bar: the breakdown's parts left to right, the margin hatched, the device's end and the measured peak marked. */
function MemoryBarView({ plan, margin, measured }: { plan: MemoryPlan; margin: number; measured: number | null }) {
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

/** The options table: one row per way to train, with Apply (one undo step). */
function OptionsTable({ plan, pending }: { plan: MemoryPlan; pending: (edits: ParamEdit[]) => boolean }) {
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

/** The Memory section of TrainingLoop `nodeId` (in the side panel). */
export function MemorySection({ nodeId }: { nodeId: string }) {
  const t = useT();
  const tab = useDocument((s) => s.activeTab);
  const meta = useDocument((s) => s.meta);
  const nodes = useDocument((s) => s.nodes);
  const edges = useDocument((s) => s.edges);
  const device = useDocument((s) => s.device);
  const defs = useCatalogue((s) => s.defs);
  const ready = useCatalogue((s) => s.status === 'ready');
  const tabPlan = useMemoryPlan((s) => s.plans[tab]);
  const error = useMemoryPlan((s) => s.errors[tab]);
  const planning = useMemoryPlan((s) => s.planning);
  const target = useMemoryPlan((s) => s.targets[tab]);
  const focus = useMemoryPlan((s) => s.focusNode === nodeId);
  const peaks = useShownRun((r) => r.facts[nodeId]?.peakMemory);
  const section = useRef<HTMLElement>(null);

  const key = useMemo(() => planKey(flowToGraph(meta, nodes, edges), device), [meta, nodes, edges, device]);
  useEffect(() => {
    if (!focus) return;
    section.current?.scrollIntoView?.({ block: 'start', behavior: 'smooth' });
    useMemoryPlan.getState().focusDone();
  }, [focus]);

  const plan = tabPlan?.response.plans.find((p) => p.node_id === nodeId);
  const stale = tabPlan !== undefined && tabPlan.key !== key;
  const measured = plan ? measuredPeak(peaks, plan.device) : null;
  const busy = planning !== null;
  const state = busy && planning === tab ? 'planning' : error ? 'error' : plan ? (stale ? 'stale' : 'ready') : 'none';

  /** Whether some edit would change the graph as it is now (a param's absent value is its default). */
  const pending = (edits: ParamEdit[]) =>
    edits.some((e) => {
      const node = nodes.find((n) => n.id === e.nodeId);
      if (!node) return true;
      const given = node.data.params[e.param];
      const value = given ?? defs[node.data.nodeType]?.params.find((p) => p.name === e.param)?.default;
      return String(value) !== String(e.value);
    });

  return (
    <section className="memory" data-testid="memory" data-state={state} ref={section} aria-busy={state === 'planning'}>
      <h3>{t('plan.title')}</h3>
      <div className="memory-actions">
        <button
          type="button"
          data-testid="memory-plan"
          onClick={() => void useMemoryPlan.getState().planShown(false)}
          disabled={busy || !ready}
          title={t('toolbar.planHint')}
        >
          {busy ? t('toolbar.planning') : plan ? t('plan.again') : t('toolbar.plan')}
        </button>
        <label className="memory-target" title={t('plan.targetHint')}>
          <span>{t('plan.target')}</span>
          <input
            type="number"
            min={1}
            step={1}
            data-testid="memory-target"
            value={target ?? ''}
            placeholder={plan ? String(plan.effective_batch) : ''}
            onChange={(e) => useMemoryPlan.getState().setTarget(tab, e.target.value === '' ? null : Math.floor(Number(e.target.value)))}
          />
        </label>
      </div>
      {state === 'planning' && (
        <p className="muted memory-planning" role="status">
          {t('plan.planning', { device })}
        </p>
      )}
      {error && state !== 'planning' && (
        <p className="memory-error" role="alert">
          {error}
        </p>
      )}
      {!plan && !error && state !== 'planning' && (
        <p className="muted">{tabPlan ? t('plan.notCovered') : t('plan.intro')}</p>
      )}
      {plan && tabPlan && (
        <>
          {stale && (
            <p className="memory-stale" data-testid="memory-stale">
              {t('plan.stale')}
            </p>
          )}
          <p className={`memory-verdict ${plan.fits ? 'fits' : 'nofit'}`} data-testid="memory-verdict" data-fits={plan.fits}>
            {t('plan.predicted', { predicted: formatBytes(plan.predicted_peak_bytes), available: formatBytes(plan.available_bytes) })}
            {' · '}
            <strong>{plan.fits ? t('plan.fits') : t('plan.noFit')}</strong>
          </p>
          <MemoryBarView plan={plan} margin={tabPlan.margin} measured={measured} />
          <p className="muted memory-line">
            {t('plan.available', {
              available: formatBytes(plan.available_bytes),
              device: plan.device,
              source: plan.available_source,
              percent: Math.round(tabPlan.margin * 100),
            })}
          </p>
          {measured !== null && (
            <p className="memory-line memory-measured" data-testid="memory-measured" data-measured={measured}>
              {t('plan.measured', { measured: formatBytes(measured), predicted: formatBytes(plan.predicted_peak_bytes) })}
            </p>
          )}
          <p className="memory-line">
            {t('plan.now', { precision: plan.precision, micro: plan.micro_batch, steps: plan.accumulate_steps, effective: plan.effective_batch })}
          </p>
          {plan.max_micro_batch !== null && plan.max_micro_batch > 0 && <p className="muted memory-line">{t('plan.maxMicro', { max: plan.max_micro_batch })}</p>}
          {plan.options.length > 0 && (
            <>
              <h4>{t('plan.options')}</h4>
              <OptionsTable plan={plan} pending={pending} />
            </>
          )}
          {plan.notes.length > 0 && (
            <ul className="memory-notes muted">
              {plan.notes.map((n, i) => (
                <li key={i}>{n}</li>
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}
