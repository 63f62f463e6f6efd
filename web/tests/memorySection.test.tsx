// @vitest-environment jsdom
// TrainingLoop's Memory section as a person sees it: the bar, the options
// table and Apply, the measured peak beside the prediction, a plan gone stale,
// the toolbar's Plan memory while a plan is under way, and the Chinese strings.
import './dom';
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MemoryPlan } from '../src/api/types';
import { planKey } from '../src/graph/memoryPlan';
import { setLocale } from '../src/i18n';
import { SidePanel } from '../src/panels/SidePanel';
import { Toolbar } from '../src/panels/Toolbar';
import { useCatalogue } from '../src/store/catalogue';
import { useDocument } from '../src/store/document';
import { openGraph, resetEditorForTests, setParam } from '../src/store/editor';
import { DEFAULT_MARGIN, useMemoryPlan } from '../src/store/memoryPlan';
import { useRunSession } from '../src/store/runSession';
import { defsByName, exampleGraphs, nodeDefs } from './helpers';
import { samplePlan, tightPlan } from './planFixtures';

const doc = () => useDocument.getState();
const params = (id: string) => doc().nodes.find((n) => n.id === id)!.data.params;

/** `plans` as the tab's plan, made for the graph as it is now. */
function givePlan(...plans: MemoryPlan[]) {
  const d = doc();
  useMemoryPlan.setState({
    plans: {
      [d.activeTab]: {
        response: { plans, fits: plans.every((p) => p.fits) },
        key: planKey(d.exportGraph(), d.device),
        device: d.device,
        margin: DEFAULT_MARGIN,
      },
    },
  });
}

beforeEach(async () => {
  resetEditorForTests();
  useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
  const [, json] = exampleGraphs().find(([p]) => p === 'examples/toy-mlp/graph.json')!;
  await openGraph(json, { kind: 'example', path: 'toy-mlp' });
  doc().setDevice('cpu');
  doc().select('train');
});
afterEach(() => {
  cleanup();
  act(() => setLocale('en'));
});

