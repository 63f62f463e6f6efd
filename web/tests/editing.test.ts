// @vitest-environment jsdom
// Undo/redo, copy/paste, tabs and the shortcut table: the editing habits a
// person brings from other editors.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { copySelection, parseClipboard, pasteNodes } from '../src/graph/clipboard';
import { emptyHistory, HISTORY_LIMIT, JOIN_MS, record, redo, undo } from '../src/graph/history';
import { commandFor, comboOf, SHORTCUTS, type KeyLike } from '../src/canvas/shortcuts';
import { rankDefinitions } from '../src/panels/QuickAdd';
import { useCatalogue } from '../src/store/catalogue';
import { useDocument } from '../src/store/document';
import { draftKey } from '../src/store/drafts';
import { closeTab, newGraph, newTab, openExample, openGraph, resetEditorForTests, setParam } from '../src/store/editor';
import { useMessages } from '../src/store/messages';
import { useRunSession } from '../src/store/runSession';
import { defsByName, exampleGraphs, nodeDefs } from './helpers';

const store = () => useDocument.getState();
const runs = () => useRunSession.getState();
const example = (name: string) => exampleGraphs().find(([p]) => p === `examples/${name}/graph.json`)![1];
const params = (id: string) => store().nodes.find((n) => n.id === id)!.data.params;

beforeEach(async () => {
  resetEditorForTests();
  localStorage.clear();
  useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
  expect(await openGraph(example('toy-mlp'), { kind: 'example', path: 'toy-mlp' })).toBe(true);
});

describe('history (pure)', () => {
  it('records the state before each edit, joins quick edits of one kind, and drops redo on a new edit', () => {
    let h = emptyHistory<number>();
    h = record(h, 1, 'a', 0);
    h = record(h, 2, 'a', JOIN_MS - 1); // the same edit continuing: 1 stays the undo point
    expect(h.past).toEqual([1]);
    h = record(h, 3, 'b', JOIN_MS);
    h = record(h, 4, 'b', 10 * JOIN_MS); // same kind, but later: its own step
    expect(h.past).toEqual([1, 3, 4]);
    const back = undo(h, 5)!;
    expect(back.state).toBe(4);
    expect(back.history.future).toEqual([5]);
    const fwd = redo(back.history, 4)!;
    expect(fwd.state).toBe(5);
    expect(record(back.history, 4, 'c', 0).future).toEqual([]);
    expect(undo(emptyHistory<number>(), 0)).toBeNull();
    expect(redo(emptyHistory<number>(), 0)).toBeNull();
  });

  it('keeps at most HISTORY_LIMIT steps', () => {
    let h = emptyHistory<number>();
    for (let i = 0; i < HISTORY_LIMIT + 20; i++) h = record(h, i, `t${i}`, i * 10 * JOIN_MS);
    expect(h.past.length).toBe(HISTORY_LIMIT);
    expect(h.past[0]).toBe(20);
  });
});

