import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { graphToFlow } from '../src/graph/graphJson';
import { TRIGGER_HANDLE } from '../src/graph/ports';
import { useCatalogue } from '../src/store/catalogue';
import { useDocument } from '../src/store/document';
import { fileStem, openGraph, resetEditorForTests, setParam } from '../src/store/editor';
import { useMessages } from '../src/store/messages';
import { shownRun, useRunSession } from '../src/store/runSession';
import { defsByName, exampleGraphs, nodeDefs } from './helpers';

const store = () => useDocument.getState();
const said = () => useMessages.getState();

beforeEach(async () => {
  resetEditorForTests();
  useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
  const [, json] = exampleGraphs().find(([p]) => p === 'examples/toy-mlp/graph.json')!;
  expect(await openGraph(json, { kind: 'example', path: 'toy-mlp' })).toBe(true);
});

describe('the open graph', () => {
  it('opening lays out a graph whose positions overlap, and asks the canvas to fit it', async () => {
    expect(store().fitRequest).toBe(1);
    expect(said().messages.map((m) => m.text)).not.toContain(
      'Its saved positions put nodes on top of each other at the size they are drawn here, so it was laid out again.',
    );
    const [, json] = exampleGraphs().find(([p]) => p === 'examples/toy-mlp/graph.json')!;
    const piled = { ...(json as object), nodes: (json as { nodes: object[] }).nodes.map((n) => ({ ...n, position: { x: 10, y: 10 } })) };
    await openGraph(piled, { kind: 'file', filename: 'piled.json' });
    expect(store().fitRequest).toBe(2);
    expect(new Set(store().nodes.map((n) => `${n.position.x},${n.position.y}`)).size).toBe(store().nodes.length);
    expect(said().messages.map((m) => m.text)).toContain(
      'Its saved positions put nodes on top of each other at the size they are drawn here, so it was laid out again.',
    );
  });

  it('opening a graph that is not one says why and keeps the open graph', async () => {
    const before = store().nodes;
    expect(await openGraph({ nodes: 3 }, { kind: 'file', filename: 'x.json' })).toBe(false);
    expect(store().nodes).toBe(before);
    expect(said().toasts.at(-1)?.text).toBe('Cannot open this graph: "nodes" must be a list.');
  });

  it('a new node gets a readable unique id and its definition’s defaults', () => {
    const a = store().addNode('DataLoader', { x: 1, y: 2 });
    const b = store().addNode('DataLoader', { x: 3, y: 4 });
    expect([a, b]).toEqual(['dataloader_1', 'dataloader_2']);
    const n = store().nodes.find((x) => x.id === a)!;
    expect(n.data.params).toEqual({ batch_size: 32, shuffle: true, num_workers: 0, pin_memory: false, drop_last: false, persistent_workers: false, prefetch_factor: 2, seed: -1 });
    expect(store().selectedId).toBe(b);
    expect(store().addNode('NoSuchNode', { x: 0, y: 0 })).toBeNull();
  });

  it('a wire into a taken input replaces the old one; a refused wire is not added and is explained', () => {
    const before = store().edges.length;
    store().connect({ source: 'val_loader', sourceHandle: 'dataloader', target: 'train', targetHandle: 'dataloader' });
    const into = store().edges.filter((e) => e.target === 'train' && e.targetHandle === 'dataloader');
    expect(into.map((e) => e.source)).toEqual(['val_loader']);
    expect(store().edges.length).toBe(before);
    store().connect({ source: 'loss', sourceHandle: 'loss_fn', target: 'optimizer', targetHandle: 'model' });
    expect(store().edges.length).toBe(before);
    expect(said().messages.at(-1)).toMatchObject({ level: 'warning', nodeId: 'optimizer', text: 'Loss.loss_fn gives LOSS_FN, but Optimizer.model takes MODEL.' });
  });

  it('Start’s trigger lands on a node as a trigger edge and exports as CodefyUI writes it', () => {
    store().connect({ source: 'start', sourceHandle: 'trigger', target: 'evaluate', targetHandle: TRIGGER_HANDLE });
    const e = store().edges.at(-1)!;
    expect(e).toMatchObject({ source: 'start', target: 'evaluate', type: 'trigger', data: { kind: 'trigger' } });
    expect(store().exportGraph().edges.at(-1)).toEqual({ id: e.id, source: 'start', target: 'evaluate', sourceHandle: 'trigger', type: 'trigger' });
  });

  it('editing a param marks the node changed (for changed_nodes) and clears that param’s mark', () => {
    const tab = store().activeTab;
    useRunSession.setState((s) => ({ runs: { ...s.runs, [tab]: { ...s.runOf(tab), issues: { train: [{ nodeId: 'train', param: 'epochs', message: 'too low' }, { nodeId: 'train', message: 'other' }] } } } }));
    setParam('train', 'epochs', 9);
    expect(store().changed).toEqual({ train: true });
    expect(shownRun().issues.train).toEqual([{ nodeId: 'train', message: 'other' }]);
    expect(store().exportGraph().nodes.find((n) => n.id === 'train')!.data!.params!.epochs).toBe(9);
    expect(store().unsaved).toBe(true);
  });

  it('exports what it opened, apart from positions it laid out', () => {
    const [, json] = exampleGraphs().find(([p]) => p === 'examples/toy-mlp/graph.json')!;
    const strip = (g: unknown) => JSON.parse(JSON.stringify(g), (k, v) => (k === 'position' ? undefined : v));
    expect(strip(store().exportGraph())).toEqual(strip(json));
    // and a graph with positions that fit opens where it was
    const f = graphToFlow(json);
    const spread = { ...(json as object), nodes: f.nodes.map((n, i) => ({ ...n.data.raw, position: { x: i * 600, y: 0 } })) };
    return openGraph(spread, { kind: 'file', filename: 's.json' })
      .then(() => expect(store().exportGraph()).toEqual(spread));
  });
});

describe('saving', () => {
  it('names files as the server does', () => {
    expect(fileStem('Fashion-MNIST CNN')).toBe('Fashion-MNIST_CNN');
    expect(fileStem('a/b.json')).toBe('a_b_json');
    expect(fileStem('訓練')).toBe('訓練');
  });
});

describe('the test reset', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('clears what used to live beside the store: param fields’ draft errors and the message ids', async () => {
    // No server here: validation and the connection fail at once.
    vi.stubGlobal('fetch', vi.fn(async () => Promise.reject(new Error('offline'))));
    const refusal = 'param "epochs": Expected a whole number.';
    useRunSession.getState().setDraftError('train', 'epochs', 'Expected a whole number.');
    await useRunSession.getState().runGraph();
    expect(said().messages.map((m) => m.text)).toContain(refusal);
    expect(said().nextId).toBeGreaterThan(1);

    resetEditorForTests();
    expect(useRunSession.getState().draftErrors).toEqual({});
    expect(said().nextId).toBe(1);
    expect(said().messages).toEqual([]);

    // The same graph in the next test runs: no field of the last one holds it back.
    useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
    const [, json] = exampleGraphs().find(([p]) => p === 'examples/toy-mlp/graph.json')!;
    await openGraph(json, { kind: 'example', path: 'toy-mlp' });
    expect(said().messages[0]?.id).toBe(1);
    await useRunSession.getState().runGraph();
    expect(said().messages.map((m) => m.text)).not.toContain(refusal);
    expect(said().messages.at(-1)?.text).toMatch(/^Could not connect/);
    expect(shownRun()).toMatchObject({ phase: 'idle', outcome: 'error' });
  });
});
