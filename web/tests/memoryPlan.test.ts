// The memory plan: the bar's parts, the option suggested, Apply's edits (one
// undo step), when a plan is fresh, the plan request against a stubbed
// server, and Run's warning when a fresh plan predicts no fit.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { forgetToken } from '../src/api/auth';
import type { GraphJson, MemoryPlan, PlanResponse } from '../src/api/types';
import { bestOption, measuredPeak, memoryBar, optionEdits, planKey, suggestedOption } from '../src/graph/memoryPlan';
import { useCatalogue } from '../src/store/catalogue';
import { useDocument } from '../src/store/document';
import { applyPlanOption, openGraph, resetEditorForTests, setParam } from '../src/store/editor';
import { useMemoryPlan } from '../src/store/memoryPlan';
import { useMessages } from '../src/store/messages';
import { useRunSession } from '../src/store/runSession';
import { defsByName, exampleGraphs, nodeDefs } from './helpers';
import { samplePlan, tightPlan } from './planFixtures';

describe('the bar', () => {
  it('splits the prediction into weights, gradients, optimizer state, other fixed and activations, left to right', () => {
    const plan = samplePlan({ available_bytes: 4000 });
    const bar = memoryBar(plan, 0.1);
    expect(bar.scaleBytes).toBe(4000);
    expect(bar.segments.map((s) => [s.key, s.bytes])).toEqual([
      ['weights', 100],
      ['gradients', 100],
      ['optimizer', 200],
      ['otherFixed', 600],
      ['activations', 640],
    ]);
    expect(bar.segments.map((s) => s.start)).toEqual([0, 0.025, 0.05, 0.1, 0.25]);
    expect(bar.segments.at(-1)!.width).toBeCloseTo(0.16);
    expect(bar.predictedAt).toBeCloseTo(0.41);
    expect(bar.availableAt).toBe(1);
    // A plan fits when its peak × (1 + margin) fits: the margin starts at available / 1.1.
    expect(bar.usableAt).toBeCloseTo(1 / 1.1);
    expect(bar.measuredAt).toBeNull();
    expect(bar.over).toBe(false);
    // The same parts as shares of the prediction alone.
    expect(bar.composition.map((s) => s.start)).toEqual([0, 100 / 1640, 200 / 1640, 400 / 1640, 1000 / 1640]);
    expect(bar.composition.reduce((a, s) => a + s.width, 0)).toBeCloseTo(1);
  });

  it('grows past the device’s memory when the prediction or the measure is larger, and leaves empty parts out', () => {
    const GIB = 1024 ** 3;
    const bar = memoryBar(tightPlan(), 0.1);
    expect(bar.scaleBytes).toBe(12 * GIB);
    expect(bar.availableAt).toBeCloseTo(8 / 12);
    expect(bar.usableAt).toBeCloseTo(8 / 1.1 / 12);
    expect(bar.segments.map((s) => s.key)).toEqual(['weights', 'gradients', 'optimizer', 'activations']);
    expect(bar.over).toBe(true);
    const measured = memoryBar(samplePlan({ available_bytes: 1000 }), 0, 2000);
    expect(measured.scaleBytes).toBe(2000);
    expect(measured.measuredAt).toBe(1);
    // Over the margin but under the memory still counts as over: the margin is what the plan keeps free.
    expect(memoryBar(samplePlan({ available_bytes: 1700 }), 0.1).over).toBe(true);
    expect(memoryBar(samplePlan({ available_bytes: 1700 }), 0).over).toBe(false);
  });

  it('draws what the validation pass needs above training’s peak as a part of its own', () => {
    // The prediction is the larger of training's peak (1640 here) and the validation pass's.
    const bar = memoryBar(samplePlan({ available_bytes: 4000, validation_peak_bytes: 2000, predicted_peak_bytes: 2000 }), 0.1);
    expect(bar.segments.at(-1)).toMatchObject({ key: 'validation', bytes: 360 });
    expect(bar.segments.at(-1)!.start).toBeCloseTo(0.41);
    expect(bar.segments.at(-1)!.width).toBeCloseTo(0.09);
    expect(memoryBar(samplePlan(), 0.1).segments.map((s) => s.key)).not.toContain('validation');
  });

  it('with the device’s memory unknown, the bar is the prediction alone', () => {
    const bar = memoryBar(samplePlan({ available_bytes: 0 }), 0.1);
    expect(bar.scaleBytes).toBe(1640);
    expect(bar.availableAt).toBeNull();
    expect(bar.usableAt).toBeNull();
    expect(bar.over).toBe(false);
  });
});

