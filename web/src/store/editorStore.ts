// The editor's one store: the server's catalogue (node definitions, type
// rules, devices, examples), the open graph, the run's state fed by the
// WebSocket, and the messages. Components read from here and call its
// actions; only its actions talk to the server (through ../api).
import {
  applyEdgeChanges,
  applyNodeChanges,
  type Connection,
  type EdgeChange,
  type NodeChange,
} from '@xyflow/react';
import { create } from 'zustand';
import * as api from '../api';
import type {
  DeviceEntry,
  ExampleEntry,
  ExecuteMessage,
  GraphJson,
  ModelFileEntry,
  NodeDefinition,
  SavedGraphEntry,
  ServerMessage,
} from '../api/types';
import { checkConnection, type NodeFacts, type ProposedConnection } from '../graph/connection';
import { anyOverlap, estimateSize, overlapsAny, type Box, type Size } from '../graph/geometry';
import {
  DATA_EDGE,
  emptyGraph,
  flowToGraph,
  GraphFileError,
  graphToFlow,
  NODE_COMPONENT,
  TRIGGER_EDGE,
  type CodefyEdge,
  type CodefyNode,
  type GraphMeta,
} from '../graph/graphJson';
import { copySelection, parseClipboard, pasteNodes } from '../graph/clipboard';
import { emptyHistory, record, redo, undo, type History } from '../graph/history';
import { uniqueId } from '../graph/ids';
import { issuesFromValidation } from '../graph/issues';
import { defaultParams } from '../graph/params';
import { shapeOf, TRIGGER_HANDLE, type EdgeEnds, type NodeShape } from '../graph/ports';
import { builtinRules, rulesFromServer, type TypeRules } from '../graph/typeRules';
import { inWords, t } from '../i18n';
import {
  idleRun,
  markIssues,
  reduceRun,
  settleRunning,
  startRun,
  type MessageLevel,
  type NewMessage,
  type RunState,
} from './runReducer';
import { searchFor, sourceFromSearch, type GraphSource } from './url';
import { recordOutputsFor } from '../inspector/inspectorStore';

export type { GraphSource };
export type Theme = 'dark' | 'light';

export interface Message extends NewMessage {
  id: number;
  time: number;
}

export interface Toast {
  id: number;
  level: MessageLevel;
  text: string;
}

/** The open graph as undo and redo go back and forth over it. */
export interface GraphSnap {
  meta: GraphMeta;
  nodes: CodefyNode[];
  edges: CodefyEdge[];
}

/** Everything that belongs to one open graph (one tab): kept aside while another tab is shown. */
export interface GraphDoc extends GraphSnap {
  source: GraphSource;
  device: string;
  changed: Record<string, true>;
  unsaved: boolean;
  selectedId: string | null;
  measureCheck: 'laidOut' | 'check' | null;
  run: RunState;
  history: History<GraphSnap>;
}

/** Where the quick-add search opened: on the screen, and the canvas position a node lands at. */
export interface QuickAddSpot {
  screen: { x: number; y: number };
  flow: { x: number; y: number };
}

export interface EditorState {
  // ── the server's catalogue ──
  status: 'loading' | 'ready' | 'offline';
  loadError: string | null;
  defs: Record<string, NodeDefinition>;
  defList: NodeDefinition[];
  rules: TypeRules;
  devices: DeviceEntry[];
  /** Where graphs run unless their own device says otherwise (the settings' choice, remembered). */
  defaultDevice: string;
  /** The open graph's device for runs (the execute message's `device`); a new graph starts at `defaultDevice`. */
  device: string;
  examples: ExampleEntry[];
  savedGraphs: SavedGraphEntry[];
  models: ModelFileEntry[];
  socket: api.SocketState;

  // ── the open graph ──
  meta: GraphMeta;
  source: GraphSource;
  nodes: CodefyNode[];
  edges: CodefyEdge[];
  /** Nodes whose params changed since the last run (sent as changed_nodes). */
  changed: Record<string, true>;
  /** Changes not saved or exported yet. */
  unsaved: boolean;
  selectedId: string | null;
  /** Bumped when the canvas should fit the graph into view (a graph opened or laid out). */
  fitRequest: number;
  /**
   * Set when a graph is opened: 'laidOut' when it was laid out with estimated sizes (lay it out
   * again once React Flow has measured every node), 'check' when its saved positions are kept
   * (lay it out if they overlap at the measured sizes). Cleared by `relayoutMeasured`.
   */
  measureCheck: 'laidOut' | 'check' | null;
  history: History<GraphSnap>;

  // ── the tabs: the open graph above is the active one; the others wait in `parked` ──
  tabOrder: number[];
  activeTab: number;
  parked: Record<number, GraphDoc>;
  /** The tab whose graph the current (or last) run is running. */
  runTab: number | null;

  // ── the run ──
  run: RunState;
  messages: Message[];
  toasts: Toast[];

  // ── the screen ──
  theme: Theme;
  filesOpen: boolean;
  bottomOpen: boolean;
  helpOpen: boolean;
  quickAdd: QuickAddSpot | null;

