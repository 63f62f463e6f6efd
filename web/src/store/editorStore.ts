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
import { checkConnection, type ConnectionVerdict, type NodeFacts, type ProposedConnection } from '../graph/connection';
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
import { issuesFromValidation } from '../graph/issues';
import { defaultParams } from '../graph/params';
import { shapeOf, TRIGGER_HANDLE, type EdgeEnds, type NodeShape } from '../graph/ports';
import { builtinRules, rulesFromServer, type TypeRules } from '../graph/typeRules';
import { t } from '../i18n';
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

export interface EditorState {
  // ── the server's catalogue ──
  status: 'loading' | 'ready' | 'offline';
  loadError: string | null;
  defs: Record<string, NodeDefinition>;
  defList: NodeDefinition[];
  rules: TypeRules;
  devices: DeviceEntry[];
  /** The graph's default device for runs (the execute message's `device`). */
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

  // ── the run ──
  run: RunState;
  messages: Message[];
  toasts: Toast[];

  // ── the screen ──
  theme: Theme;
  filesOpen: boolean;
  bottomOpen: boolean;

  // ── actions ──
  init(): Promise<void>;
  openGraph(json: unknown, source: GraphSource): Promise<boolean>;
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
  checkConnection(c: ProposedConnection): ConnectionVerdict;
  /** Adds a node of `type` at `position` (moved down-right off other nodes with `avoidOverlap`); its id, or null for an unknown type. */
  addNode(type: string, position: { x: number; y: number }, avoidOverlap?: boolean): string | null;
  setParam(nodeId: string, name: string, value: unknown): void;
  select(nodeId: string | null): void;

  runGraph(): Promise<void>;
  /** A param field holds text that is not a good value (or, with null, no longer does). */
  setDraftError(nodeId: string, param: string, error: string | null): void;
  stopRun(): void;
  validate(): Promise<void>;
  receive(msg: ServerMessage): void;

  setDevice(device: string): void;
  setTheme(theme: Theme): void;
  setFilesOpen(open: boolean): void;
  setBottomOpen(open: boolean): void;
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

/** Unsaved edits kept in this browser, so a reload or a server restart loses nothing. */
const DRAFT_KEY = 'codefy.draft';
interface Draft {
  source: GraphSource;
  graph: unknown;
  at: number;
}

/** Whether a kept draft belongs to what the address asks to open. */
function draftFits(draft: Draft, wanted: GraphSource): boolean {
  if (wanted.kind === 'example') return draft.source.kind === 'example' && draft.source.path === wanted.path;
  if (wanted.kind === 'saved') return draft.source.kind === 'saved' && draft.source.name === wanted.name;
  return draft.source.kind === 'new' || draft.source.kind === 'file';
}

function readDraft(): Draft | null {
  const text = storage.get(DRAFT_KEY);
  if (!text) return null;
  try {
    const d = JSON.parse(text) as Draft;
    return d && typeof d === 'object' && d.source && d.graph ? d : null;
  } catch {
    return null;
  }
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

function uniqueId(base: string, taken: (id: string) => boolean): string {
  const stem = base.replace(/^preset:/, '').replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '').toLowerCase() || 'node';
  for (let i = 1; ; i++) {
    const id = `${stem}_${i}`;
    if (!taken(id)) return id;
  }
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

let socket: api.ExecutionSocket | null = null;
let initOnce: Promise<void> | null = null;

export const useEditor = create<EditorState>()((set, get) => {
  /** Asks the server how run `id` ended (a few tries while it winds down) and says so. */
  const reportRunEnd = async (id: string) => {
    for (let i = 0; i < 20; i++) {
      try {
        const r = await api.getRun(id);
        if (r.status !== 'queued' && r.status !== 'running') {
          const outcome = r.status === 'completed' ? 'completed' : r.status === 'failed' ? 'error' : 'stopped';
          if (get().run.serverRunId === id) set((s) => ({ run: { ...s.run, outcome } }));
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
      (m) => get().receive(m),
      (state, reason) => {
        set({ socket: state });
        if (reason) get().say('error', t('socket.refused', { reason }));
        // A connection lost mid-run ends that run on the server (CodefyUI's rule),
        // unless it ended first: the server's run list says which.
        if (state === 'closed' && get().run.phase !== 'idle') {
          const serverRunId = get().run.serverRunId;
          set((s) => ({ run: { ...s.run, phase: 'idle', outcome: 'stopped', statuses: settleRunning(s.run.statuses) } }));
          get().say('error', t('socket.lostRun'));
          if (serverRunId) void reportRunEnd(serverRunId);
        }
      },
    );
    return socket;
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
        rules: types ? rulesFromServer(types) : builtinRules,
      });
    } catch (e) {
      set({ status: 'offline', loadError: describeError(e) });
      get().say('error', t('load.serverDown', { error: describeError(e) }));
    }
    void get().refreshLists();
    const wanted = typeof window === 'undefined' ? ({ kind: 'new' } as GraphSource) : sourceFromSearch(window.location.search);
    const draft = readDraft();
    if (draft && draftFits(draft, wanted) && (await get().openGraph(draft.graph, draft.source))) {
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

    run: idleRun(),
    messages: [],
    toasts: [],

    theme: initialTheme(),
    filesOpen: false,
    bottomOpen: true,

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

    async openGraph(json, source) {
      let flow;
      try {
        flow = graphToFlow(json);
      } catch (e) {
        const text = e instanceof GraphFileError ? t('file.cannotOpen', { error: e.message }) : describeError(e);
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
      set((st) => ({
        meta: flow.meta,
        source,
        nodes,
        edges: flow.edges,
        changed: {},
        unsaved: false,
        selectedId: null,
        run: idleRun(),
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
      await get().openGraph(emptyGraph(), { kind: 'new' });
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
      set((s) => ({ meta: { ...s.meta, name }, unsaved: true }));
    },

    async tidyUp() {
      const s = get();
      const { layoutPositions } = await import('../graph/layout');
      const placed = layoutPositions(
        s.nodes.map((n) => ({ id: n.id, size: sizeOf(s, n, true) })),
        s.edges,
      );
      set((st) => ({
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
        return { nodes, selectedId, unsaved: s.unsaved || moved };
      });
    },

    onEdgesChange(changes) {
      set((s) => ({
        edges: applyEdgeChanges(changes, s.edges),
        unsaved: s.unsaved || changes.some((c) => c.type === 'remove' || c.type === 'add'),
      }));
    },

    checkConnection(c) {
      const s = get();
      return checkConnection(c, factsLookup(s), s.rules);
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
        return { edges: [...kept, edge], unsaved: true };
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
      set({ run: { ...startRun(id) }, bottomOpen: true });
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
      const { state, messages } = reduceRun(get().run, msg);
      set({ run: state });
      for (const m of messages) get().say(m.level, m.text, m);
      if (msg.type === 'execution_error') get().toast('error', t('run.failedToast'));
    },

    setDevice(device) {
      storage.set('codefy.device', device);
      set({ device });
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

    say(level, text, extra) {
      const m: Message = {
        id: nextId++,
        time: Date.now(),
        level,
        text,
        ...(extra?.nodeId ? { nodeId: extra.nodeId } : {}),
        ...(extra?.param ? { param: extra.param } : {}),
      };
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
    if (!now.unsaved) return storage.remove(DRAFT_KEY);
    storage.set(DRAFT_KEY, JSON.stringify({ source: now.source, graph: now.exportGraph(), at: Date.now() } satisfies Draft));
  }, 400);
});