describe('the options', () => {
  it('suggests a fitting option that keeps the effective batch, with the fewest steps, then the same precision', () => {
    expect(bestOption(tightPlan())).toMatchObject({ precision: 'bf16', micro_batch: 16, accumulate_steps: 2 });
    expect(bestOption(samplePlan())).toMatchObject({ precision: 'fp32', micro_batch: 32, accumulate_steps: 1 });
    expect(bestOption(samplePlan({ options: samplePlan().options.map((o) => ({ ...o, fits: false })) }))).toBeNull();
    // Run's suggestion is never how the graph trains now.
    expect(suggestedOption(samplePlan())).toMatchObject({ precision: 'bf16', micro_batch: 32, accumulate_steps: 1 });
    expect(suggestedOption(tightPlan())).toEqual(bestOption(tightPlan()));
  });

  it('applying sets the batch source’s param, the steps and the precision; without a source only the same micro-batch', () => {
    const plan = tightPlan();
    expect(optionEdits(plan, plan.options[3]!)).toEqual([
      { nodeId: 'loader', param: 'batch_size', value: 16 },
      { nodeId: 'train', param: 'accumulate_steps', value: 2 },
      { nodeId: 'train', param: 'precision', value: 'bf16' },
    ]);
    const sourceless = { ...plan, batch_source: null };
    expect(optionEdits(sourceless, plan.options[3]!)).toBeNull();
    // The server names no source with an empty node id.
    expect(optionEdits({ ...plan, batch_source: { node_id: '', node_type: '', param: '' } }, plan.options[3]!)).toBeNull();
    expect(optionEdits(sourceless, plan.options[1]!)).toEqual([
      { nodeId: 'train', param: 'accumulate_steps', value: 1 },
      { nodeId: 'train', param: 'precision', value: 'bf16' },
    ]);
  });

  it('finds the measured peak of the plan’s device', () => {
    expect(measuredPeak({ cpu: 5, 'cuda:0': 7 }, 'cpu')).toBe(5);
    expect(measuredPeak({ cpu: 5, 'cuda:0': 7 }, 'cuda')).toBe(7);
    expect(measuredPeak({ 'cuda:1': 9 }, 'cuda:0')).toBe(9);
    expect(measuredPeak({ cpu: 5, 'cuda:1': 9 }, 'cuda:0')).toBeNull();
    expect(measuredPeak(undefined, 'cpu')).toBeNull();
  });
});

describe('a plan’s key', () => {
  const graph: GraphJson = {
    name: 'g',
    nodes: [
      { id: 'b', type: 'DataLoader', position: { x: 0, y: 0 }, data: { params: { shuffle: true, batch_size: 32 } } },
      { id: 'a', type: 'TrainingLoop', position: { x: 5, y: 5 }, data: { params: { epochs: 2 } } },
    ],
    edges: [{ id: 'e', source: 'b', sourceHandle: 'dataloader', target: 'a', targetHandle: 'dataloader' }],
  };

  it('stays while only positions, the name, the order or the params’ key order change', () => {
    const moved: GraphJson = {
      ...graph,
      name: 'other',
      nodes: [
        { ...graph.nodes[1]!, position: { x: 99, y: 99 } },
        { ...graph.nodes[0]!, data: { params: { batch_size: 32, shuffle: true } } },
      ],
    };
    expect(planKey(moved, 'cpu')).toBe(planKey(graph, 'cpu'));
  });

  it('changes with a param, a wire or the device', () => {
    const key = planKey(graph, 'cpu');
    expect(planKey(graph, 'cuda:0')).not.toBe(key);
    expect(planKey({ ...graph, nodes: [{ ...graph.nodes[0]!, data: { params: { batch_size: 64 } } }, graph.nodes[1]!] }, 'cpu')).not.toBe(key);
    expect(planKey({ ...graph, edges: [] }, 'cpu')).not.toBe(key);
  });
});

// ── the store, against a stubbed server ──────────────────────────────────────

const doc = () => useDocument.getState();
const said = () => useMessages.getState();
const params = (id: string) => doc().nodes.find((n) => n.id === id)!.data.params;

interface Stub {
  calls: { url: string; method: string; body: unknown; token: string | null }[];
  release: () => void;
}

