// The document store's shape (document.ts makes the store, graphEdits.ts
// its editing actions): the open graphs, one per tab, with their undo
// history. The shown tab's graph is spread over the top-level fields; the
// others wait in `parked`. Runs are not here: runSession.ts keeps each tab's.
import type { Connection, EdgeChange, NodeChange } from '@xyflow/react';
import type { GraphJson } from '../api/types';
import type { ProposedConnection } from '../graph/connection';
import type { CodefyEdge, CodefyNode, GraphMeta } from '../graph/graphJson';
import type { History } from '../graph/history';
import type { GraphSource } from './url';

/** The open graph as undo and redo go back and forth over it. */
export interface GraphSnap {
  meta: GraphMeta;
  nodes: CodefyNode[];
  edges: CodefyEdge[];
}

/** Everything that belongs to one open graph (one tab): kept aside while another tab is shown. */
export interface GraphDoc extends GraphSnap {
  source: GraphSource;
  /** The graph's device for runs (the execute message's `device`); a new graph starts at the default device. */
  device: string;
  /** Nodes whose params changed since the last run (sent as changed_nodes). */
  changed: Record<string, true>;
  /** Changes not saved or exported yet. */
  unsaved: boolean;
  selectedId: string | null;
  /**
   * Set when a graph is opened: 'laidOut' when it was laid out with estimated sizes (lay it out
   * again once React Flow has measured every node), 'check' when its saved positions are kept
   * (lay it out if they overlap at the measured sizes). Cleared by `relayoutMeasured`.
   */
  measureCheck: 'laidOut' | 'check' | null;
  history: History<GraphSnap>;
}

/** A graph opened from a file (parsed and placed) as a tab shows it. */
export interface OpenedGraph extends GraphSnap {
  source: GraphSource;
  measureCheck: GraphDoc['measureCheck'];
}

/** The connection check in words: why a wire is refused, in the current language. */
export type CheckedConnection = { ok: true; kind: 'data' | 'trigger' } | { ok: false; reason: string };

export interface DocumentData extends GraphDoc {
  /** Bumped when the canvas should fit the graph into view (a graph opened or laid out). */
  fitRequest: number;
  /** Whether the drag under way has been recorded for undo already (one step per drag). */
  dragRecorded: boolean;
  tabOrder: number[];
  activeTab: number;
  parked: Record<number, GraphDoc>;
  /** The id the next tab gets. */
  nextTab: number;
}

/** The tabs and the open graph as a whole (document.ts). */
export interface TabActions {
  /** Shows `graph` in a new tab (`newTab`) or in the shown one, with no history; the tab's id. */
  show(graph: OpenedGraph, newTab: boolean): number;
  /** The tab that holds the graph from `source` (the shown one first); null when none does. */
  tabOf(source: GraphSource): number | null;
  /** Tab `id`'s graph (the shown one or one kept aside). */
  docOf(id: number): GraphDoc | undefined;
  switchTab(id: number): void;
  /** Takes tab `id` away (no questions: editor.ts's closeTab asks them); the last tab is left blank to open a new graph into. */
  removeTab(id: number): void;
  exportGraph(): GraphJson;
  markExported(): void;
  /** The shown graph holds edits not saved anywhere (a draft restored from this browser). */
  markUnsaved(): void;
  /** The graph was saved as `source`. */
  markSaved(source: GraphSource): void;
  /** The graph's params were sent to run: nothing is changed since. */
  clearChanged(): void;
  setGraphName(name: string): void;
  setDevice(device: string): void;
  tidyUp(): Promise<void>;
  /** Once every node is measured: redo an opened graph's layout (see `measureCheck`) with the drawn sizes. */
  relayoutMeasured(): Promise<void>;
}

/** Editing the shown graph (graphEdits.ts): each edit is one undo step. */
export interface EditActions {
  onNodesChange(changes: NodeChange<CodefyNode>[]): void;
  onEdgesChange(changes: EdgeChange<CodefyEdge>[]): void;
  connect(c: Connection): void;
  checkConnection(c: ProposedConnection): CheckedConnection;
  /** Adds a node of `type` at `position` (moved down-right off other nodes with `avoidOverlap`); its id, or null for an unknown type. */
  addNode(type: string, position: { x: number; y: number }, avoidOverlap?: boolean): string | null;
  /** Sets a param's value (editor.ts's setParam also clears the run's mark on it). */
  setParam(nodeId: string, name: string, value: unknown): void;
  /** Sets several params, of one node or several, as one undo step (a memory plan's option applied). */
  setParams(edits: readonly { nodeId: string; param: string; value: unknown }[]): void;
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
}

export type DocumentState = DocumentData & TabActions & EditActions;
