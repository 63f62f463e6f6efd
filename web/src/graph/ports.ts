// What a node looks like from the outside: its ports and params. From its
// definition when the server knows the type; otherwise (a CodefyUI preset,
// a type of another version) from the edges that touch it and the params it
// carries, so such a graph still opens, draws and saves unchanged.
import type { NodeDefinition, ParamDefinition, PortDefinition } from '../api/types';
import { ANY } from './typeRules';

export const TRIGGER_HANDLE = '__trigger';
export const START_TYPE = 'Start';

export interface NodeShape {
  /** False when the server has no definition for this type. */
  known: boolean;
  inputs: PortDefinition[];
  outputs: PortDefinition[];
  params: ParamDefinition[];
  /** Whether a Start trigger may land on it (every node but Start). */
  acceptsTrigger: boolean;
}

/** The ends of an edge, as much as a shape needs of it. */
export interface EdgeEnds {
  source: string;
  target: string;
  sourceHandle?: string | null;
  targetHandle?: string | null;
  kind: 'data' | 'trigger';
}

function port(name: string): PortDefinition {
  return { name, data_type: ANY, description: '', optional: true };
}

function paramTypeOf(value: unknown): string {
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  return 'string';
}

/**
 * A node's outputs for its params: the definition's, or for a node whose
 * output count a param sets (Split's `chunks`) as many as the param asks,
 * within the param's limits. The same array when nothing grows, so callers
 * can compare by identity.
 */
export function liveOutputs(def: NodeDefinition, params: Record<string, unknown>): PortDefinition[] {
  const family = def.output_family;
  if (!family) return def.outputs;
  const countDef = def.params.find((p) => p.name === family.count_param);
  const raw = params[family.count_param] ?? countDef?.default;
  let count = typeof raw === 'number' ? raw : Number.parseInt(String(raw ?? ''), 10);
  if (!Number.isFinite(count)) return def.outputs;
  count = Math.floor(count);
  if (countDef?.min_value != null) count = Math.max(count, countDef.min_value);
  if (countDef?.max_value != null) count = Math.min(count, countDef.max_value);
  if (count === def.outputs.length) return def.outputs;
  return Array.from({ length: count }, (_, i) => {
    const name = `${family.prefix}${i}`;
    return (
      def.outputs.find((p) => p.name === name) ?? {
        name,
        data_type: family.data_type,
        description: `Output ${i} of ${count}`,
        optional: false,
      }
    );
  });
}

/** The shape of node `id` of `type`, from `def` or else from its edges and params. */
export function shapeOf(
  id: string,
  type: string,
  def: NodeDefinition | undefined,
  params: Record<string, unknown>,
  edges: readonly EdgeEnds[],
): NodeShape {
  const acceptsTrigger = type !== START_TYPE;
  if (def) return { known: true, inputs: def.inputs, outputs: liveOutputs(def, params), params: def.params, acceptsTrigger };
  const inputs: PortDefinition[] = [];
  const outputs: PortDefinition[] = [];
  const seen = new Set<string>();
  for (const e of edges) {
    if (e.kind !== 'data') continue;
    if (e.target === id && e.targetHandle && !seen.has(`in:${e.targetHandle}`)) {
      seen.add(`in:${e.targetHandle}`);
      inputs.push(port(e.targetHandle));
    }
    if (e.source === id && e.sourceHandle && !seen.has(`out:${e.sourceHandle}`)) {
      seen.add(`out:${e.sourceHandle}`);
      outputs.push(port(e.sourceHandle));
    }
  }
  const guessed: ParamDefinition[] = Object.entries(params).map(([name, value]) => ({
    name,
    param_type: paramTypeOf(value),
    default: null,
    description: '',
    options: [],
    min_value: null,
    max_value: null,
  }));
  return { known: false, inputs, outputs, params: guessed, acceptsTrigger };
}

/** The output port `name` of a shape (Start's `trigger` included). */
export function outputPort(shape: NodeShape, name: string | null | undefined): PortDefinition | undefined {
  return shape.outputs.find((p) => p.name === name);
}

/** The input port `name` of a shape. */
export function inputPort(shape: NodeShape, name: string | null | undefined): PortDefinition | undefined {
  return shape.inputs.find((p) => p.name === name);
}