/** A server that answers the token, validation and the plan (`answer`); `hold` keeps the plan waiting until release(). */
function stubServer(answer: () => Response, hold = false): Stub {
  const calls: Stub['calls'] = [];
  let release = () => {};
  const held = hold ? new Promise<void>((r) => (release = r)) : Promise.resolve();
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string, init?: RequestInit) => {
      const method = init?.method ?? 'GET';
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : null;
      calls.push({ url, method, body, token: new Headers(init?.headers).get('X-CodefyUI-Token') });
      if (url === '/api/auth/bootstrap') return new Response(JSON.stringify({ token: 'tok' }));
      if (url === '/api/graph/validate') return new Response(JSON.stringify({ valid: true, errors: [] }));
      if (url === '/api/graph/plan') {
        await held;
        return answer();
      }
      return new Response(JSON.stringify({ detail: 'Not Found' }), { status: 404 });
    }),
  );
  return { calls, release: () => release() };
}

const planAnswer = (plans: MemoryPlan[]) => () =>
  new Response(JSON.stringify({ plans, fits: plans.every((p) => p.fits) } satisfies PlanResponse));

describe('planning from the editor', () => {
  beforeEach(async () => {
    resetEditorForTests();
    forgetToken();
    useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
    const [, json] = exampleGraphs().find(([p]) => p === 'examples/toy-mlp/graph.json')!;
    expect(await openGraph(json, { kind: 'example', path: 'toy-mlp' })).toBe(true);
    doc().setDevice('cpu');
  });
  afterEach(() => vi.unstubAllGlobals());

  it('sends the graph as validate does, with the device and margin under plan_options, and shows the first TrainingLoop', async () => {
    const warning = 'device "cuda" is not available: using cpu';
    const server = stubServer(() => new Response(JSON.stringify({ plans: [samplePlan()], fits: true, warnings: [warning] })));
    useMemoryPlan.getState().setTarget(doc().activeTab, 64);
    await useMemoryPlan.getState().planShown(true);
    const call = server.calls.find((c) => c.url === '/api/graph/plan')!;
    expect(call.method).toBe('POST');
    expect(call.token).toBe('tok');
    const body = call.body as GraphJson & { plan_options: unknown };
    // The example it came from, so that the server finds its files as a run does.
    expect(body.plan_options).toEqual({ margin: 0.1, device: 'cpu', target_effective_batch: 64, example: 'toy-mlp' });
    expect(body.nodes.map((n) => n.id)).toEqual(doc().exportGraph().nodes.map((n) => n.id));
    expect(doc().selectedId).toBe('train');
    expect(useMemoryPlan.getState().focusNode).toBe('train');
    const tabPlan = useMemoryPlan.getState().plans[doc().activeTab]!;
    expect(tabPlan.response.plans[0]!.node_id).toBe('train');
    expect(said().messages.slice(-2)).toMatchObject([
      { level: 'warning', text: warning },
      { level: 'info', nodeId: 'train', text: 'Memory plan for train: predicted peak 1.6 KiB of 8.0 GiB on cpu: fits.' },
    ]);
    expect(useMemoryPlan.getState().planning).toBeNull();
  });

  it('runs one plan at a time and shows it busy meanwhile', async () => {
    const server = stubServer(planAnswer([samplePlan()]), true);
    const first = useMemoryPlan.getState().planShown(true);
    await vi.waitFor(() => expect(server.calls.some((c) => c.url === '/api/graph/plan')).toBe(true));
    expect(useMemoryPlan.getState().planning).toBe(doc().activeTab);
    // The TrainingLoop is shown at once, so its Memory section can say the plan is under way.
    expect(doc().selectedId).toBe('train');
    await useMemoryPlan.getState().planShown(true);
    expect(said().toasts.at(-1)?.text).toBe('A memory plan is already under way.');
    server.release();
    await first;
    expect(server.calls.filter((c) => c.url === '/api/graph/plan')).toHaveLength(1);
    expect(useMemoryPlan.getState().planning).toBeNull();
  });

  it('says why a plan was refused: a graph that does not validate, a busy server', async () => {
    stubServer(() => new Response(JSON.stringify({ detail: 'train (TrainingLoop) input "model": not connected' }), { status: 422 }));
    await useMemoryPlan.getState().planShown(true);
    const text = 'Cannot plan this graph: train (TrainingLoop) input "model": not connected';
    expect(useMemoryPlan.getState().errors[doc().activeTab]).toBe(text);
    expect(said().toasts.at(-1)).toMatchObject({ level: 'error', text });

    vi.unstubAllGlobals();
    stubServer(() => new Response(JSON.stringify({ detail: 'busy' }), { status: 503 }));
    await useMemoryPlan.getState().planShown(true);
    expect(useMemoryPlan.getState().errors[doc().activeTab]).toBe('The server is busy (a run or another plan): plan again once it is done.');
  });

  it('Apply sets the batch size, the accumulation steps and the precision as one undo step', async () => {
    const plan = tightPlan();
    setParam('train', 'epochs', 3);
    const before = { loader: params('loader'), train: params('train') };
    const steps = doc().history.past.length;
    expect(applyPlanOption(plan, plan.options[3]!)).toBe(true);
    expect(params('loader').batch_size).toBe(16);
    expect(params('train')).toMatchObject({ accumulate_steps: 2, precision: 'bf16', epochs: 3 });
    expect(doc().history.past.length).toBe(steps + 1);
    expect(doc().changed).toMatchObject({ loader: true, train: true });
    expect(said().messages.at(-1)?.text).toBe('Applied the memory plan to train: bf16, micro-batch 16 × 2 steps.');
    doc().undo();
    expect(params('loader')).toEqual(before.loader);
    expect(params('train')).toEqual(before.train);
    doc().redo();
    expect(params('loader').batch_size).toBe(16);
    // Two Applies in quick succession are two steps.
    applyPlanOption(plan, plan.options[2]!);
    expect(doc().history.past.length).toBe(steps + 2);
    doc().undo();
    expect(params('loader').batch_size).toBe(16);
  });

  it('Apply of an option whose micro-batch nothing sets changes nothing and says why', () => {
    const plan = { ...tightPlan(), batch_source: null };
    const steps = doc().history.past.length;
    expect(applyPlanOption(plan, plan.options[3]!)).toBe(false);
    expect(doc().history.past.length).toBe(steps);
    expect(said().toasts.at(-1)?.level).toBe('warning');
  });
});

