// Editing the shown graph: React Flow's node and edge changes, wires (checked
// by the server's type rules), new nodes, params, selection, the clipboard,
// undo and redo. Each edit records the graph as it was for undo (a param's
// keystrokes and a drag count once). A slice of the document store
// (document.ts).
import { applyEdgeChanges, applyNodeChanges } from '@xyflow/react';
import type { StateCreator } from 'zustand';
import { copySelection, parseClipboard, pasteNodes } from '../graph/clipboard';
import { checkConnection } from '../graph/connection';
import { overlapsAny } from '../graph/geometry';
import { DATA_EDGE, NODE_COMPONENT, TRIGGER_EDGE, type CodefyEdge, type CodefyNode } from '../graph/graphJson';
import { record, redo, undo, type History } from '../graph/history';
import { uniqueId } from '../graph/ids';
import { defaultParams } from '../graph/params';
import { factsLookup, freeSpot, sizeOf } from '../graph/placement';
import { shapeOf, TRIGGER_HANDLE } from '../graph/ports';
import { inWords } from '../i18n';
import { useCatalogue } from './catalogue';
import type { DocumentData, DocumentState, EditActions, GraphSnap } from './documentState';
import { useMessages } from './messages';

const snapOf = (s: GraphSnap): GraphSnap => ({ meta: s.meta, nodes: s.nodes, edges: s.edges });

/** The history after recording the shown graph as it is now, before an edit tagged `tag`. */
export const recorded = (s: DocumentData, tag: string) => ({ history: record(s.history, snapOf(s), tag, Date.now()) });

/** Nodes whose params differ between two versions of a graph (they must run again). */
function paramsChanged(a: readonly CodefyNode[], b: readonly CodefyNode[]): string[] {
  const before = new Map(a.map((n) => [n.id, n.data.params]));
  return b.filter((n) => before.get(n.id) !== n.data.params).map((n) => n.id);
}

/** The shown graph with what placing and checking need from the catalogue. */
const withDefs = (s: DocumentData) => ({ defs: useCatalogue.getState().defs, nodes: s.nodes, edges: s.edges });

/** Counts setParams calls, so that each gets an undo tag no other edit has. */
let paramsEdits = 0;

