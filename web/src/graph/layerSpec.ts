// SequentialModel's `layers` value (CodefyUI's v2 layer spec) as the layer
// editor sees it: a linear chain Input → layers → Output that can be edited
// as a list, or anything else (branches, merges), shown read-only. Pure
// functions: every edit returns a new chain, and specOfChain writes the
// nodes and edges back so they always agree.
import type { LayerParamDefinition, LayerTypeDefinition } from '../api/layers';

export interface SpecPort {
  id: string;
  name: string;
}

export interface SpecNode {
  id: string;
  type: string;
  params?: Record<string, unknown>;
  ports?: SpecPort[];
  /** Anything else a node carries (CodefyUI's editor keeps positions) stays as it is. */
  [key: string]: unknown;
}

export interface SpecEdge {
  id?: string;
  source: string;
  target: string;
  sourceHandle?: string | null;
  targetHandle?: string | null;
  [key: string]: unknown;
}

export interface LayerSpec {
  version: number;
  nodes: SpecNode[];
  edges: SpecEdge[];
  [key: string]: unknown;
}

/** A spec that is one straight line from its Input to its Output. */
export interface Chain {
  input: SpecNode;
  layers: SpecNode[];
  output: SpecNode;
  /** The spec's other top-level keys, written back unchanged. */
  rest: Record<string, unknown>;
}

export type Parsed = { ok: true; spec: LayerSpec } | { ok: false; error: string };

/** The `layers` param's value (JSON text, as CodefyUI stores it, or an object) as a spec. */
export function parseSpec(value: unknown): Parsed {
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch (e) {
      return { ok: false, error: e instanceof Error ? e.message : String(e) };
    }
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return { ok: false, error: 'not a JSON object' };
  const o = v as Record<string, unknown>;
  if (!Array.isArray(o.nodes)) return { ok: false, error: 'no "nodes" list' };
  const nodes = o.nodes as unknown[];
  if (!nodes.every((n) => n && typeof n === 'object' && typeof (n as SpecNode).id === 'string' && typeof (n as SpecNode).type === 'string'))
    return { ok: false, error: 'every node needs a text "id" and "type"' };
  const edges = Array.isArray(o.edges) ? (o.edges as SpecEdge[]) : [];
  return { ok: true, spec: { ...o, version: typeof o.version === 'number' ? o.version : 2, nodes: nodes as SpecNode[], edges } };
}

/** The spec as a chain, or null when it is not one straight line Input → … → Output (branches, merges, loose nodes). */
export function chainOf(spec: LayerSpec): Chain | null {
  const inputs = spec.nodes.filter((n) => n.type === 'Input');
  const outputs = spec.nodes.filter((n) => n.type === 'Output');
  if (inputs.length !== 1 || outputs.length !== 1) return null;
  if (spec.edges.length !== spec.nodes.length - 1) return null;
  const byId = new Map(spec.nodes.map((n) => [n.id, n]));
  if (byId.size !== spec.nodes.length) return null;
  const next = new Map<string, string>();
  const hasIn = new Set<string>();
  for (const e of spec.edges) {
    if (!byId.has(e.source) || !byId.has(e.target)) return null;
    if (next.has(e.source) || hasIn.has(e.target)) return null; // a branch or a merge
    next.set(e.source, e.target);
    hasIn.add(e.target);
  }
  const layers: SpecNode[] = [];
  const seen = new Set<string>();
  let at = inputs[0]!.id;
  for (;;) {
    const to = next.get(at);
    if (to === undefined) return null;
    if (seen.has(to)) return null;
    seen.add(to);
    if (to === outputs[0]!.id) break;
    layers.push(byId.get(to)!);
    at = to;
  }
  if (layers.length !== spec.nodes.length - 2) return null;
  const { nodes: _n, edges: _e, ...rest } = spec;
  return { input: inputs[0]!, layers, output: outputs[0]!, rest };
}

const portId = (n: SpecNode, fallback: string) => n.ports?.[0]?.id ?? fallback;

/** The spec of a chain: nodes Input, layers in order, Output; one edge between each neighbour, with the port handles. */
export function specOfChain(chain: Chain): LayerSpec {
  const line = [chain.input, ...chain.layers, chain.output];
  const edges: SpecEdge[] = [];
  for (let i = 0; i + 1 < line.length; i++) {
    const e: SpecEdge = { id: `e${i + 1}`, source: line[i]!.id, target: line[i + 1]!.id };
    if (i === 0) e.sourceHandle = portId(chain.input, 'p_x');
    if (i + 2 === line.length) e.targetHandle = portId(chain.output, 'p_y');
    edges.push(e);
  }
  return { ...chain.rest, version: typeof chain.rest.version === 'number' ? chain.rest.version : 2, nodes: line, edges } as LayerSpec;
}