describe('undo and redo in the editor', () => {
  it('a param typed in several keystrokes is one step; undo marks the node to run again', () => {
    const before = params('train').epochs;
    setParam('train', 'epochs', 1);
    setParam('train', 'epochs', 12);
    store().clearChanged(); // as after a run
    store().undo();
    expect(params('train').epochs).toBe(before);
    expect(store().changed).toEqual({ train: true });
    store().redo();
    expect(params('train').epochs).toBe(12);
  });

  it('undoes adding a node, a wire, a removal with its wires, and a drag, in that order back', () => {
    const nodes0 = store().nodes.map((n) => n.id);
    const edges0 = store().edges.map((e) => e.id);
    const added = store().addNode('DataLoader', { x: 5, y: 5 })!;
    store().connect({ source: 'train_data', sourceHandle: 'dataset', target: added, targetHandle: 'dataset' });
    const edges1 = store().edges.map((e) => e.id);
    // React Flow removes a node and then, separately, its wires: one undo step.
    vi.useFakeTimers();
    vi.setSystemTime(Date.now() + 10 * JOIN_MS);
    store().onNodesChange([{ type: 'remove', id: added }]);
    store().onEdgesChange(store().edges.filter((e) => e.target === added).map((e) => ({ type: 'remove' as const, id: e.id })));
    vi.setSystemTime(Date.now() + 10 * JOIN_MS);
    const pos0 = store().nodes.find((n) => n.id === 'train')!.position;
    store().onNodesChange([{ type: 'position', id: 'train', position: { x: 1, y: 1 }, dragging: true }]);
    store().onNodesChange([{ type: 'position', id: 'train', position: { x: 9, y: 9 }, dragging: true }]);
    store().onNodesChange([{ type: 'position', id: 'train', position: { x: 9, y: 9 }, dragging: false }]);
    vi.useRealTimers();
    store().undo(); // the drag
    expect(store().nodes.find((n) => n.id === 'train')!.position).toEqual(pos0);
    store().undo(); // the removal
    expect(store().edges.map((e) => e.id)).toEqual(edges1);
    store().undo(); // the wire
    store().undo(); // the node
    expect(store().nodes.map((n) => n.id)).toEqual(nodes0);
    expect(store().edges.map((e) => e.id)).toEqual(edges0);
    store().undo(); // nothing left: no change
    expect(store().nodes.map((n) => n.id)).toEqual(nodes0);
  });

  it('a newly opened graph starts with no history', async () => {
    setParam('train', 'epochs', 3);
    await openGraph(example('toy-mlp'), { kind: 'file', filename: 'b.json' });
    expect(store().history.past).toEqual([]);
  });
});

describe('copy and paste', () => {
  it('copies the selected nodes with the wires among them, and pastes them with fresh ids, wired the same', () => {
    const picked = new Set(['train_data', 'loader']);
    const nodes = store().nodes.map((n) => ({ ...n, selected: picked.has(n.id) }));
    const graph = copySelection(nodes, store().edges)!;
    expect(graph.nodes.map((n) => n.id).sort()).toEqual(['loader', 'train_data']);
    expect(graph.edges.every((e) => picked.has(e.source) && picked.has(e.target))).toBe(true);
    expect(graph.edges.length).toBeGreaterThan(0);

    const parsed = parseClipboard(JSON.stringify(graph))!;
    const taken = new Set(store().nodes.map((n) => n.id));
    const out = pasteNodes(parsed.nodes, parsed.edges, taken, { x: 1000, y: 500 });
    expect(out.nodes.every((n) => !taken.has(n.id) && n.selected)).toBe(true);
    expect(Math.min(...out.nodes.map((n) => n.position.x))).toBe(1000);
    expect(Math.min(...out.nodes.map((n) => n.position.y))).toBe(500);
    const ids = new Set(out.nodes.map((n) => n.id));
    expect(out.edges.length).toBe(graph.edges.length);
    expect(out.edges.every((e) => ids.has(e.source) && ids.has(e.target))).toBe(true);
    // The copy's params are its own.
    const loaderCopy = out.nodes.find((n) => n.data.nodeType === 'DataLoader')!;
    expect(loaderCopy.data.params).toEqual(store().nodes.find((n) => n.id === 'loader')!.data.params);
    expect(loaderCopy.data.params).not.toBe(store().nodes.find((n) => n.id === 'loader')!.data.params);
  });

  it('text that is not a graph does not paste', () => {
    expect(parseClipboard('hello')).toBeNull();
    expect(parseClipboard('{"nodes": []}')).toBeNull();
    expect(parseClipboard('[1,2]')).toBeNull();
    expect(store().paste('not json')).toBe(false);
  });

  it('the store pastes, cuts and duplicates as one undo step each, and pasted nodes run as new', () => {
    store().select('optimizer');
    const text = store().copySelection()!;
    const n0 = store().nodes.length;
    expect(store().paste(text)).toBe(true);
    expect(store().nodes.length).toBe(n0 + 1);
    const copy = store().nodes.at(-1)!;
    expect(copy.id).toBe('optimizer_1');
    expect(store().changed[copy.id]).toBe(true);
    // Placed clear of the original.
    const orig = store().nodes.find((n) => n.id === 'optimizer')!;
    expect(copy.position).not.toEqual(orig.position);
    store().undo();
    expect(store().nodes.length).toBe(n0);
    store().select('optimizer');
    expect(store().cutSelection()).not.toBeNull();
    expect(store().nodes.some((n) => n.id === 'optimizer')).toBe(false);
    expect(store().edges.some((e) => e.source === 'optimizer' || e.target === 'optimizer')).toBe(false);
    store().undo();
    expect(store().nodes.some((n) => n.id === 'optimizer')).toBe(true);
    store().select('optimizer');
    store().duplicateSelection();
    expect(store().nodes.filter((n) => n.data.nodeType === 'Optimizer').length).toBe(2);
  });
});

