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

/** The shape of node `id` of `type`, from `def` or else from its edges and params. */
export function shapeOf(
  id: string,
  type: string,
  def: NodeDefinition | undefined,
  params: Record<string, unknown>,
  edges: readonly EdgeEnds[],
): NodeShape {
  const acceptsTrigger = type !== START_TYPE;
  if (def) return { known: true, inputs: def.inputs, outputs: def.outputs, params: def.params, acceptsTrigger };
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