  // ── actions ──
  init(): Promise<void>;
  /** Opens a graph in a new tab (or in the shown tab when it holds nothing worth keeping); false when it is not a graph. */
  openGraph(json: unknown, source: GraphSource, where?: 'auto' | 'newTab'): Promise<boolean>;
  openExample(path: string): Promise<void>;
  openSaved(name: string): Promise<void>;
  importFile(file: File): Promise<void>;
  newGraph(): Promise<void>;
  exportGraph(): GraphJson;
  markExported(): void;
  saveGraph(): Promise<void>;
  refreshLists(): Promise<void>;
  setGraphName(name: string): void;
  tidyUp(): Promise<void>;
  /** Once every node is measured: redo an opened graph's layout (see `measureCheck`) with the drawn sizes. */
  relayoutMeasured(): Promise<void>;

  onNodesChange(changes: NodeChange<CodefyNode>[]): void;
  onEdgesChange(changes: EdgeChange<CodefyEdge>[]): void;
  connect(c: Connection): void;
  /** The connection check, with a refusal in words. */
  checkConnection(c: ProposedConnection): { ok: true; kind: 'data' | 'trigger' } | { ok: false; reason: string };
  /** Adds a node of `type` at `position` (moved down-right off other nodes with `avoidOverlap`); its id, or null for an unknown type. */
  addNode(type: string, position: { x: number; y: number }, avoidOverlap?: boolean): string | null;
  setParam(nodeId: string, name: string, value: unknown): void;
  select(nodeId: string | null): void;

  undo(): void;
  redo(): void;
  /** The selected nodes and their wires as graph.json text (null with nothing selected). */
  copySelection(): string | null;
  /** Copies the selection and removes it; the copied text, or null. */
  cutSelection(): string | null;
  /** Pastes graph.json text (the editor's own copy, or a file's): its nodes added with fresh ids at `at`, selected. */
  paste(text: string, at?: { x: number; y: number }): boolean;
  /** Copies the selected nodes next to themselves. */
  duplicateSelection(): void;
  selectAll(): void;

  /** A new tab with a fresh graph. */
  newTab(): Promise<void>;
  switchTab(id: number): void;
  /** Closes a tab (asking first when it has unsaved changes); false when it stays open. */
  closeTab(id: number): boolean;

  runGraph(): Promise<void>;
  /** A param field holds text that is not a good value (or, with null, no longer does). */
  setDraftError(nodeId: string, param: string, error: string | null): void;
  stopRun(): void;
  validate(): Promise<void>;
  receive(msg: ServerMessage): void;
  /** Several server messages applied at once: one state change and one re-render for all of them. */
  receiveAll(msgs: readonly ServerMessage[]): void;

  /** The open graph's device. */
  setDevice(device: string): void;
  /** The settings' default device (remembered in this browser); the open graph follows it too. */
  setDefaultDevice(device: string): void;
  settingsOpen: boolean;
  setSettingsOpen(open: boolean): void;
  setTheme(theme: Theme): void;
  setFilesOpen(open: boolean): void;
  setBottomOpen(open: boolean): void;
  setHelpOpen(open: boolean): void;
  openQuickAdd(spot: QuickAddSpot | null): void;
  say(level: MessageLevel, text: string, extra?: Partial<NewMessage>): void;
  toast(level: MessageLevel, text: string): void;
  dismissToast(id: number): void;
  clearMessages(): void;
}

const MESSAGES_KEPT = 500;
const TOAST_MS = 6000;
/** Param fields holding text that is not a good value, by node and param (not graph state: the text is the field's). */
const draftErrors: Record<string, { nodeId: string; param: string; error: string }> = {};
let nextId = 1;

const storage = {
  get(key: string): string | null {
    try {
      return globalThis.localStorage?.getItem(key) ?? null;
    } catch {
      return null;
    }
  },
  set(key: string, value: string): void {
    try {
      globalThis.localStorage?.setItem(key, value);
    } catch {
      /* private mode, or full: not remembered */
    }
  },
  remove(key: string): void {
    try {
      globalThis.localStorage?.removeItem(key);
    } catch {
      /* nothing kept */
    }
  },
};

/**
 * Unsaved edits kept in this browser, so a reload or a server restart loses nothing: one draft per
 * graph (an example, a saved graph, or the one unnamed scratch graph), the most recent few.
 */
const DRAFTS_KEY = 'codefy.drafts';
const DRAFTS_KEPT = 10;
interface Draft {
  source: GraphSource;
  graph: unknown;
  at: number;
}

/** Which draft a graph from `source` keeps its edits in. */
export function draftKey(source: GraphSource): string {
  if (source.kind === 'example') return `example:${source.path}`;
  if (source.kind === 'saved') return `saved:${source.name}`;
  return 'scratch';
}

function readDrafts(): Record<string, Draft> {
  const text = storage.get(DRAFTS_KEY);
  if (!text) return {};
  try {
    const all = JSON.parse(text) as unknown;
    if (!all || typeof all !== 'object' || Array.isArray(all)) return {};
    const out: Record<string, Draft> = {};
    for (const [k, d] of Object.entries(all as Record<string, Draft>))
      if (d && typeof d === 'object' && d.source && d.graph && typeof d.at === 'number') out[k] = d;
    return out;
  } catch {
    return {};
  }
}

