// The rule a wire must pass while it is being dragged: the server's type
// compatibility, triggers only from Start's trigger onto a node's trigger
// handle, no loops onto the same node. A refusal says why (a Problem, which
// the caller puts into words).
import { inputPort, outputPort, TRIGGER_HANDLE, type NodeShape } from './ports';
import { problem, type Problem } from './problem';
import { TRIGGER, type TypeRules } from './typeRules';

export interface ProposedConnection {
  source: string | null;
  target: string | null;
  sourceHandle?: string | null;
  targetHandle?: string | null;
}

export interface NodeFacts {
  type: string;
  shape: NodeShape;
}

export type ConnectionProblem = Problem<
  | 'conn.incomplete'
  | 'conn.self'
  | 'conn.triggerOnly'
  | 'conn.noTrigger'
  | 'conn.noOutput'
  | 'conn.noInput'
  | 'conn.triggerToData'
  | 'conn.typeMismatch'
>;

export type ConnectionVerdict = { ok: true; kind: 'data' | 'trigger' } | { ok: false; problem: ConnectionProblem };

export function checkConnection(
  c: ProposedConnection,
  nodeFacts: (id: string) => NodeFacts | undefined,
  rules: TypeRules,
): ConnectionVerdict {
  if (!c.source || !c.target) return { ok: false, problem: problem('conn.incomplete') };
  if (c.source === c.target) return { ok: false, problem: problem('conn.self') };
  const source = nodeFacts(c.source);
  const target = nodeFacts(c.target);
  if (!source || !target) return { ok: false, problem: problem('conn.incomplete') };

  const out = outputPort(source.shape, c.sourceHandle);
  const fromTrigger = out ? out.data_type === TRIGGER : c.sourceHandle === 'trigger';
  if (c.targetHandle === TRIGGER_HANDLE) {
    if (!fromTrigger) return { ok: false, problem: problem('conn.triggerOnly', { type: target.type }) };
    if (!target.shape.acceptsTrigger) return { ok: false, problem: problem('conn.noTrigger', { type: target.type }) };
    return { ok: true, kind: 'trigger' };
  }
  if (!out) {
    if (source.shape.known || !c.sourceHandle)
      return { ok: false, problem: problem('conn.noOutput', { node: c.source, port: c.sourceHandle ?? '?' }) };
  }
  const inp = inputPort(target.shape, c.targetHandle);
  if (!inp) return { ok: false, problem: problem('conn.noInput', { node: c.target, port: c.targetHandle ?? '?' }) };
  const sourceType = out?.data_type ?? 'ANY';
  if (fromTrigger && inp.data_type !== TRIGGER)
    return { ok: false, problem: problem('conn.triggerToData', { port: `${target.type}.${inp.name}` }) };
  if (!rules.isCompatible(sourceType, inp.data_type))
    return {
      ok: false,
      problem: problem('conn.typeMismatch', {
        source: `${source.type}.${out?.name ?? c.sourceHandle}`,
        sourceType,
        target: `${target.type}.${inp.name}`,
        targetType: inp.data_type,
      }),
    };
  return { ok: true, kind: sourceType === TRIGGER ? 'trigger' : 'data' };
}
