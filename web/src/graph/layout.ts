// Auto-layout (dagre, left to right, the way data flows) for graphs whose
// file has no positions, or whose positions put nodes on top of each other
// at the size the editor draws them. Loaded on demand (import()): most
// graphs never need it.
import dagre from '@dagrejs/dagre';
import type { Size } from './geometry';

/** New top-left positions for every node, ranked left to right along the edges. */
export function layoutPositions(
  nodes: readonly { id: string; size: Size }[],
  edges: readonly { source: string; target: string }[],
): Map<string, { x: number; y: number }> {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'LR', nodesep: 36, ranksep: 72, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = new Set(nodes.map((n) => n.id));
  for (const n of nodes) g.setNode(n.id, { width: n.size.width, height: n.size.height });
  edges.forEach((e, i) => {
    if (ids.has(e.source) && ids.has(e.target) && e.source !== e.target) g.setEdge(e.source, e.target, {}, `e${i}`);
  });
  dagre.layout(g);
  const out = new Map<string, { x: number; y: number }>();
  for (const n of nodes) {
    const p = g.node(n.id) as { x: number; y: number } | undefined;
    // dagre gives centres; React Flow wants top-left corners.
    if (p) out.set(n.id, { x: Math.round(p.x - n.size.width / 2), y: Math.round(p.y - n.size.height / 2) });
  }
  return out;
}
