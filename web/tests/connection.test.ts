import { describe, expect, it } from 'vitest';
import { checkConnection, type NodeFacts } from '../src/graph/connection';
import { shapeOf, TRIGGER_HANDLE } from '../src/graph/ports';
import { builtinRules } from '../src/graph/typeRules';
import { inWords } from '../src/i18n';
import { defsByName } from './helpers';

const graph: Record<string, string> = {
  start: 'Start',
  model: 'SequentialModel',
  loss: 'Loss',
  opt: 'Optimizer',
  train: 'TrainingLoop',
  print: 'Print',
  viz: 'Visualize',
  preset: 'preset:Training Pipeline',
};
const facts = (id: string): NodeFacts | undefined => {
  const type = graph[id];
  if (!type) return undefined;
  const edges = [{ source: 'model', target: 'preset', sourceHandle: 'model', targetHandle: 'model', kind: 'data' as const }];
  return { type, shape: shapeOf(id, type, defsByName[type], {}, edges) };
};
/** The check, with a refusal put into words (English) as the editor shows it. */
const check = (source: string, sourceHandle: string | null, target: string, targetHandle: string | null) => {
  const v = checkConnection({ source, sourceHandle, target, targetHandle }, facts, builtinRules);
  return v.ok ? v : { ok: false as const, reason: inWords(v.problem) };
};

describe('checkConnection', () => {
  it('accepts matching types', () => {
    expect(check('model', 'model', 'opt', 'model')).toEqual({ ok: true, kind: 'data' });
    expect(check('loss', 'loss_fn', 'train', 'loss_fn')).toEqual({ ok: true, kind: 'data' });
  });

  it('accepts anything into ANY and ANY into anything', () => {
    expect(check('train', 'losses', 'viz', 'data')).toEqual({ ok: true, kind: 'data' });
    expect(check('print', 'value', 'train', 'model')).toEqual({ ok: true, kind: 'data' });
  });

  it('refuses a type mismatch, naming both ends and both types', () => {
    const v = check('loss', 'loss_fn', 'opt', 'model');
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.reason).toBe('Loss.loss_fn gives LOSS_FN, but Optimizer.model takes MODEL.');
    // graph/ says it as data (a message key and its values); the words are the caller's.
    expect(checkConnection({ source: 'loss', sourceHandle: 'loss_fn', target: 'opt', targetHandle: 'model' }, facts, builtinRules)).toEqual({
      ok: false,
      problem: { key: 'conn.typeMismatch', vars: { source: 'Loss.loss_fn', sourceType: 'LOSS_FN', target: 'Optimizer.model', targetType: 'MODEL' } },
    });
  });

  it('takes Start’s trigger onto a node’s trigger handle, as a trigger edge', () => {
    expect(check('start', 'trigger', 'model', TRIGGER_HANDLE)).toEqual({ ok: true, kind: 'trigger' });
  });

  it('refuses a data output on the trigger handle', () => {
    const v = check('model', 'model', 'train', TRIGGER_HANDLE);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.reason).toMatch(/Only a Start node’s trigger/);
  });

  it('refuses a trigger onto a data input, saying where it goes instead', () => {
    const v = check('start', 'trigger', 'print', 'value');
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.reason).toMatch(/trigger carries no data.*Print\.value/);
  });

  it('refuses a loop onto the same node', () => {
    const v = check('print', 'value', 'print', 'value');
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.reason).toMatch(/cannot feed itself/);
  });

  it('refuses ports a node does not have', () => {
    const a = check('model', 'weights', 'opt', 'model');
    const b = check('model', 'model', 'opt', 'net');
    expect(a.ok || b.ok).toBe(false);
    if (!a.ok) expect(a.reason).toBe('model has no output “weights”.');
    if (!b.ok) expect(b.reason).toBe('opt has no input “net”.');
  });

  it('lets a node of an unknown type (a preset) take wires on the ports its edges name', () => {
    expect(check('model', 'model', 'preset', 'model')).toEqual({ ok: true, kind: 'data' });
    expect(check('model', 'model', 'preset', 'other').ok).toBe(false);
  });
});

describe('shapeOf', () => {
  it('a known type: its definition’s ports and params; every node but Start takes a trigger', () => {
    const s = shapeOf('t', 'TrainingLoop', defsByName.TrainingLoop, {}, []);
    expect(s.known).toBe(true);
    expect(s.inputs.map((p) => p.name)).toContain('dataloader');
    expect(s.acceptsTrigger).toBe(true);
    expect(shapeOf('s', 'Start', defsByName.Start, {}, []).acceptsTrigger).toBe(false);
  });

  it('an unknown type: ports from its data edges, params guessed from their values', () => {
    const s = shapeOf('p', 'preset:X', undefined, { epochs: 3, lr: 0.5, on: true, name: 'a' }, [
      { source: 'a', target: 'p', targetHandle: 'model', kind: 'data' },
      { source: 'b', target: 'p', targetHandle: 'model', kind: 'data' },
      { source: 'p', target: 'c', sourceHandle: 'out', kind: 'data' },
      { source: 's', target: 'p', sourceHandle: 'trigger', kind: 'trigger' },
    ]);
    expect(s.known).toBe(false);
    expect(s.inputs.map((p) => [p.name, p.data_type])).toEqual([['model', 'ANY']]);
    expect(s.outputs.map((p) => p.name)).toEqual(['out']);
    expect(s.params.map((p) => [p.name, p.param_type])).toEqual([
      ['epochs', 'int'],
      ['lr', 'float'],
      ['on', 'bool'],
      ['name', 'string'],
    ]);
  });
});

describe('ports a param sets', () => {
  const split = defsByName.Split!;
  it('Split shows chunk_0 .. chunk_{chunks-1}, within the param\'s limits', () => {
    const names = (params: Record<string, unknown>) => shapeOf('s', 'Split', split, params, []).outputs.map((p) => p.name);
    expect(names({})).toEqual(['chunk_0', 'chunk_1']);
    expect(names({ chunks: 4 })).toEqual(['chunk_0', 'chunk_1', 'chunk_2', 'chunk_3']);
    expect(names({ chunks: '3' })).toEqual(['chunk_0', 'chunk_1', 'chunk_2']);
    expect(names({ chunks: 0 })).toEqual(['chunk_0']);
    expect(names({ chunks: 500 })).toHaveLength(32);
    expect(shapeOf('s', 'Split', split, { chunks: 3 }, []).outputs[2]!.data_type).toBe('TENSOR');
  });
  it('a node without a family keeps its definition\'s outputs as they are', () => {
    const add = defsByName.Add!;
    expect(shapeOf('a', 'Add', add, { chunks: 4 }, []).outputs).toBe(add.outputs);
  });
});