/** A new node id for `type` that no node of the chain has: "conv2d_1", "conv2d_2", … (never a '.'). */
export function newLayerId(chain: Chain, type: string): string {
  const taken = new Set([chain.input.id, chain.output.id, ...chain.layers.map((l) => l.id)]);
  const base = type.toLowerCase().replace(/[^a-z0-9_]/g, '_') || 'layer';
  for (let i = 1; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

/** A new layer of type `def` for `chain`: a fresh id, and its required params at their defaults. */
export function newLayer(chain: Chain, def: LayerTypeDefinition): SpecNode {
  const params: Record<string, unknown> = {};
  for (const p of def.params) if (p.required) params[p.name] = p.default;
  const node: SpecNode = { id: newLayerId(chain, def.type), type: def.type };
  if (Object.keys(params).length > 0) node.params = params;
  return node;
}

/** The spec's layers: its nodes but Input and Output. */
export function innerNodes(spec: LayerSpec): SpecNode[] {
  return spec.nodes.filter((n) => n.type !== 'Input' && n.type !== 'Output');
}

/** Inserts `layer` after the layer at `after` (-1: first). */
export function insertLayer(chain: Chain, after: number, layer: SpecNode): Chain {
  const at = Math.max(0, Math.min(chain.layers.length, after + 1));
  return { ...chain, layers: [...chain.layers.slice(0, at), layer, ...chain.layers.slice(at)] };
}

export function removeLayer(chain: Chain, index: number): Chain {
  return { ...chain, layers: chain.layers.filter((_, i) => i !== index) };
}

/** Moves the layer at `index` by `delta` places (-1 up, +1 down); past either end nothing moves. */
export function moveLayer(chain: Chain, index: number, delta: number): Chain {
  const to = index + delta;
  if (index < 0 || index >= chain.layers.length || to < 0 || to >= chain.layers.length) return chain;
  const layers = [...chain.layers];
  const [moved] = layers.splice(index, 1);
  layers.splice(to, 0, moved!);
  return { ...chain, layers };
}

/** Sets one param of the layer at `index`; undefined removes it (the layer's default applies). */
export function setLayerParam(chain: Chain, index: number, name: string, value: unknown): Chain {
  return {
    ...chain,
    layers: chain.layers.map((l, i) => {
      if (i !== index) return l;
      const params = { ...(l.params ?? {}) };
      if (value === undefined) delete params[name];
      else params[name] = value;
      return { ...l, params };
    }),
  };
}

/** The spec written back in the form the param had: JSON text when it was text, else an object. */
export function specValue(spec: LayerSpec, previous: unknown): unknown {
  return typeof previous === 'string' || previous === undefined || previous === null ? JSON.stringify(spec) : spec;
}

/** "1×16×28×28". */
export function formatShape(shape: readonly number[]): string {
  return shape.join('×');
}

/** "1, 28, 28" or "1x28x28" → [1, 28, 28]; null unless 1 to 6 whole numbers ≥ 1. */
export function parseShapeText(text: string): number[] | null {
  const parts = text.split(/[\s,x×]+/).filter(Boolean);
  if (parts.length < 1 || parts.length > 6) return null;
  const sizes = parts.map((p) => (/^\d+$/.test(p) ? Number(p) : NaN));
  return sizes.every((s) => Number.isSafeInteger(s) && s >= 1) ? sizes : null;
}

const int = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 1 ? v : null);

/**
 * A sample input (sizes after the batch dimension) for the model: from a
 * dataset in the graph when it says (MNIST and FashionMNIST images are
 * 1×28×28, a ToyDataset has n_features), else from the first layer (a Linear
 * takes in_features, a Conv2d in_channels×28×28, a sequence layer 16 steps),
 * else 1×28×28.
 */
export function guessInputShape(
  graphNodes: readonly { type: string; params: Record<string, unknown> }[],
  spec: LayerSpec | null,
): number[] {
  for (const n of graphNodes) {
    if (n.type === 'Dataset') return [1, 28, 28];
    if (n.type === 'ToyDataset') return [int(n.params.n_features) ?? 2];
  }
  const chain = spec ? chainOf(spec) : null;
  const first = chain?.layers[0] ?? spec?.nodes.find((n) => n.type !== 'Input' && n.type !== 'Output');
  const p = first?.params ?? {};
  switch (first?.type) {
    case 'Linear':
      return [int(p.in_features) ?? 1];
    case 'Conv2d':
    case 'BatchNorm2d':
      return [int(p.in_channels ?? p.num_features) ?? 1, 28, 28];
    case 'Conv1d':
      return [int(p.in_channels) ?? 1, 64];
    case 'Embedding':
      return [16];
    case 'LSTM':
    case 'GRU':
      return [16, int(p.input_size) ?? 1];
    case 'TransformerEncoder':
    case 'TransformerDecoder':
      return [16, int(p.d_model) ?? 1];
    case 'MultiHeadAttention':
      return [16, int(p.embed_dim) ?? 1];
    default:
      return [1, 28, 28];
  }
}

/** What a param's text becomes: JSON when it reads as JSON (3, [3, 5], null, true), else the text itself ("same", "64,7,7"). */
export function layerParamFromText(def: LayerParamDefinition, text: string): { ok: true; value: unknown } | { ok: false } {
  const s = text.trim();
  if (s === '') return def.required ? { ok: false } : { ok: true, value: undefined };
  if (def.param_type === 'string') return { ok: true, value: text };
  try {
    return { ok: true, value: JSON.parse(s) as unknown };
  } catch {
    return { ok: true, value: s };
  }
}
