// Nodes as the canvas places them: a node's shape from its definition and
// wires, the size it is drawn at (measured, else estimated), a free spot for
// a new node, and whether an opened graph must be laid out again once its
// nodes are measured. Pure, like the rest of graph/.
import type { NodeDefinition } from '../api/types';
import type { NodeFacts } from './connection';
import { anyOverlap, estimateSize, overlapsAny, type Box, type Size } from './geometry';
import type { CodefyEdge, CodefyNode } from './graphJson';
import { shapeOf, type EdgeEnds, type NodeShape } from './ports';

/** What a node's shape depends on besides the node: the server's definitions, and the wires (for unknown types). */
export interface ShapeContext {
  defs: Readonly<Record<string, NodeDefinition>>;
  edges: readonly CodefyEdge[];
}

export function edgeEnds(edges: readonly CodefyEdge[]): EdgeEnds[] {
  return edges.map((e) => ({
    source: e.source,
    target: e.target,
    sourceHandle: e.sourceHandle,
    targetHandle: e.targetHandle,
    kind: e.data?.kind ?? 'data',
  }));
}

/** A node's shape from its definition (and, for unknown types, its edges). */
export function nodeShape(s: ShapeContext, node: CodefyNode): NodeShape {
  return shapeOf(node.id, node.data.nodeType, s.defs[node.data.nodeType], node.data.params, edgeEnds(s.edges));
}

/** Each node's type and shape by id, for the connection check. */
export function factsLookup(s: ShapeContext & { nodes: readonly CodefyNode[] }): (id: string) => NodeFacts | undefined {
  const byId = new Map(s.nodes.map((n) => [n.id, n]));
  return (id) => {
    const n = byId.get(id);
    return n ? { type: n.data.nodeType, shape: nodeShape(s, n) } : undefined;
  };
}

/** The size `n` is drawn at: as measured (when `measured` and React Flow has measured it), else estimated. */
export function sizeOf(s: ShapeContext, n: CodefyNode, measured: boolean): Size {
  if (measured && n.measured?.width && n.measured?.height) return { width: n.measured.width, height: n.measured.height };
  return estimateSize(nodeShape(s, n));
}

/** `at`, or the first spot down and right of it where a node of `shape` covers no other node. */
export function freeSpot(
  s: ShapeContext & { nodes: readonly CodefyNode[] },
  shape: NodeShape,
  at: { x: number; y: number },
): { x: number; y: number } {
  const size = estimateSize(shape);
  const boxes = s.nodes.map((n) => ({ id: n.id, ...n.position, ...sizeOf(s, n, true) }));
  let p = at;
  for (let i = 0; i < 40 && overlapsAny({ id: '', ...p, ...size }, boxes); i++) p = { x: p.x + 40, y: p.y + 40 };
  return p;
}

/**
 * Whether an opened graph must be laid out again now that its nodes are measured: one laid out
 * with estimated sizes always (the same layout at the drawn sizes); one with saved positions only
 * when its nodes overlap as drawn.
 */
export function needsMeasuredLayout(mode: 'laidOut' | 'check', boxes: readonly Box[]): boolean {
  return mode === 'laidOut' || anyOverlap(boxes, 0);
}