describe('tabs', () => {
  it('a second graph opens in a tab of its own; switching keeps each graph’s edits and history', async () => {
    setParam('train', 'epochs', 7);
    expect(store().tabOrder.length).toBe(1);
    await openGraph(example('toy-mlp'), { kind: 'file', filename: 'copy.json' });
    expect(store().tabOrder.length).toBe(2);
    const [first, second] = store().tabOrder as [number, number];
    expect(store().activeTab).toBe(second);
    expect(params('train').epochs).not.toBe(7);
    store().switchTab(first);
    expect(params('train').epochs).toBe(7);
    expect(store().unsaved).toBe(true);
    expect(store().history.past.length).toBe(1);
    // Opening the example again shows its tab instead of a third copy.
    store().switchTab(second);
    await openExample('toy-mlp');
    expect(store().activeTab).toBe(first);
    expect(store().tabOrder.length).toBe(2);
  });

  it('a blank tab is replaced by the graph opened into it', async () => {
    resetEditorForTests();
    useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
    await newGraph();
    await openGraph(example('toy-mlp'), { kind: 'example', path: 'toy-mlp' });
    expect(store().tabOrder.length).toBe(1);
    await newTab();
    expect(store().tabOrder.length).toBe(2);
  });

  it('a run’s messages go to the tab it was started in, even while another tab is shown', async () => {
    const first = store().activeTab;
    useRunSession.setState((s) => ({ runs: { ...s.runs, [first]: { ...s.runOf(first), phase: 'running', runId: 'r1' } }, runTab: first }));
    await openGraph(example('toy-mlp'), { kind: 'file', filename: 'other.json' });
    runs().receive({ type: 'node_status', node_id: 'train', status: 'running' });
    expect(runs().runOf(store().activeTab).statuses.train).toBeUndefined();
    expect(store().parked[first]).toBeDefined();
    expect(runs().runOf(first).statuses.train).toBe('running');
    // One run at a time: Run in the other tab says where the run is.
    await runs().runGraph();
    expect(useMessages.getState().toasts.at(-1)?.text).toMatch(/running in another tab/);
    // A running tab does not close.
    expect(closeTab(first)).toBe(false);
    runs().receive({ type: 'execution_complete' });
    expect(runs().runOf(first).phase).toBe('idle');
    expect(closeTab(first)).toBe(true);
    expect(store().tabOrder).toEqual([store().activeTab]);
  });

  it('closing a tab with unsaved changes asks first; the last tab closes into a fresh graph', async () => {
    setParam('train', 'epochs', 4);
    const confirm = vi.spyOn(window, 'confirm').mockReturnValueOnce(false).mockReturnValueOnce(true);
    expect(closeTab(store().activeTab)).toBe(false);
    expect(closeTab(store().activeTab)).toBe(true);
    expect(confirm).toHaveBeenCalledTimes(2);
    await vi.waitFor(() => expect(store().nodes.map((n) => n.data.nodeType)).toEqual(['Start']));
    expect(store().tabOrder.length).toBe(1);
    confirm.mockRestore();
  });

  it('unsaved edits are kept per graph, so two tabs’ drafts do not overwrite each other', () => {
    expect(draftKey({ kind: 'example', path: 'toy-mlp' })).toBe('example:toy-mlp');
    expect(draftKey({ kind: 'saved', name: 'a' })).toBe('saved:a');
    expect(draftKey({ kind: 'new' })).toBe(draftKey({ kind: 'file', filename: 'x.json' }));
    expect(draftKey({ kind: 'run', runId: 'run-3' })).toBe('run:run-3'); // a run's snapshot keeps its own
  });
});

