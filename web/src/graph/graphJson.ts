// CodefyUI's graph.json <-> React Flow's nodes and edges. A file opens
// unchanged and saves back to the same shape: every field the editor does
// not own (internalParams, a node's label, an edge's style, top-level keys
// of later versions) rides along on `raw` and is written back as it came.
import type { Edge, Node } from '@xyflow/react';
import type { GraphJson, GraphJsonEdge, GraphJsonNode } from '../api/types';
import { TRIGGER_HANDLE } from './ports';
import { problem, type Problem } from './problem';

export const NODE_COMPONENT = 'codefy';
export const DATA_EDGE = 'typed';
export const TRIGGER_EDGE = 'trigger';

export interface CodefyNodeData extends Record<string, unknown> {
  /** The node's type (`TrainingLoop`, `preset:Training Pipeline`...). */
  nodeType: string;
  params: Record<string, unknown>;
  /** The node as the file had it; null for a node made in the editor. */
  raw: GraphJsonNode | null;
}

export interface CodefyEdgeData extends Record<string, unknown> {
  kind: 'data' | 'trigger';
  raw: GraphJsonEdge | null;
}

export type CodefyNode = Node<CodefyNodeData, typeof NODE_COMPONENT>;
export type CodefyEdge = Edge<CodefyEdgeData>;

/** The graph's own fields: name, description and any other top-level key. */
export interface GraphMeta {
  name: string;
  description: string;
  /** The file's top level without nodes and edges, for writing back. */
  raw: Record<string, unknown>;
}

export interface FlowGraph {
  meta: GraphMeta;
  nodes: CodefyNode[];
  edges: CodefyEdge[];
  /** Ids of nodes the file gave no usable position (they sit at 0,0 until laid out). */
  unplaced: string[];
}

/** What makes a file not a graph. */
export type GraphFileProblem = Problem<
  | 'file.notObject'
  | 'file.noNodes'
  | 'file.nodesNotArray'
  | 'file.edgesNotArray'
  | 'file.badNode'
  | 'file.duplicateId'
  | 'file.badEdge'
>;