export const editActions: StateCreator<DocumentState, [], [], EditActions> = (set, get) => {
  /** Shows an earlier or later version of the graph (undo, redo); its edited nodes run again. */
  const restore = (snap: GraphSnap, history: History<GraphSnap>) => {
    set((s) => {
      const changed = { ...s.changed };
      for (const id of paramsChanged(s.nodes, snap.nodes)) changed[id] = true;
      const selectedId = snap.nodes.some((n) => n.id === s.selectedId) ? s.selectedId : null;
      return { ...snap, history, changed, selectedId, unsaved: true };
    });
  };

  return {
    onNodesChange(changes) {
      set((s) => {
        const nodes = applyNodeChanges(changes, s.nodes);
        const moved = changes.some((c) => c.type === 'position' || c.type === 'remove' || c.type === 'add');
        const selectionChanged = changes.some((c) => c.type === 'select' || c.type === 'remove');
        let selectedId = s.selectedId;
        if (selectionChanged) selectedId = nodes.find((n) => n.selected)?.id ?? null;
        // Undo steps: a removal (with the wires it takes, which arrive separately), and each drag once.
        let history = s.history;
        let dragRecorded = s.dragRecorded;
        if (changes.some((c) => c.type === 'remove')) history = recorded(s, 'remove').history;
        const drags = changes.filter((c) => c.type === 'position');
        if (drags.some((c) => c.type === 'position' && c.dragging) && !dragRecorded) {
          dragRecorded = true;
          history = recorded(s, 'move').history;
        }
        if (drags.some((c) => c.type === 'position' && !c.dragging)) dragRecorded = false;
        return { nodes, selectedId, unsaved: s.unsaved || moved, history, dragRecorded };
      });
    },

    onEdgesChange(changes) {
      set((s) => ({
        ...(changes.some((c) => c.type === 'remove') ? recorded(s, 'remove') : {}),
        edges: applyEdgeChanges(changes, s.edges),
        unsaved: s.unsaved || changes.some((c) => c.type === 'remove' || c.type === 'add'),
      }));
    },

    checkConnection(c) {
      const verdict = checkConnection(c, factsLookup(withDefs(get())), useCatalogue.getState().rules);
      return verdict.ok ? verdict : { ok: false, reason: inWords(verdict.problem) };
    },

    connect(c) {
      const verdict = get().checkConnection(c);
      if (!verdict.ok) {
        const say = useMessages.getState();
        say.toast('warning', verdict.reason);
        say.say('warning', verdict.reason, { nodeId: c.target ?? undefined });
        return;
      }
      set((s) => {
        const sourceHandle = c.sourceHandle ?? (verdict.kind === 'trigger' ? 'trigger' : null);
        const targetHandle = verdict.kind === 'trigger' ? TRIGGER_HANDLE : c.targetHandle;
        // An input takes one wire: a new one replaces the old (a trigger lands once per Start).
        const kept = s.edges.filter((e) =>
          verdict.kind === 'trigger'
            ? !(e.target === c.target && e.source === c.source && e.data?.kind === 'trigger')
            : !(e.target === c.target && e.targetHandle === targetHandle && e.data?.kind !== 'trigger'),
        );
        const taken = new Set(kept.map((e) => e.id));
        const base = `e_${c.source}_${sourceHandle ?? ''}_${c.target}_${verdict.kind === 'trigger' ? 'trigger' : (targetHandle ?? '')}`;
        let id = base;
        for (let i = 2; taken.has(id); i++) id = `${base}_${i}`;
        const edge: CodefyEdge = {
          id,
          source: c.source,
          target: c.target,
          sourceHandle,
          targetHandle,
          type: verdict.kind === 'trigger' ? TRIGGER_EDGE : DATA_EDGE,
          data: { kind: verdict.kind, raw: null },
        };
        return { ...recorded(s, 'connect'), edges: [...kept, edge], unsaved: true };
      });
    },

    addNode(type, position, avoidOverlap = false) {
      const s = get();
      const def = useCatalogue.getState().defs[type];
      if (!def) return null;
      if (avoidOverlap) position = freeSpot(withDefs(s), shapeOf('', type, def, {}, []), position);
      const taken = new Set(s.nodes.map((n) => n.id));
      const id = uniqueId(type, (x) => taken.has(x));
      const node: CodefyNode = {
        id,
        type: NODE_COMPONENT,
        position,
        data: { nodeType: type, params: defaultParams(def.params), raw: null },
        selected: true,
      };
      set((st) => ({
        ...recorded(st, 'add'),
        nodes: [...st.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node],
        selectedId: id,
        changed: { ...st.changed, [id]: true },
        unsaved: true,
      }));
      return id;
    },

    setParam(nodeId, name, value) {
      set((s) => ({
        ...recorded(s, `param:${nodeId}:${name}`),
        nodes: s.nodes.map((n) =>
          n.id === nodeId ? { ...n, data: { ...n.data, params: { ...n.data.params, [name]: value } } } : n,
        ),
        changed: { ...s.changed, [nodeId]: true },
        unsaved: true,
      }));
    },

    setParams(edits) {
      if (edits.length === 0) return;
      set((s) => {
        const changed = { ...s.changed };
        const nodes = s.nodes.map((n) => {
          const mine = edits.filter((e) => e.nodeId === n.id);
          if (mine.length === 0) return n;
          changed[n.id] = true;
          const params = { ...n.data.params };
          for (const e of mine) params[e.param] = e.value;
          return { ...n, data: { ...n.data, params } };
        });
        // A tag of its own each time: two of these in quick succession are two undo steps.
        return { ...recorded(s, `params:${++paramsEdits}`), nodes, changed, unsaved: true };
      });
    },

    select(nodeId) {
      set((s) => ({
        selectedId: nodeId,
        nodes: s.nodes.map((n) => {
          const selected = n.id === nodeId;
          return n.selected === selected ? n : { ...n, selected };
        }),
      }));
    },

    undo() {
      const s = get();
      const step = undo(s.history, snapOf(s));
      if (step) restore(step.state, step.history);
    },

    redo() {
      const s = get();
      const step = redo(s.history, snapOf(s));
      if (step) restore(step.state, step.history);
    },

    copySelection() {
      const s = get();
      const graph = copySelection(s.nodes, s.edges);
      return graph ? JSON.stringify(graph) : null;
    },

    cutSelection() {
      const text = get().copySelection();
      if (!text) return null;
      set((s) => {
        const gone = new Set(s.nodes.filter((n) => n.selected).map((n) => n.id));
        return {
          ...recorded(s, 'cut'),
          nodes: s.nodes.filter((n) => !gone.has(n.id)),
          edges: s.edges.filter((e) => !gone.has(e.source) && !gone.has(e.target)),
          selectedId: null,
          unsaved: true,
        };
      });
      return text;
    },

    paste(text, at) {
      const parsed = parseClipboard(text);
      if (!parsed) return false;
      const s = get();
      const sized = withDefs(s);
      const left = Math.min(...parsed.nodes.map((n) => n.position.x));
      const top = Math.min(...parsed.nodes.map((n) => n.position.y));
      // Without a place to put them, copies land down and right of the originals, clear of what is there.
      let spot = at ?? { x: left + 40, y: top + 40 };
      if (!at) {
        const boxes = s.nodes.map((n) => ({ id: n.id, ...n.position, ...sizeOf(sized, n, true) }));
        const first = parsed.nodes.find((n) => n.position.x === left) ?? parsed.nodes[0]!;
        const size = sizeOf(sized, first, false);
        for (let i = 0; i < 40 && overlapsAny({ id: '', x: spot.x + first.position.x - left, y: spot.y + first.position.y - top, ...size }, boxes); i++)
          spot = { x: spot.x + 40, y: spot.y + 40 };
      }
      const pasted = pasteNodes(parsed.nodes, parsed.edges, new Set(s.nodes.map((n) => n.id)), spot);
      const changed = { ...s.changed };
      for (const n of pasted.nodes) changed[n.id] = true;
      set((st) => ({
        ...recorded(st, 'paste'),
        nodes: [...st.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), ...pasted.nodes],
        edges: [...st.edges.map((e) => (e.selected ? { ...e, selected: false } : e)), ...pasted.edges],
        selectedId: pasted.nodes.length === 1 ? pasted.nodes[0]!.id : null,
        changed,
        unsaved: true,
      }));
      return true;
    },

    duplicateSelection() {
      const text = get().copySelection();
      if (text) get().paste(text);
    },

    selectAll() {
      set((s) => ({ nodes: s.nodes.map((n) => (n.selected ? n : { ...n, selected: true })), selectedId: null }));
    },
  };
};