describe('shortcuts', () => {
  const key = (k: string, mods: Partial<KeyLike> = {}): KeyLike => ({ key: k, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...mods });

  it('reads keys as the table writes them', () => {
    expect(comboOf(key('z', { ctrlKey: true }))).toBe('Mod+Z');
    expect(comboOf(key('Z', { metaKey: true, shiftKey: true }))).toBe('Mod+Shift+Z');
    expect(comboOf(key('?', { shiftKey: true }))).toBe('?');
    expect(comboOf(key(' '))).toBe('Space');
  });

  it('maps keys to commands, leaves typing alone, and leaves the clipboard to its events', () => {
    expect(commandFor(key('z', { ctrlKey: true }), false)).toBe('undo');
    expect(commandFor(key('z', { ctrlKey: true, shiftKey: true }), false)).toBe('redo');
    expect(commandFor(key('y', { ctrlKey: true }), false)).toBe('redo');
    expect(commandFor(key('d', { metaKey: true }), false)).toBe('duplicate');
    expect(commandFor(key('?', { shiftKey: true }), false)).toBe('help');
    expect(commandFor(key(' '), false)).toBe('quickAdd');
    expect(commandFor(key('f'), false)).toBe('fit');
    expect(commandFor(key('c', { ctrlKey: true }), false)).toBeNull();
    expect(commandFor(key('v', { ctrlKey: true }), false)).toBeNull();
    expect(commandFor(key('z', { ctrlKey: true }), true)).toBeNull(); // the field's own undo
    expect(commandFor(key('f'), true)).toBeNull();
    expect(commandFor(key('s', { ctrlKey: true }), true)).toBe('save');
    expect(commandFor(key('Enter', { ctrlKey: true }), true)).toBe('run');
    expect(commandFor(key('q'), false)).toBeNull();
  });

  it('every command the table lists is one the handler knows (the sheet shows only what works)', () => {
    for (const s of SHORTCUTS)
      for (const k of s.keys) {
        if (s.command === 'delete' || s.command === 'multiSelect' || s.command === 'escape') continue;
        const [mods, last] = [k.split('+').slice(0, -1), k.split('+').at(-1)!];
        const e = key(last === 'Space' ? ' ' : last.toLowerCase(), {
          ctrlKey: mods.includes('Mod'),
          shiftKey: mods.includes('Shift'),
          altKey: mods.includes('Alt'),
        });
        const expected = ['copy', 'cut', 'paste'].includes(s.command) ? null : s.command;
        expect(commandFor(e, false), k).toBe(expected);
      }
  });
});

describe('quick add', () => {
  it('ranks names that start with the text first, then names containing it, then categories and descriptions', () => {
    const names = rankDefinitions(nodeDefs, 'loss').map((d) => d.node_name);
    expect(names[0]).toBe('Loss');
    expect(names.indexOf('Visualize')).toBeGreaterThan(0); // only its description speaks of a loss
    expect(rankDefinitions(nodeDefs, 'zzzz')).toEqual([]);
    expect(rankDefinitions(nodeDefs, '').length).toBe(nodeDefs.length);
  });
});