describe('the Memory section', () => {
  it('is on TrainingLoops only, and says what a plan does before there is one', () => {
    render(<SidePanel />);
    const memory = screen.getByTestId('memory');
    expect(memory.dataset.state).toBe('none');
    expect(memory.textContent).toContain('Predicts this TrainingLoop’s peak memory');
    act(() => doc().select('loader'));
    expect(screen.queryByTestId('memory')).toBeNull();
  });

  it('draws the prediction against the device’s memory in its parts, with the margin and the options', () => {
    givePlan(tightPlan());
    render(<SidePanel />);
    expect(screen.getByTestId('memory').dataset.state).toBe('ready');
    expect(screen.getByTestId('memory-verdict').textContent).toBe('predicted peak 12 GiB of 8.0 GiB · does not fit');
    const bar = screen.getByTestId('memory-bar');
    expect(bar.className).toContain('over');
    // 12 GiB is the whole bar: weights 1, gradients 1, optimizer state 2, activations 8 (no other fixed bytes).
    expect(screen.getByTestId('memory-seg-weights').style.width).toBe('8.33%');
    expect(screen.getByTestId('memory-seg-optimizer').style.left).toBe('16.67%');
    expect(screen.getByTestId('memory-seg-activations').style.width).toBe('66.67%');
    expect(screen.queryByTestId('memory-seg-otherFixed')).toBeNull();
    expect(screen.queryByTestId('memory-zoom')).toBeNull();
    expect(bar.querySelector('.memory-mark.available')).not.toBeNull();
    expect(screen.getByTestId('memory').textContent).toContain('8.0 GiB on cpu (available RAM (MemAvailable)); fits when the peak plus 10% fits');
    expect(screen.getByTestId('memory').textContent).toContain('now: fp32, micro-batch 32 × 1 steps = 32');

    const rows = within(screen.getByTestId('memory-options')).getAllByRole('row').slice(1);
    expect(rows.map((r) => [...r.querySelectorAll('td')].slice(0, 6).map((c) => c.textContent))).toEqual([
      ['fp32', '32', '1', '32', '12 GiB', '✗'],
      ['bf16', '32', '1', '32', '9.0 GiB', '✗'],
      ['fp32', '8', '4', '32', '6.0 GiB', '✓'],
      ['bf16', '16', '2', '32', '7.0 GiB', '✓'],
      ['bf16', '8', '1', '8', '5.0 GiB', '✓'],
    ]);
    // The graph trains as the first row now: its Apply has nothing to do; the suggested row is marked.
    expect(screen.getByTestId('memory-option-0').dataset.current).toBe('true');
    expect((screen.getByTestId('memory-apply-0') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('memory-option-3').className).toContain('best');
    expect(screen.getByTestId('memory-apply-3').title).toBe(
      'Set loader.batch_size = 16, train.accumulate_steps = 2, train.precision = bf16 (one undo step)',
    );
  });

  it('Apply changes the three params at once, one undo takes them back, and the plan is then stale', () => {
    givePlan(tightPlan());
    render(<SidePanel />);
    fireEvent.click(screen.getByTestId('memory-apply-3'));
    expect(params('loader').batch_size).toBe(16);
    expect(params('train')).toMatchObject({ accumulate_steps: 2, precision: 'bf16' });
    expect(screen.getByTestId('memory').dataset.state).toBe('stale');
    expect(screen.getByTestId('memory-stale').textContent).toContain('changed since this plan');
    expect(screen.getByTestId('memory-option-3').dataset.current).toBe('true');
    act(() => doc().undo());
    expect(params('loader').batch_size).toBe(32);
    expect(params('train').accumulate_steps).toBeUndefined();
    expect(params('train').precision).toBeUndefined();
    expect(screen.getByTestId('memory').dataset.state).toBe('ready');
  });

  it('sets the measured peak of a run beside the prediction', () => {
    givePlan(samplePlan({ available_bytes: 4000 }));
    render(<SidePanel />);
    expect(screen.queryByTestId('memory-measured')).toBeNull();
    const tab = doc().activeTab;
    act(() =>
      useRunSession.setState((s) => ({ runs: { ...s.runs, [tab]: { ...s.runOf(tab), facts: { train: { peakMemory: { cpu: 2048 } } } } } })),
    );
    expect(screen.getByTestId('memory-measured').textContent).toBe('measured 2.0 KiB beside predicted 1.6 KiB');
    expect(screen.getByTestId('memory-measured-mark').style.left).toBe('51.2%');
    expect(screen.queryByTestId('memory-zoom')).toBeNull();
    // A prediction too small to see on the device's scale is also drawn on its own.
    act(() => givePlan(samplePlan()));
    expect(screen.getByTestId('memory-zoom').querySelectorAll('.memory-seg')).toHaveLength(5);
  });

  it('a setting change after the plan marks it stale; a plan that left this node out says so', () => {
    givePlan(samplePlan());
    render(<SidePanel />);
    act(() => setParam('train', 'epochs', 7));
    expect(screen.getByTestId('memory').dataset.state).toBe('stale');
    act(() => givePlan(samplePlan({ node_id: 'other' })));
    expect(screen.getByTestId('memory').textContent).toContain('The last plan did not cover this node.');
  });

  it('shows the plan under way on its button, the toolbar’s and as a status line', () => {
    render(
      <>
        <Toolbar />
        <SidePanel />
      </>,
    );
    expect(screen.getByTestId('plan-memory').textContent).toBe('Plan memory');
    act(() => useMemoryPlan.setState({ planning: doc().activeTab }));
    expect(screen.getByTestId('plan-memory').textContent).toBe('Planning…');
    expect((screen.getByTestId('plan-memory') as HTMLButtonElement).disabled).toBe(true);
    expect((screen.getByTestId('memory-plan') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('memory').dataset.state).toBe('planning');
    expect(screen.getByRole('status').textContent).toBe('Planning: training a few steps on cpu…');
  });

  it('speaks Traditional Chinese', () => {
    givePlan(tightPlan());
    act(() => setLocale('zh-TW'));
    render(<SidePanel />);
    expect(screen.getByTestId('memory').querySelector('h3')!.textContent).toBe('記憶體');
    expect(screen.getByTestId('memory-verdict').textContent).toBe('預測峰值 12 GiB／可用 8.0 GiB · 放不下');
    expect(screen.getByTestId('memory-apply-3').textContent).toBe('套用');
    expect(screen.getByTestId('memory').textContent).toContain('權重');
    expect(screen.getByTestId('memory').textContent).toContain('活化值');
  });
});