function writeDraft(key: string, draft: Draft | null): void {
  const all = readDrafts();
  if (draft) all[key] = draft;
  else if (key in all) delete all[key];
  else return;
  const kept = Object.entries(all)
    .sort(([, a], [, b]) => b.at - a.at)
    .slice(0, DRAFTS_KEPT);
  if (kept.length) storage.set(DRAFTS_KEY, JSON.stringify(Object.fromEntries(kept)));
  else storage.remove(DRAFTS_KEY);
}

function initialTheme(): Theme {
  return storage.get('codefy.theme') === 'light' ? 'light' : 'dark';
}

function runId(): string {
  const c = globalThis.crypto as Crypto | undefined;
  if (c && typeof c.randomUUID === 'function') return c.randomUUID();
  return `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

function edgeEnds(edges: readonly CodefyEdge[]): EdgeEnds[] {
  return edges.map((e) => ({
    source: e.source,
    target: e.target,
    sourceHandle: e.sourceHandle,
    targetHandle: e.targetHandle,
    kind: e.data?.kind ?? 'data',
  }));
}

/** A node's shape from the store's definitions (and, for unknown types, its edges). */
export function nodeShape(s: Pick<EditorState, 'defs' | 'edges'>, node: CodefyNode): NodeShape {
  return shapeOf(node.id, node.data.nodeType, s.defs[node.data.nodeType], node.data.params, edgeEnds(s.edges));
}

function factsLookup(s: Pick<EditorState, 'defs' | 'edges' | 'nodes'>): (id: string) => NodeFacts | undefined {
  const byId = new Map(s.nodes.map((n) => [n.id, n]));
  return (id) => {
    const n = byId.get(id);
    return n ? { type: n.data.nodeType, shape: nodeShape(s, n) } : undefined;
  };
}

function sizeOf(s: Pick<EditorState, 'defs' | 'edges'>, n: CodefyNode, measured: boolean): Size {
  if (measured && n.measured?.width && n.measured?.height) return { width: n.measured.width, height: n.measured.height };
  return estimateSize(nodeShape(s, n));
}

/**
 * Whether an opened graph must be laid out again now that its nodes are measured: one laid out
 * with estimated sizes always (the same layout at the drawn sizes); one with saved positions only
 * when its nodes overlap as drawn.
 */
export function needsMeasuredLayout(mode: 'laidOut' | 'check', boxes: readonly Box[]): boolean {
  return mode === 'laidOut' || anyOverlap(boxes, 0);
}

/** `at`, or the first spot down and right of it where a node of `shape` covers no other node. */
function freeSpot(s: Pick<EditorState, 'defs' | 'edges' | 'nodes'>, shape: NodeShape, at: { x: number; y: number }) {
  const size = estimateSize(shape);
  const boxes = s.nodes.map((n) => ({ id: n.id, ...n.position, ...sizeOf(s, n, true) }));
  let p = at;
  for (let i = 0; i < 40 && overlapsAny({ id: '', ...p, ...size }, boxes); i++) p = { x: p.x + 40, y: p.y + 40 };
  return p;
}

const snapOf = (s: GraphSnap): GraphSnap => ({ meta: s.meta, nodes: s.nodes, edges: s.edges });

function docOf(s: EditorState): GraphDoc {
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
    run: s.run,
    history: s.history,
  };
}

/** A tab holding nothing worth keeping: opening a graph replaces it instead of adding a tab. */
export function isBlankDoc(d: Pick<GraphDoc, 'source' | 'unsaved' | 'nodes' | 'run'>): boolean {
  return d.source.kind === 'new' && !d.unsaved && d.nodes.length <= 1 && d.run.phase === 'idle';
}

/** Whether two open graphs came from the same place (so opening it again shows the open one). */
function sameSource(a: GraphSource, b: GraphSource): boolean {
  if (a.kind === 'example' && b.kind === 'example') return a.path === b.path;
  if (a.kind === 'saved' && b.kind === 'saved') return a.name === b.name;
  return false;
}

/** Nodes whose params differ between two versions of a graph (they must run again). */
function paramsChanged(a: readonly CodefyNode[], b: readonly CodefyNode[]): string[] {
  const before = new Map(a.map((n) => [n.id, n.data.params]));
  return b.filter((n) => before.get(n.id) !== n.data.params).map((n) => n.id);
}

/** The file name the server saves a graph name under (graph_routes.cpp's sanitize_name). */
export function fileStem(name: string): string {
  let out = '';
  for (const c of name) out += /^[A-Za-z0-9_-]$/.test(c) || c.codePointAt(0)! >= 0x80 ? c : '_';
  return out;
}

function describeError(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/** A panel line from what a reducer or an action said (only the fields a line keeps). */
function toMessage(m: NewMessage): NewMessage {
  return {
    level: m.level,
    text: m.text,
    ...(m.nodeId ? { nodeId: m.nodeId } : {}),
    ...(m.param ? { param: m.param } : {}),
    ...(m.outOfMemory ? { outOfMemory: true } : {}),
  };
}

let socket: api.ExecutionSocket | null = null;
/** Server messages waiting for the next batch (see getSocket). */
const incoming: ServerMessage[] = [];
let incomingTimer: ReturnType<typeof setTimeout> | null = null;
let initOnce: Promise<void> | null = null;

export const useEditor = create<EditorState>()((set, get) => {
  /** The run of tab `tab` (the active tab's, or one kept aside). */
  const runOf = (tab: number): RunState | undefined => (tab === get().activeTab ? get().run : get().parked[tab]?.run);
  const setRunOf = (tab: number, update: (r: RunState) => RunState) => {
    if (tab === get().activeTab) set((s) => ({ run: update(s.run) }));
    else
      set((s) => {
        const doc = s.parked[tab];
        return doc ? { parked: { ...s.parked, [tab]: { ...doc, run: update(doc.run) } } } : {};
      });
  };
  /** The tab of the run the socket reports on. */
  const runTabNow = () => get().runTab ?? get().activeTab;

  /** The history after recording the open graph as it is now, before an edit tagged `tag`. */
  const recorded = (s: EditorState, tag: string) => ({ history: record(s.history, snapOf(s), tag, Date.now()) });
  /** Whether a drag of nodes has been recorded for undo already (one step per drag). */
  let dragRecorded = false;
  let nextTab = 2;
  /** Asks the server how run `id` ended (a few tries while it winds down) and says so. */
  const reportRunEnd = async (id: string) => {
    for (let i = 0; i < 20; i++) {
      try {
        const r = await api.getRun(id);
        if (r.status !== 'queued' && r.status !== 'running') {
          const outcome = r.status === 'completed' ? 'completed' : r.status === 'failed' ? 'error' : 'stopped';
          const tab = runTabNow();
          if (runOf(tab)?.serverRunId === id) setRunOf(tab, (r) => ({ ...r, outcome }));
          get().say(r.status === 'completed' ? 'info' : 'warning', t('socket.runEnded', { status: r.status }));
          return;
        }
      } catch {
        /* the server may be restarting: try again */
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  };

  const getSocket = (): api.ExecutionSocket => {
    socket ??= new api.ExecutionSocket(
      (m) => {
        // Messages are applied in batches, at most every 30 ms: a fast run sends hundreds a second,
        // and one re-render each made the editor fall behind the run it shows.
        incoming.push(m);
        incomingTimer ??= setTimeout(() => {
          incomingTimer = null;
          get().receiveAll(incoming.splice(0));
        }, 30);
      },
      (state, reason) => {
        // What arrived before the connection changed is applied first (a run's end among it).
        if (incomingTimer) clearTimeout(incomingTimer);
        incomingTimer = null;
        if (incoming.length) get().receiveAll(incoming.splice(0));
        set({ socket: state });
        if (reason)
          get().say('error', t('socket.refused', { reason: reason === api.HANDSHAKE_REFUSED ? t('socket.refusedHandshake') : reason }));
        // A connection lost mid-run ends that run on the server (CodefyUI's rule),
        // unless it ended first: the server's run list says which. (A refused
        // handshake never started one: Run's own catch says so.)
        const tab = runTabNow();
        const run = runOf(tab);
        if (state === 'closed' && run && run.phase !== 'idle' && reason !== api.HANDSHAKE_REFUSED) {
          const serverRunId = run.serverRunId;
          setRunOf(tab, (r) => ({ ...r, phase: 'idle', outcome: 'stopped', statuses: settleRunning(r.statuses) }));
          get().say('error', t('socket.lostRun'));
          if (serverRunId) void reportRunEnd(serverRunId);
        }
      },
    );
    return socket;
  };

  /** Shows an earlier or later version of the open graph (undo, redo); its edited nodes run again. */
  const restore = (snap: GraphSnap, history: History<GraphSnap>) => {
    set((s) => {
      const changed = { ...s.changed };
      for (const id of paramsChanged(s.nodes, snap.nodes)) changed[id] = true;
      const selectedId = snap.nodes.some((n) => n.id === s.selectedId) ? s.selectedId : null;
      return { ...snap, history, changed, selectedId, unsaved: true };
    });
  };

  /** Shows the tab that already holds the graph from `source`; false when none does. */
  const showOpen = (source: GraphSource): boolean => {
    const s = get();
    if (sameSource(s.source, source)) return true;
    const tab = s.tabOrder.find((id) => id !== s.activeTab && s.parked[id] && sameSource(s.parked[id].source, source));
    if (tab === undefined) return false;
    get().switchTab(tab);
    return true;
  };

  const setSource = (source: GraphSource) => {
    if (typeof window === 'undefined' || !window.history) return;
    const search = searchFor(source, window.location.search);
    if (search !== window.location.search) window.history.replaceState(null, '', `${window.location.pathname}${search}`);
  };

  const applyValidation = (v: api.ValidateResponse) => {
    const issues = v.issues ?? [];
    const marked = issuesFromValidation(issues);
    set((s) => ({ run: markIssues(s.run, marked) }));
    if (v.valid) return;
    if (issues.length)
      for (const i of issues) {
        const field = i.field ? `${i.field}: ` : '';
        get().say('error', i.node_id ? `${i.node_id} (${i.node_type ?? ''}) ${field}${i.message}` : i.message, {
          ...(i.node_id ? { nodeId: i.node_id } : {}),
          ...(marked.find((m) => m.nodeId === i.node_id && m.message === i.message)?.param
            ? { param: marked.find((m) => m.nodeId === i.node_id && m.message === i.message)!.param! }
            : {}),
        });
      }
    else for (const e of v.errors) get().say('error', e);
  };

  const initialize = async (): Promise<void> => {
    set({ status: 'loading', loadError: null });
    try {
      const [defs, devices, types] = await Promise.all([
        api.listNodes(),
        api.listDevices().catch(() => null),
        api.getTypes().catch(() => null),
      ]);
      const byName: Record<string, NodeDefinition> = {};
      for (const d of defs) byName[d.node_name] = d;
      const remembered = storage.get('codefy.device');
      const entries = devices?.devices ?? [];
      const device =
        remembered && entries.some((d) => d.device === remembered) ? remembered : (devices?.default ?? entries[0]?.device ?? 'auto');
      set({
        status: 'ready',
        defs: byName,
        defList: defs,
        devices: entries,
        device,
        defaultDevice: device,
        rules: types ? rulesFromServer(types) : builtinRules,
      });
    } catch (e) {
      set({ status: 'offline', loadError: describeError(e) });
      get().say('error', t('load.serverDown', { error: describeError(e) }));
    }
    void get().refreshLists();
    const wanted = typeof window === 'undefined' ? ({ kind: 'new' } as GraphSource) : sourceFromSearch(window.location.search);
    const draft = readDrafts()[draftKey(wanted)];
    // A graph the person opened while the catalogue loaded (an import) stays: nothing is opened over it.
    const openedMeanwhile = get().source.kind !== 'new' || get().nodes.length > 0;
    if (openedMeanwhile) {
      // (the address's graph, if any, can still be opened from Open…)
    } else if (draft && (await get().openGraph(draft.graph, draft.source))) {
      set({ unsaved: true });
      get().say('info', t('draft.restored', { time: new Date(draft.at).toLocaleTimeString() }));
    } else if (wanted.kind === 'example') await get().openExample(wanted.path);
    else if (wanted.kind === 'saved') await get().openSaved(wanted.name);
    else await get().newGraph();
    if (get().status === 'ready') getSocket().connect().catch(() => undefined);
  };

  return {
    status: 'loading',
    loadError: null,
    defs: {},
    defList: [],
    rules: builtinRules,
    devices: [],
    device: 'auto',
    defaultDevice: 'auto',
    settingsOpen: false,
    examples: [],
    savedGraphs: [],
    models: [],
    socket: 'closed',

    meta: { name: '', description: '', raw: {} },
    source: { kind: 'new' },
    nodes: [],
    edges: [],
    changed: {},
    unsaved: false,
    selectedId: null,
    fitRequest: 0,
    measureCheck: null,
    history: emptyHistory<GraphSnap>(),

    tabOrder: [1],
    activeTab: 1,
    parked: {},
    runTab: null,

    run: idleRun(),
    messages: [],
    toasts: [],

    theme: initialTheme(),
    filesOpen: false,
    bottomOpen: true,
    helpOpen: false,
    quickAdd: null,

    init() {
      // Once per page (StrictMode runs the mounting effect twice in development).
      initOnce ??= initialize();
      return initOnce;
    },

    async refreshLists() {
      const [examples, savedGraphs, models] = await Promise.all([
        api.listExamples().catch(() => [] as ExampleEntry[]),
        api.listGraphs().catch(() => [] as SavedGraphEntry[]),
        api.listModels().catch(() => [] as ModelFileEntry[]),
      ]);
      set({ examples, savedGraphs, models });
    },

    async openGraph(json, source, where = 'auto') {
      let flow;
      try {
        flow = graphToFlow(json);
      } catch (e) {
        const text = e instanceof GraphFileError ? t('file.cannotOpen', { error: inWords(e.problem) }) : describeError(e);
        get().toast('error', text);
        get().say('error', text);
        return false;
      }
      const s = get();
      let nodes = flow.nodes;
      const sized = { defs: s.defs, edges: flow.edges };
      const boxes = nodes.map((n) => ({ id: n.id, ...n.position, ...estimateSize(nodeShape(sized, n)) }));
      const overlapping = flow.unplaced.length === 0 && anyOverlap(boxes);
      if (flow.unplaced.length > 0 || overlapping) {
        const { layoutPositions } = await import('../graph/layout');
        const placed = layoutPositions(
          nodes.map((n) => ({ id: n.id, size: sizeOf(sized, n, false) })),
          flow.edges,
        );
        nodes = nodes.map((n) => ({ ...n, position: placed.get(n.id) ?? n.position }));
      }
      // A graph opens in a tab of its own, unless the shown tab holds nothing worth keeping.
      if (where === 'newTab' || !isBlankDoc(get())) {
        const id = nextTab++;
        set((st) => ({ parked: { ...st.parked, [st.activeTab]: docOf(st) }, tabOrder: [...st.tabOrder, id], activeTab: id }));
      }
      set((st) => ({
        meta: flow.meta,
        source,
        nodes,
        edges: flow.edges,
        changed: {},
        unsaved: false,
        selectedId: null,
        run: idleRun(),
        history: emptyHistory<GraphSnap>(),
        device: st.defaultDevice,
        fitRequest: st.fitRequest + 1,
        measureCheck: nodes.length === 0 ? null : flow.unplaced.length > 0 || overlapping ? 'laidOut' : 'check',
      }));
      setSource(source);
      if (source.kind !== 'new') {
        get().say('info', t('file.opened', { name: flow.meta.name || t('graph.untitled'), nodes: nodes.length }));
        if (overlapping) get().say('info', t('file.laidOut'));
      }
      return true;
    },

    async openExample(path) {
      if (showOpen({ kind: 'example', path })) return;
      try {
        const json = await api.loadExample(path);
        await get().openGraph(json, { kind: 'example', path });
      } catch (e) {
        get().toast('error', t('file.exampleFailed', { path, error: describeError(e) }));
        get().say('error', t('file.exampleFailed', { path, error: describeError(e) }));
        if (get().nodes.length === 0) await get().newGraph();
      }
    },

    async openSaved(name) {
      if (showOpen({ kind: 'saved', name })) return;
      try {
        const json = await api.loadGraph(name);
        await get().openGraph(json, { kind: 'saved', name });
      } catch (e) {
        get().toast('error', t('file.graphFailed', { name, error: describeError(e) }));
        get().say('error', t('file.graphFailed', { name, error: describeError(e) }));
        if (get().nodes.length === 0) await get().newGraph();
      }
    },

    async importFile(file) {
      let json: unknown;
      try {
        json = JSON.parse(await file.text());
      } catch (e) {
        const text = t('file.cannotOpen', { error: t('file.notJson', { name: file.name, error: describeError(e) }) });
        get().toast('error', text);
        get().say('error', text);
        return;
      }
      await get().openGraph(json, { kind: 'file', filename: file.name });
    },

    async newGraph() {
      await get().openGraph(emptyGraph(t('graph.untitled')), { kind: 'new' });
    },

    exportGraph() {
      const s = get();
      return flowToGraph(s.meta, s.nodes, s.edges);
    },

    markExported() {
      set({ unsaved: false });
    },

    async saveGraph() {
      const graph = get().exportGraph();
      if (!graph.name) {
        get().toast('warning', t('save.needName'));
        return;
      }
      try {
        let res;
        const source = get().source;
        // Saving the graph that was opened from the server under this name again replaces it without asking.
        const same = source.kind === 'saved' && source.name === fileStem(graph.name);
        try {
          res = await api.saveGraph(graph, same);
        } catch (e) {
          if (!(e instanceof api.ApiError) || e.status !== 409) throw e;
          const ok = typeof window !== 'undefined' && window.confirm(t('save.replace', { name: graph.name }));
          if (!ok) return;
          res = await api.saveGraph(graph, true);
        }
        set({ unsaved: false });
        setSource({ kind: 'saved', name: res.file });
        set({ source: { kind: 'saved', name: res.file } });
        get().toast('info', t('save.done', { name: graph.name }));
        get().say('info', t('save.doneAt', { name: graph.name, path: res.path }));
        void get().refreshLists();
      } catch (e) {
        get().toast('error', t('save.failed', { error: describeError(e) }));
        get().say('error', t('save.failed', { error: describeError(e) }));
      }
    },

    setGraphName(name) {
      set((s) => ({ ...recorded(s, 'name'), meta: { ...s.meta, name }, unsaved: true }));
    },

    async tidyUp() {
      const s = get();
      const { layoutPositions } = await import('../graph/layout');
      const placed = layoutPositions(
        s.nodes.map((n) => ({ id: n.id, size: sizeOf(s, n, true) })),
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
      const boxes = s.nodes.map((n) => ({ id: n.id, ...n.position, ...sizeOf(s, n, true) }));
      if (!needsMeasuredLayout(mode, boxes)) return;
      const { layoutPositions } = await import('../graph/layout');
      const now = get();
      if (now.fitRequest !== s.fitRequest || now.nodes.some((n) => n.dragging)) return; // another graph opened, or the user moved in
      const placed = layoutPositions(
        now.nodes.map((n) => ({ id: n.id, size: sizeOf(now, n, true) })),
        now.edges,
      );
      set((st) => ({
        nodes: st.nodes.map((n) => ({ ...n, position: placed.get(n.id) ?? n.position })),
        fitRequest: st.fitRequest + 1,
      }));
      if (mode === 'check') get().say('info', t('file.laidOut'));
    },

    onNodesChange(changes) {
      set((s) => {
        const nodes = applyNodeChanges(changes, s.nodes);
        const moved = changes.some((c) => c.type === 'position' || c.type === 'remove' || c.type === 'add');
        const selectionChanged = changes.some((c) => c.type === 'select' || c.type === 'remove');
        let selectedId = s.selectedId;
        if (selectionChanged) selectedId = nodes.find((n) => n.selected)?.id ?? null;
        // Undo steps: a removal (with the wires it takes, which arrive separately), and each drag once.
        let history = s.history;
        if (changes.some((c) => c.type === 'remove')) history = recorded(s, 'remove').history;
        const drags = changes.filter((c) => c.type === 'position');
        if (drags.some((c) => c.type === 'position' && c.dragging) && !dragRecorded) {
          dragRecorded = true;
          history = recorded(s, 'move').history;
        }
        if (drags.some((c) => c.type === 'position' && !c.dragging)) dragRecorded = false;
        return { nodes, selectedId, unsaved: s.unsaved || moved, history };
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
      const s = get();
      const verdict = checkConnection(c, factsLookup(s), s.rules);
      return verdict.ok ? verdict : { ok: false, reason: inWords(verdict.problem) };
    },

    connect(c) {
      const verdict = get().checkConnection(c);
      if (!verdict.ok) {
        get().toast('warning', verdict.reason);
        get().say('warning', verdict.reason, { nodeId: c.target ?? undefined });
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
      const def = s.defs[type];
      if (!def) return null;
      if (avoidOverlap) position = freeSpot(s, shapeOf('', type, def, {}, []), position);
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
      set((s) => {
        const issues = s.run.issues[nodeId];
        const left = issues?.filter((i) => i.param !== name);
        const run =
          issues && left && left.length !== issues.length
            ? { ...s.run, issues: { ...s.run.issues, [nodeId]: left } }
            : s.run;
        return {
          ...recorded(s, `param:${nodeId}:${name}`),
          nodes: s.nodes.map((n) =>
            n.id === nodeId ? { ...n, data: { ...n.data, params: { ...n.data.params, [name]: value } } } : n,
          ),
          changed: { ...s.changed, [nodeId]: true },
          unsaved: true,
          run,
        };
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
      const left = Math.min(...parsed.nodes.map((n) => n.position.x));
      const top = Math.min(...parsed.nodes.map((n) => n.position.y));
      // Without a place to put them, copies land down and right of the originals, clear of what is there.
      let spot = at ?? { x: left + 40, y: top + 40 };
      if (!at) {
        const boxes = s.nodes.map((n) => ({ id: n.id, ...n.position, ...sizeOf(s, n, true) }));
        const first = parsed.nodes.find((n) => n.position.x === left) ?? parsed.nodes[0]!;
        const size = sizeOf(s, first, false);
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

    async newTab() {
      await get().openGraph(emptyGraph(t('graph.untitled')), { kind: 'new' }, 'newTab');
    },

    switchTab(id) {
      const s = get();
      if (id === s.activeTab || !s.parked[id]) return;
      const doc = s.parked[id];
      const parked = { ...s.parked, [s.activeTab]: docOf(s) };
      delete parked[id];
      set((st) => ({ ...doc, parked, activeTab: id, fitRequest: st.fitRequest + 1, quickAdd: null }));
      setSource(doc.source);
    },

    closeTab(id) {
      const s = get();
      const doc = id === s.activeTab ? docOf(s) : s.parked[id];
      if (!doc) return false;
      if (doc.run.phase !== 'idle') {
        get().toast('warning', t('tabs.running'));
        return false;
      }
      if (doc.unsaved && typeof window !== 'undefined' && !window.confirm(t('tabs.closeUnsaved', { name: doc.meta.name || t('graph.untitled') })))
        return false;
      if (doc.unsaved) writeDraft(draftKey(doc.source), null);
      const order = s.tabOrder.filter((x) => x !== id);
      if (order.length === 0) {
        // The last tab closes into a fresh graph.
        set({ unsaved: false, nodes: [], source: { kind: 'new' }, run: idleRun() });
        void get().newGraph();
        return true;
      }
      if (id !== s.activeTab) {
        const parked = { ...s.parked };
        delete parked[id];
        set({ parked, tabOrder: order, ...(s.runTab === id ? { runTab: null } : {}) });
        return true;
      }
      const next = order[Math.max(0, s.tabOrder.indexOf(id) - 1)]!;
      const shown = s.parked[next]!;
      const parked = { ...s.parked };
      delete parked[next];
      set((st) => ({ ...shown, parked, tabOrder: order, activeTab: next, fitRequest: st.fitRequest + 1, ...(s.runTab === id ? { runTab: null } : {}) }));
      setSource(shown.source);
      return true;
    },

    async validate() {
      const graph = get().exportGraph();
      try {
        const v = await api.validateGraph(graph);
        applyValidation(v);
        if (v.valid) get().toast('info', t('validate.ok'));
      } catch (e) {
        get().say('error', t('validate.failed', { error: describeError(e) }));
      }
    },

    setDraftError(nodeId, param, error) {
      const key = `${nodeId}\u0000${param}`;
      if (error === null && !(key in draftErrors)) return;
      if (error === null) delete draftErrors[key];
      else draftErrors[key] = { nodeId, param, error };
    },

    async runGraph() {
      const s = get();
      if (s.run.phase !== 'idle') return;
      // One run at a time per editor (the server runs one per connection): say where it is.
      if (s.runTab !== null && s.runTab !== s.activeTab && (runOf(s.runTab)?.phase ?? 'idle') !== 'idle') {
        const other = s.parked[s.runTab];
        get().toast('warning', t('tabs.otherRunning', { name: other?.meta.name || t('graph.untitled') }));
        return;
      }
      // A field showing a refused value would otherwise run with its last good value, unseen.
      const drafts = Object.values(draftErrors).filter((d) => s.nodes.some((n) => n.id === d.nodeId));
      if (drafts.length) {
        for (const d of drafts)
          get().say('error', t('param.draftProblem', { param: d.param, error: d.error }), {
            nodeId: d.nodeId,
            param: d.param,
          });
        get().toast('error', t('param.draftRefused', { count: drafts.length }));
        set({ bottomOpen: true });
        return;
      }
      const id = runId();
      const graph = s.exportGraph();
      set((st) => ({ run: { ...startRun(id) }, bottomOpen: true, runTab: st.activeTab }));
      let verdict: api.ValidateResponse | null = null;
      try {
        verdict = await api.validateGraph(graph);
      } catch {
        // The check could not be asked: the run's own validation still refuses a bad graph.
      }
      if (verdict && !verdict.valid) {
        applyValidation(verdict);
        set((st) => ({ run: { ...st.run, phase: 'idle', outcome: 'error' } }));
        get().toast('error', t('validate.refused', { count: verdict.errors.length }));
        return;
      }
      const ws = getSocket();
      try {
        await ws.connect();
      } catch (e) {
        set((st) => ({ run: { ...st.run, phase: 'idle', outcome: 'error' } }));
        get().say('error', t('socket.connectFailed', { error: describeError(e) }));
        get().toast('error', t('socket.connectFailed', { error: describeError(e) }));
        return;
      }
      const changed = Object.keys(get().changed).filter((nid) => get().nodes.some((n) => n.id === nid));
      const source = get().source;
      const message: ExecuteMessage = {
        ...graph,
        action: 'execute',
        graph_id: graph.name || 'editor',
        device: get().device,
        run_id: id,
        record_outputs: recordOutputsFor(id),
        weights_persistent: true,
        ...(changed.length ? { changed_nodes: changed } : {}),
        ...(source.kind === 'example' ? { example: source.path } : {}),
      };
      if (!ws.send(message)) {
        set((st) => ({ run: { ...st.run, phase: 'idle', outcome: 'error' } }));
        get().say('error', t('socket.connectFailed', { error: 'not connected' }));
        return;
      }
      set({ changed: {} });
    },

    stopRun() {
      const s = get();
      if (s.run.phase === 'idle') return;
      if (!socket || !socket.send({ action: 'stop' })) {
        set((st) => ({ run: { ...st.run, phase: 'idle', outcome: 'stopped' } }));
        return;
      }
      set((st) => ({ run: { ...st.run, phase: 'stopping' } }));
    },

    receive(msg) {
      get().receiveAll([msg]);
    },

    receiveAll(msgs) {
      const tab = runTabNow();
      let run = runOf(tab);
      if (!run || msgs.length === 0) return;
      const said: NewMessage[] = [];
      for (const msg of msgs) {
        const next = reduceRun(run, msg);
        run = next.state;
        said.push(...next.messages);
      }
      const ran = run;
      setRunOf(tab, () => ran);
      if (said.length) {
        const now = Date.now();
        const added = said.map((m): Message => ({ ...toMessage(m), id: nextId++, time: now }));
        set((s) => ({ messages: [...s.messages, ...added].slice(-MESSAGES_KEPT) }));
      }
      if (msgs.some((m) => m.type === 'execution_error')) get().toast('error', t('run.failedToast'));
    },

    setDevice(device) {
      set({ device });
    },

    setDefaultDevice(device) {
      storage.set('codefy.device', device);
      set({ defaultDevice: device, device });
    },

    setSettingsOpen(open) {
      set({ settingsOpen: open });
    },

    setTheme(theme) {
      storage.set('codefy.theme', theme);
      if (typeof document !== 'undefined') document.documentElement.dataset.theme = theme;
      set({ theme });
    },

    setFilesOpen(open) {
      set({ filesOpen: open });
      if (open) void get().refreshLists();
    },

    setBottomOpen(open) {
      set({ bottomOpen: open });
    },

    setHelpOpen(open) {
      set({ helpOpen: open });
    },

    openQuickAdd(spot) {
      set({ quickAdd: spot });
    },

    say(level, text, extra) {
      const m: Message = { ...toMessage({ ...extra, level, text }), id: nextId++, time: Date.now() };
      set((s) => ({ messages: [...s.messages.slice(-(MESSAGES_KEPT - 1)), m] }));
    },

    toast(level, text) {
      const id = nextId++;
      set((s) => ({ toasts: [...s.toasts.slice(-3), { id, level, text }] }));
      setTimeout(() => get().dismissToast(id), level === 'error' ? TOAST_MS * 2 : TOAST_MS);
    },

    dismissToast(id) {
      set((s) => ({ toasts: s.toasts.filter((x) => x.id !== id) }));
    },

    clearMessages() {
      set({ messages: [] });
    },
  };

});

/** For tests: the store back to its first state. */
export function resetEditorForTests(): void {
  incoming.length = 0;
  if (incomingTimer) clearTimeout(incomingTimer);
  incomingTimer = null;
  socket?.close();
  socket = null;
  initOnce = null;
  useEditor.setState(useEditor.getInitialState(), true);
}

// Keep the open graph's unsaved edits in this browser (a moment after the
// last change), and forget them once the graph is saved or replaced.
let draftTimer: ReturnType<typeof setTimeout> | undefined;
useEditor.subscribe((s, prev) => {
  if (s.nodes === prev.nodes && s.edges === prev.edges && s.meta === prev.meta && s.unsaved === prev.unsaved) return;
  clearTimeout(draftTimer);
  draftTimer = setTimeout(() => {
    const now = useEditor.getState();
    const key = draftKey(now.source);
    if (!now.unsaved) return writeDraft(key, null);
    writeDraft(key, { source: now.source, graph: now.exportGraph(), at: Date.now() });
  }, 400);
});
