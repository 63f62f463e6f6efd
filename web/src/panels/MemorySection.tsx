// TrainingLoop's Memory section in the side panel: the memory plan's
// predicted peak as a bar against the device's memory (weights, gradients,
// optimizer state, other fixed bytes, activations; the margin kept free; the
// measured peak after a run), the options table with Apply, and the plan button.
import { useEffect, useMemo, useRef, type RefObject } from 'react';
import type { MemoryPlan } from '../api/types';
import { flowToGraph } from '../graph/graphJson';
import { editsPending, measuredPeak, planKey, type ParamEdit } from '../graph/memoryPlan';
import { useT } from '../i18n';
import { useCatalogue } from '../store/catalogue';
import { useDocument } from '../store/document';
import { useMemoryPlan } from '../store/memoryPlan';
import { useShownRun } from '../store/runSession';
import { formatBytes } from '../store/serverRows';
import { MemoryBarView } from './MemoryBar';
import { OptionsTable } from './MemoryOptions';
import '../styles/memory.css';

type SectionState = 'none' | 'planning' | 'ready' | 'stale' | 'error';

/** The shown tab's plan for TrainingLoop `nodeId`, whether it is still fresh, and the section's state. */
function useNodePlan(nodeId: string) {
  const tab = useDocument((s) => s.activeTab);
  const meta = useDocument((s) => s.meta);
  const nodes = useDocument((s) => s.nodes);
  const edges = useDocument((s) => s.edges);
  const device = useDocument((s) => s.device);
  const defs = useCatalogue((s) => s.defs);
  const tabPlan = useMemoryPlan((s) => s.plans[tab]);
  const error = useMemoryPlan((s) => s.errors[tab]);
  const planning = useMemoryPlan((s) => s.planning);
  const peaks = useShownRun((r) => r.facts[nodeId]?.peakMemory);

  const key = useMemo(() => planKey(flowToGraph(meta, nodes, edges), device), [meta, nodes, edges, device]);
  const plan = tabPlan?.response.plans.find((p) => p.node_id === nodeId);
  const stale = tabPlan !== undefined && tabPlan.key !== key;
  const busy = planning !== null;
  const state: SectionState = busy && planning === tab ? 'planning' : error ? 'error' : plan ? (stale ? 'stale' : 'ready') : 'none';
  return {
    tab,
    device,
    tabPlan,
    plan,
    error,
    stale,
    busy,
    state,
    measured: plan ? measuredPeak(peaks, plan.device) : null,
    pending: (edits: ParamEdit[]) => editsPending(edits, nodes, defs),
  };
}

/** Scrolls the section into view when the toolbar's Plan memory asks for this node. */
function useScrollWhenFocused(nodeId: string, section: RefObject<HTMLElement | null>) {
  const focus = useMemoryPlan((s) => s.focusNode === nodeId);
  useEffect(() => {
    if (!focus) return;
    section.current?.scrollIntoView?.({ block: 'start', behavior: 'smooth' });
    useMemoryPlan.getState().focusDone();
  }, [focus, section]);
}

/** Plan (again), and the target effective batch for the next plan. */
function PlanActions({ tab, busy, planned, placeholder }: { tab: number; busy: boolean; planned: boolean; placeholder: string }) {
  const t = useT();
  const ready = useCatalogue((s) => s.status === 'ready');
  const target = useMemoryPlan((s) => s.targets[tab]);
  return (
    <div className="memory-actions">
      <button
        type="button"
        data-testid="memory-plan"
        onClick={() => void useMemoryPlan.getState().planShown(false)}
        disabled={busy || !ready}
        title={t('toolbar.planHint')}
      >
        {busy ? t('toolbar.planning') : planned ? t('plan.again') : t('toolbar.plan')}
      </button>
      <label className="memory-target" title={t('plan.targetHint')}>
        <span>{t('plan.target')}</span>
        <input
          type="number"
          min={1}
          step={1}
          data-testid="memory-target"
          value={target ?? ''}
          placeholder={placeholder}
          onChange={(e) => useMemoryPlan.getState().setTarget(tab, e.target.value === '' ? null : Math.floor(Number(e.target.value)))}
        />
      </label>
    </div>
  );
}

/** The plan for the node: stale or not, the verdict, the bar, the device's memory, the measured peak, the options and the notes. */
function PlanDetails(p: { plan: MemoryPlan; margin: number; stale: boolean; measured: number | null; pending(edits: ParamEdit[]): boolean }) {
  const t = useT();
  const { plan, margin, measured } = p;
  return (
    <>
      {p.stale && (
        <p className="memory-stale" data-testid="memory-stale">
          {t('plan.stale')}
        </p>
      )}
      <p className={`memory-verdict ${plan.fits ? 'fits' : 'nofit'}`} data-testid="memory-verdict" data-fits={plan.fits}>
        {t('plan.predicted', { predicted: formatBytes(plan.predicted_peak_bytes), available: formatBytes(plan.available_bytes) })}
        {' · '}
        <strong>{plan.fits ? t('plan.fits') : t('plan.noFit')}</strong>
      </p>
      <MemoryBarView plan={plan} margin={margin} measured={measured} />
      <p className="muted memory-line">
        {t('plan.available', {
          available: formatBytes(plan.available_bytes),
          device: plan.device,
          source: plan.available_source,
          percent: Math.round(margin * 100),
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
          <OptionsTable plan={plan} pending={p.pending} />
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
  );
}

/** The Memory section of TrainingLoop `nodeId` (in the side panel). */
export function MemorySection({ nodeId }: { nodeId: string }) {
  const t = useT();
  const m = useNodePlan(nodeId);
  const { plan, tabPlan, error, state } = m;
  const section = useRef<HTMLElement>(null);
  useScrollWhenFocused(nodeId, section);

  return (
    <section className="memory" data-testid="memory" data-state={state} ref={section} aria-busy={state === 'planning'}>
      <h3>{t('plan.title')}</h3>
      <PlanActions tab={m.tab} busy={m.busy} planned={plan !== undefined} placeholder={plan ? String(plan.effective_batch) : ''} />
      {state === 'planning' && (
        <p className="muted memory-planning" role="status">
          {t('plan.planning', { device: m.device })}
        </p>
      )}
      {error && state !== 'planning' && (
        <p className="memory-error" role="alert">
          {error}
        </p>
      )}
      {!plan && !error && state !== 'planning' && <p className="muted">{tabPlan ? t('plan.notCovered') : t('plan.intro')}</p>}
      {plan && tabPlan && (
        <PlanDetails plan={plan} margin={tabPlan.margin} stale={m.stale} measured={m.measured} pending={m.pending} />
      )}
    </section>
  );
}