describe('Run with a fresh plan', () => {
  beforeEach(async () => {
    resetEditorForTests();
    forgetToken();
    useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
    const [, json] = exampleGraphs().find(([p]) => p === 'examples/toy-mlp/graph.json')!;
    await openGraph(json, { kind: 'example', path: 'toy-mlp' });
    doc().setDevice('cpu');
  });
  afterEach(() => vi.unstubAllGlobals());

  const warnings = () => said().messages.filter((m) => m.level === 'warning' && m.text.includes('may not fit'));
  const expected =
    'train may not fit in memory: the plan predicts 12 GiB of 8.0 GiB on cpu. The run starts anyway. ' +
    'Suggestion: bf16, micro-batch 16 × 2 steps (predicted 7.0 GiB).';

  it('that predicts no fit warns with the best fitting option before the run starts, and starts it', async () => {
    stubServer(planAnswer([tightPlan()]));
    await useMemoryPlan.getState().planShown(false);
    await useRunSession.getState().runGraph();
    expect(warnings().map((m) => [m.text, m.nodeId])).toEqual([[expected, 'train']]);
    expect(said().toasts.some((x) => x.level === 'warning' && x.text === expected)).toBe(true);
    // The run went on to connect (there is no server socket here, so that is where it stops).
    const texts = said().messages.map((m) => m.text);
    expect(texts.indexOf(expected)).toBeLessThan(texts.findIndex((x) => x.startsWith('Could not connect')));
  });

  it('says nothing once the graph or the device changed since the plan, or when the plan fits', async () => {
    stubServer(planAnswer([tightPlan()]));
    await useMemoryPlan.getState().planShown(false);
    setParam('loader', 'batch_size', 8);
    await useRunSession.getState().runGraph();
    expect(warnings()).toEqual([]);

    await useMemoryPlan.getState().planShown(false);
    doc().setDevice('cuda:0');
    await useRunSession.getState().runGraph();
    expect(warnings()).toEqual([]);

    vi.unstubAllGlobals();
    stubServer(planAnswer([samplePlan()]));
    await useMemoryPlan.getState().planShown(false);
    await useRunSession.getState().runGraph();
    expect(warnings()).toEqual([]);
  });

  it('moving a node keeps the plan fresh', async () => {
    stubServer(planAnswer([tightPlan()]));
    await useMemoryPlan.getState().planShown(false);
    doc().onNodesChange([{ type: 'position', id: 'train', position: { x: 1234, y: 5 }, dragging: false }]);
    await useRunSession.getState().runGraph();
    expect(warnings()).toHaveLength(1);
  });
});
