// Copy and paste of nodes. What is copied is graph.json text (the selected
// nodes and the wires between them), so it pastes into another tab or
// window, and a graph.json copied from a file pastes too. Pasted nodes get
// fresh ids and keep their layout, moved to where they are put.
import type { GraphJson } from '../api/types';
import { flowToGraph, graphToFlow, type CodefyEdge, type CodefyNode } from './graphJson';
import { uniqueId } from './ids';

/** The selected nodes and the wires among them, as graph.json; null when nothing is selected. */
export function copySelection(nodes: readonly CodefyNode[], edges: readonly CodefyEdge[]): GraphJson | null {
  const picked = nodes.filter((n) => n.selected);
  if (picked.length === 0) return null;
  const ids = new Set(picked.map((n) => n.id));
  const inner = edges.filter((e) => ids.has(e.source) && ids.has(e.target));
  return flowToGraph({ name: '', description: '', raw: {} }, picked, inner);
}

/** Clipboard text as graph.json nodes to paste, or null when it is not a graph with nodes. */
export function parseClipboard(text: string): { nodes: CodefyNode[]; edges: CodefyEdge[] } | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  try {
    const flow = graphToFlow(json);
    return flow.nodes.length ? { nodes: flow.nodes, edges: flow.edges } : null;
  } catch {
    return null;
  }
}

export interface Pasted {
  nodes: CodefyNode[];
  edges: CodefyEdge[];
}

/**
 * Copies of `nodes` and `edges` ready to add to a graph whose ids are `taken`: fresh node ids (named
 * after their type), wires renamed to match, the group's top-left corner moved to `at`, and the
 * copies selected. A node of a type the editor does not know keeps its type (the server will say).
 */
export function pasteNodes(
  nodes: readonly CodefyNode[],
  edges: readonly CodefyEdge[],
  taken: ReadonlySet<string>,
  at: { x: number; y: number },
): Pasted {
  const used = new Set(taken);
  const rename = new Map<string, string>();
  for (const n of nodes) {
    const id = uniqueId(n.data.nodeType, (x) => used.has(x));
    used.add(id);
    rename.set(n.id, id);
  }
  const left = Math.min(...nodes.map((n) => n.position.x));
  const top = Math.min(...nodes.map((n) => n.position.y));
  const pastedNodes: CodefyNode[] = nodes.map((n) => ({
    id: rename.get(n.id)!,
    type: n.type,
    position: { x: Math.round(at.x + n.position.x - left), y: Math.round(at.y + n.position.y - top) },
    // The copy is a node of its own: its file fields (label, ...) ride along, its id is the new one.
    data: {
      nodeType: n.data.nodeType,
      params: structuredClone(n.data.params),
      raw: n.data.raw ? { ...structuredClone(n.data.raw), id: rename.get(n.id)! } : null,
    },
    selected: true,
  }));
  const pastedEdges: CodefyEdge[] = [];
  for (const e of edges) {
    const source = rename.get(e.source);
    const target = rename.get(e.target);
    if (!source || !target) continue;
    const id = `e_${source}_${e.sourceHandle ?? ''}_${target}_${e.targetHandle ?? ''}`;
    pastedEdges.push({ ...e, id, source, target, selected: false, data: { kind: e.data?.kind ?? 'data', raw: null } });
  }
  return { nodes: pastedNodes, edges: pastedEdges };
}