/** A file that is not a graph: `problem` says what is wrong with it (its message is the problem's key). */
export class GraphFileError extends Error {
  readonly problem: GraphFileProblem;
  constructor(found: GraphFileProblem) {
    super(found.key);
    this.name = 'GraphFileError';
    this.problem = found;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function idText(v: unknown): string | null {
  if (typeof v === 'string' && v) return v;
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  return null;
}

function position(v: unknown): { x: number; y: number } | null {
  if (!isObject(v)) return null;
  const { x, y } = v;
  return typeof x === 'number' && typeof y === 'number' && Number.isFinite(x) && Number.isFinite(y) ? { x, y } : null;
}

/** The edge kind by Codefy's (and CodefyUI's) rule: its type, or, in older files, its handle. */
export function edgeKind(e: Pick<GraphJsonEdge, 'type' | 'sourceHandle'>): 'data' | 'trigger' {
  return e.type === 'trigger' || e.sourceHandle === 'trigger' ? 'trigger' : 'data';
}

/** Opens a parsed graph.json; throws GraphFileError when it is not one. */
export function graphToFlow(json: unknown): FlowGraph {
  if (!isObject(json)) throw new GraphFileError(problem('file.notObject'));
  // A graph file always has its node list (empty for an empty graph); JSON without one is something else.
  if (!('nodes' in json)) throw new GraphFileError(problem('file.noNodes'));
  const rawNodes = json.nodes;
  const rawEdges = json.edges ?? [];
  if (!Array.isArray(rawNodes)) throw new GraphFileError(problem('file.nodesNotArray'));
  if (!Array.isArray(rawEdges)) throw new GraphFileError(problem('file.edgesNotArray'));

  const nodes: CodefyNode[] = [];
  const unplaced: string[] = [];
  const ids = new Set<string>();
  rawNodes.forEach((n: unknown, i) => {
    if (!isObject(n)) throw new GraphFileError(problem('file.badNode', { index: i }));
    const id = idText(n.id);
    const type = typeof n.type === 'string' ? n.type : '';
    if (!id || !type) throw new GraphFileError(problem('file.badNode', { index: i }));
    if (ids.has(id)) throw new GraphFileError(problem('file.duplicateId', { id }));
    ids.add(id);
    const data = isObject(n.data) ? n.data : {};
    const params = isObject(data.params) ? { ...data.params } : {};
    const pos = position(n.position);
    if (!pos) unplaced.push(id);
    nodes.push({
      id,
      type: NODE_COMPONENT,
      position: pos ?? { x: 0, y: 0 },
      data: { nodeType: type, params, raw: n as GraphJsonNode },
    });
  });

  const edges: CodefyEdge[] = [];
  const edgeIds = new Set<string>();
  rawEdges.forEach((e: unknown, i) => {
    if (!isObject(e)) throw new GraphFileError(problem('file.badEdge', { index: i }));
    const source = idText(e.source);
    const target = idText(e.target);
    if (!source || !target) throw new GraphFileError(problem('file.badEdge', { index: i }));
    const raw = e as GraphJsonEdge;
    const kind = edgeKind(raw);
    const sourceHandle = typeof raw.sourceHandle === 'string' ? raw.sourceHandle : kind === 'trigger' ? 'trigger' : null;
    const targetHandle = kind === 'trigger' ? TRIGGER_HANDLE : typeof raw.targetHandle === 'string' ? raw.targetHandle : null;
    let id = idText(e.id) ?? `e_${source}_${sourceHandle ?? ''}_${target}_${targetHandle ?? ''}`;
    while (edgeIds.has(id)) id = `${id}_${i}`;
    edgeIds.add(id);
    edges.push({
      id,
      source,
      target,
      sourceHandle,
      targetHandle,
      type: kind === 'trigger' ? TRIGGER_EDGE : DATA_EDGE,
      data: { kind, raw },
    });
  });

  const { nodes: _n, edges: _e, ...top } = json;
  const meta: GraphMeta = {
    name: typeof json.name === 'string' ? json.name : '',
    description: typeof json.description === 'string' ? json.description : '',
    raw: top,
  };
  return { meta, nodes, edges, unplaced };
}

function nodeToJson(n: CodefyNode): GraphJsonNode {
  const raw = n.data.raw;
  const out: GraphJsonNode = { ...(raw ?? {}), id: raw && idText(raw.id) === n.id ? raw.id : n.id, type: n.data.nodeType } as GraphJsonNode;
  const rawPos = raw && isObject(raw.position) ? raw.position : {};
  out.position = { ...rawPos, x: n.position.x, y: n.position.y } as { x: number; y: number };
  const rawData = raw && isObject(raw.data) ? raw.data : null;
  if (rawData || Object.keys(n.data.params).length > 0 || !raw) out.data = { ...(rawData ?? {}), params: n.data.params };
  return out;
}

function edgeToJson(e: CodefyEdge): GraphJsonEdge {
  const raw = e.data?.raw ?? null;
  const kind = e.data?.kind ?? 'data';
  const out: GraphJsonEdge = { ...(raw ?? { id: e.id }), source: e.source, target: e.target } as GraphJsonEdge;
  if (!raw || raw.id !== undefined) out.id = raw && idText(raw.id) === e.id ? (raw.id as string) : e.id;
  // A trigger edge of a file that named no source handle got 'trigger' on opening: not written back.
  const synthesized = kind === 'trigger' && raw !== null && raw.sourceHandle === undefined && e.sourceHandle === 'trigger';
  if (e.sourceHandle && !synthesized) out.sourceHandle = e.sourceHandle;
  else delete out.sourceHandle;
  if (kind === 'trigger' && (e.targetHandle === TRIGGER_HANDLE || !e.targetHandle)) {
    // The trigger lands on the node itself; a file names no handle for it.
    if (raw && typeof raw.targetHandle === 'string') out.targetHandle = raw.targetHandle;
    else delete out.targetHandle;
  } else if (e.targetHandle) {
    out.targetHandle = e.targetHandle;
  } else {
    delete out.targetHandle;
  }
  // The file's own `type` stays while it still says the right kind (absent included).
  if (!raw || edgeKind({ type: raw.type, sourceHandle: out.sourceHandle }) !== kind) out.type = kind;
  return out;
}

/** Writes the graph back in graph.json's shape. */
export function flowToGraph(meta: GraphMeta, nodes: readonly CodefyNode[], edges: readonly CodefyEdge[]): GraphJson {
  const out: GraphJson = { ...meta.raw, nodes: [], edges: [] };
  if (meta.name || 'name' in meta.raw) out.name = meta.name;
  if (meta.description || 'description' in meta.raw) out.description = meta.description;
  out.nodes = nodes.map(nodeToJson);
  out.edges = edges.map(edgeToJson);
  return out;
}

/** A fresh graph named `name`: a Start node and nothing else. */
export function emptyGraph(name: string): GraphJson {
  return {
    name,
    description: '',
    nodes: [{ id: 'start', type: 'Start', position: { x: 0, y: 0 }, data: { params: {} } }],
    edges: [],
  };
}
