// Memory plans (POST /api/graph/plan): each tab's latest plan, kept with the
// key of the graph and device it was made for (so whether it still describes
// the graph is a comparison), and the one plan under way: a plan trains a few
// steps on the server, so it takes seconds, and one runs at a time.
import { create } from 'zustand';
import * as api from '../api';
import type { GraphJson, MemoryPlan, PlanOptions, PlanResponse } from '../api/types';
import { planKey, suggestedOption } from '../graph/memoryPlan';
import { t } from '../i18n';
import { useDocument } from './document';
import { describeError, useMessages, type NewMessage } from './messages';
import { formatBytes } from './serverRows';
import { exampleOf } from './url';

/** The share of the device's memory a plan keeps free unless told otherwise. */
export const DEFAULT_MARGIN = 0.1;

/** A tab's latest plan and what it was made for. */
export interface TabPlan {
  response: PlanResponse;
  /** planKey() of the graph and device it was made for. */
  key: string;
  /** The device menu's choice it was made for ("auto" included). */
  device: string;
  margin: number;
}

interface MemoryPlanData {
  plans: Record<number, TabPlan>;
  /** Why a tab's last plan failed, in words (until the next one). */
  errors: Record<number, string>;
  /** The tab whose plan is under way; null when none is. */
  planning: number | null;
  /** The effective batch a tab's options should keep (absent: the graph's own). */
  targets: Record<number, number>;
  /** The TrainingLoop whose Memory section should come into view (after the toolbar's Plan memory); null: none. */
  focusNode: string | null;
}

export interface MemoryPlanState extends MemoryPlanData {
  /** Plans the shown graph on the device menu's device; with `focus`, shows the first TrainingLoop's Memory section. */
  planShown(focus: boolean): Promise<void>;
  /** Tab `tab`'s plan when it was made for `graph` on `device` as they are now; else null. */
  freshPlan(tab: number, graph: GraphJson, device: string): TabPlan | null;
  setTarget(tab: number, target: number | null): void;
  /** The Memory section of `focusNode` came into view. */
  focusDone(): void;
  /** Tab `tab` closed or holds another graph: its plan goes. */
  forgetTab(tab: number): void;
}

export const initialMemoryPlan = (): MemoryPlanData => ({ plans: {}, errors: {}, planning: null, targets: {}, focusNode: null });

const without = <T>(r: Record<number, T>, key: number): Record<number, T> => {
  if (!(key in r)) return r;
  const out = { ...r };
  delete out[key];
  return out;
};

/** The words for a plan that could not be made. */
function planFailure(e: unknown): string {
  if (e instanceof api.ApiError) {
    if (e.status === 503) return t('plan.busy');
    if (e.status === 404 || e.status === 405) return t('plan.unsupported');
    if (e.status === 400 || e.status === 422) return t('plan.invalid', { error: e.message });
  }
  return t('plan.failed', { error: describeError(e) });
}

/** One TrainingLoop's plan in a line: predicted of available on the device, and whether it fits. */
export function planSummary(p: MemoryPlan): string {
  return t('plan.done', {
    node: p.node_id,
    predicted: formatBytes(p.predicted_peak_bytes),
    available: formatBytes(p.available_bytes),
    device: p.device,
    verdict: p.fits ? t('plan.fits') : t('plan.noFit'),
  });
}

/** What Run says before it starts when a fresh plan predicts that a TrainingLoop will not fit: the best fitting option. */
export function noFitWarnings(plan: PlanResponse): NewMessage[] {
  return plan.plans
    .filter((p) => !p.fits)
    .map((p) => {
      const best = suggestedOption(p);
      const suggestion = best
        ? t('plan.suggest', {
            precision: best.precision,
            micro: best.micro_batch,
            steps: best.accumulate_steps,
            peak: formatBytes(best.predicted_peak_bytes),
          })
        : t('plan.noSuggestion');
      const text = `${t('plan.runNoFit', {
        node: p.node_id,
        predicted: formatBytes(p.predicted_peak_bytes),
        available: formatBytes(p.available_bytes),
        device: p.device,
      })} ${suggestion}`;
      return { level: 'warning', text, nodeId: p.node_id };
    });
}

export const useMemoryPlan = create<MemoryPlanState>()((set, get) => ({
  ...initialMemoryPlan(),

  async planShown(focus) {
    const messages = useMessages.getState();
    if (get().planning !== null) {
      messages.toast('info', t('plan.already'));
      return;
    }
    const doc = useDocument.getState();
    const tab = doc.activeTab;
    const graph = doc.exportGraph();
    const device = doc.device;
    const margin = DEFAULT_MARGIN;
    const example = exampleOf(doc.source);
    const target = get().targets[tab];
    const options: PlanOptions = {
      margin,
      device,
      ...(target ? { target_effective_batch: target } : {}),
      ...(example ? { example } : {}),
    };
    set((s) => ({ planning: tab, errors: without(s.errors, tab) }));
    // The TrainingLoop shown (the selected one, else the first) shows the plan under way, then its result.
    if (focus) {
      const selected = doc.nodes.find((n) => n.id === doc.selectedId);
      const loop = selected?.data.nodeType === 'TrainingLoop' ? selected : doc.nodes.find((n) => n.data.nodeType === 'TrainingLoop');
      if (loop) {
        if (loop !== selected) doc.select(loop.id);
        set({ focusNode: loop.id });
      }
    }
    try {
      const response = await api.planGraph(graph, options);
      const plans = Array.isArray(response?.plans) ? response.plans : [];
      set((s) => ({ plans: { ...s.plans, [tab]: { response: { ...response, plans }, key: planKey(graph, device), device, margin } } }));
      if (plans.length === 0) {
        messages.toast('info', t('plan.noLoops'));
        messages.say('info', t('plan.noLoops'));
        return;
      }
      messages.sayAll([
        ...(response.warnings ?? []).map((w): NewMessage => ({ level: 'warning', text: w })),
        ...plans.map((p): NewMessage => ({ level: p.fits ? 'info' : 'warning', text: planSummary(p), nodeId: p.node_id })),
      ]);
      const notFitting = plans.filter((p) => !p.fits).length;
      messages.toast(notFitting ? 'warning' : 'info', notFitting ? t('plan.toastNoFit', { count: notFitting }) : t('plan.toastFits'));
      const now = useDocument.getState();
      if (focus && now.activeTab === tab && !plans.some((p) => p.node_id === now.selectedId)) {
        const first = plans.find((p) => now.nodes.some((n) => n.id === p.node_id));
        if (first) {
          now.select(first.node_id);
          set({ focusNode: first.node_id });
        }
      }
    } catch (e) {
      const text = planFailure(e);
      set((s) => ({ errors: { ...s.errors, [tab]: text } }));
      messages.toast('error', text);
      messages.say('error', text);
    } finally {
      set({ planning: null });
    }
  },

  freshPlan(tab, graph, device) {
    const plan = get().plans[tab];
    return plan && plan.key === planKey(graph, device) ? plan : null;
  },

  setTarget(tab, target) {
    set((s) => ({ targets: target && target > 0 ? { ...s.targets, [tab]: target } : without(s.targets, tab) }));
  },

  focusDone() {
    if (get().focusNode !== null) set({ focusNode: null });
  },

  forgetTab(tab) {
    set((s) => ({ plans: without(s.plans, tab), errors: without(s.errors, tab), targets: without(s.targets, tab) }));
  },
}));
