// The document: the open graphs, one per tab, each with its undo history,
// selection and device. The shown tab's graph is what the canvas draws; the
// editing actions are in graphEdits.ts, the shape of it all in
// documentState.ts. Opening files, saving and closing tabs with questions
// asked are editor.ts's; each tab's run is runSession.ts's.
import { create, type StateCreator } from 'zustand';
import { flowToGraph } from '../graph/graphJson';
import { emptyHistory } from '../graph/history';
import { needsMeasuredLayout, sizeOf } from '../graph/placement';
import { t } from '../i18n';
import { useCatalogue } from './catalogue';
import type { DocumentData, DocumentState, GraphDoc, TabActions } from './documentState';
import { editActions, recorded } from './graphEdits';
import { useMessages } from './messages';
import { usePanels } from './panels';
import { usePreferences } from './preferences';
import type { GraphSource } from './url';

export type { CheckedConnection, GraphDoc, GraphSnap, OpenedGraph } from './documentState';

export const initialDocument = (): DocumentData => ({
  meta: { name: '', description: '', raw: {} },
  source: { kind: 'new' },
  nodes: [],
  edges: [],
  device: 'auto',
  changed: {},
  unsaved: false,
  selectedId: null,
  measureCheck: null,
  history: emptyHistory(),
  fitRequest: 0,
  dragRecorded: false,
  tabOrder: [1],
  activeTab: 1,
  parked: {},
  nextTab: 2,
});

/** The shown tab's graph, as it is kept while another tab is shown. */
function shownDoc(s: GraphDoc): GraphDoc {
  return {
    meta: s.meta,
    nodes: s.nodes,
    edges: s.edges,
    source: s.source,
    device: s.device,
    changed: s.changed,
    unsaved: s.unsaved,
    selectedId: s.selectedId,
    measureCheck: s.measureCheck,
    history: s.history,
  };
}

/** A tab holding nothing worth keeping (with no run under way, which runSession.ts knows): opening a graph replaces it. */
export function isBlankDoc(d: Pick<GraphDoc, 'source' | 'unsaved' | 'nodes'>): boolean {
  return d.source.kind === 'new' && !d.unsaved && d.nodes.length <= 1;
}

/** Whether two open graphs came from the same place (so opening it again shows the open one). */
function sameSource(a: GraphSource, b: GraphSource): boolean {
  if (a.kind === 'example' && b.kind === 'example') return a.path === b.path;
  if (a.kind === 'saved' && b.kind === 'saved') return a.name === b.name;
  if (a.kind === 'run' && b.kind === 'run') return a.runId === b.runId;
  return false;
}

const tabActions: StateCreator<DocumentState, [], [], TabActions> = (set, get) => ({
  show(graph, newTab) {
    if (newTab)
      set((s) => ({
        parked: { ...s.parked, [s.activeTab]: shownDoc(s) },
        tabOrder: [...s.tabOrder, s.nextTab],
        activeTab: s.nextTab,
        nextTab: s.nextTab + 1,
      }));
    set((s) => ({
      meta: graph.meta,
      source: graph.source,
      nodes: graph.nodes,
      edges: graph.edges,
      changed: {},
      unsaved: false,
      selectedId: null,
      history: emptyHistory(),
      device: usePreferences.getState().defaultDevice,
      fitRequest: s.fitRequest + 1,
      measureCheck: graph.measureCheck,
    }));
    return get().activeTab;
  },

  tabOf(source) {
    const s = get();
    if (sameSource(s.source, source)) return s.activeTab;
    const tab = s.tabOrder.find((id) => id !== s.activeTab && s.parked[id] && sameSource(s.parked[id].source, source));
    return tab ?? null;
  },

  docOf(id) {
    const s = get();
    return id === s.activeTab ? shownDoc(s) : s.parked[id];
  },

  switchTab(id) {
    const s = get();
    const doc = s.parked[id];
    if (id === s.activeTab || !doc) return;
    const parked = { ...s.parked, [s.activeTab]: shownDoc(s) };
    delete parked[id];
    set((st) => ({ ...doc, parked, activeTab: id, fitRequest: st.fitRequest + 1 }));
    usePanels.getState().openQuickAdd(null);
  },

  removeTab(id) {
    const s = get();
    const order = s.tabOrder.filter((x) => x !== id);
    if (order.length === 0) {
      set({ unsaved: false, nodes: [], source: { kind: 'new' } });
      return;
    }
    if (id !== s.activeTab) {
      const parked = { ...s.parked };
      delete parked[id];
      set({ parked, tabOrder: order });
      return;
    }
    const next = order[Math.max(0, s.tabOrder.indexOf(id) - 1)]!;
    const shown = s.parked[next]!;
    const parked = { ...s.parked };
    delete parked[next];
    set((st) => ({ ...shown, parked, tabOrder: order, activeTab: next, fitRequest: st.fitRequest + 1 }));
  },

  exportGraph() {
    const s = get();
    return flowToGraph(s.meta, s.nodes, s.edges);
  },

  markExported() {
    set({ unsaved: false });
  },

  markUnsaved() {
    set({ unsaved: true });
  },

  markSaved(source) {
    set({ unsaved: false, source });
  },

  clearChanged() {
    set({ changed: {} });
  },

  setGraphName(name) {
    set((s) => ({ ...recorded(s, 'name'), meta: { ...s.meta, name }, unsaved: true }));
  },

  setDevice(device) {
    set({ device });
  },

  async tidyUp() {
    const s = get();
    const defs = useCatalogue.getState().defs;
    const { layoutPositions } = await import('../graph/layout');
    const placed = layoutPositions(
      s.nodes.map((n) => ({ id: n.id, size: sizeOf({ defs, edges: s.edges }, n, true) })),
      s.edges,
    );
    set((st) => ({
      ...recorded(st, 'tidy'),
      nodes: st.nodes.map((n) => ({ ...n, position: placed.get(n.id) ?? n.position })),
      unsaved: true,
      fitRequest: st.fitRequest + 1,
    }));
  },

  async relayoutMeasured() {
    const s = get();
    const mode = s.measureCheck;
    if (!mode) return;
    if (s.nodes.length === 0 || !s.nodes.every((n) => n.measured?.width && n.measured?.height)) return;
    set({ measureCheck: null });
    const defs = useCatalogue.getState().defs;
    const boxes = s.nodes.map((n) => ({ id: n.id, ...n.position, ...sizeOf({ defs, edges: s.edges }, n, true) }));
    if (!needsMeasuredLayout(mode, boxes)) return;
    const { layoutPositions } = await import('../graph/layout');
    const now = get();
    if (now.fitRequest !== s.fitRequest || now.nodes.some((n) => n.dragging)) return; // another graph opened, or the user moved in
    const placed = layoutPositions(
      now.nodes.map((n) => ({ id: n.id, size: sizeOf({ defs, edges: now.edges }, n, true) })),
      now.edges,
    );
    set((st) => ({
      nodes: st.nodes.map((n) => ({ ...n, position: placed.get(n.id) ?? n.position })),
      fitRequest: st.fitRequest + 1,
    }));
    if (mode === 'check') useMessages.getState().say('info', t('file.laidOut'));
  },
});

export const useDocument = create<DocumentState>()((...a) => ({
  ...initialDocument(),
  ...tabActions(...a),
  ...editActions(...a),
}));
