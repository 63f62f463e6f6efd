import { describe, expect, it } from 'vitest';
import { builtinRules, DATA_TYPES, isCompatibleFallback, rulesFromServer } from '../src/graph/typeRules';

// src/graph/graph.cpp's is_compatible, written out case by case.
describe('the built-in copy of the server’s is_compatible', () => {
  const data = DATA_TYPES.filter((t) => t !== 'TRIGGER');

  it('knows CodefyUI’s thirteen types', () => {
    expect([...DATA_TYPES].sort()).toEqual(
      ['ANY', 'DATALOADER', 'DATASET', 'IMAGE', 'LIST', 'LOSS_FN', 'MODEL', 'OPTIMIZER', 'SCALAR', 'STRING', 'TENSOR', 'TRANSFORM', 'TRIGGER'].sort(),
    );
  });

  it('a type feeds itself', () => {
    for (const t of DATA_TYPES) expect(isCompatibleFallback(t, t)).toBe(true);
  });

  it('ANY feeds and takes every data type, but not a trigger', () => {
    for (const t of data) {
      expect(isCompatibleFallback('ANY', t)).toBe(true);
      expect(isCompatibleFallback(t, 'ANY')).toBe(true);
    }
    expect(isCompatibleFallback('ANY', 'TRIGGER')).toBe(false);
    expect(isCompatibleFallback('TRIGGER', 'ANY')).toBe(false);
  });

  it('a trigger goes only to a trigger', () => {
    for (const t of data) {
      expect(isCompatibleFallback('TRIGGER', t)).toBe(false);
      expect(isCompatibleFallback(t, 'TRIGGER')).toBe(false);
    }
  });

  it('an IMAGE feeds a TENSOR input, not the other way round', () => {
    expect(isCompatibleFallback('IMAGE', 'TENSOR')).toBe(true);
    expect(isCompatibleFallback('TENSOR', 'IMAGE')).toBe(false);
  });

  it('other different types do not connect', () => {
    const allowed = new Set(['IMAGE>TENSOR']);
    for (const s of data)
      for (const t of data) {
        if (s === t || s === 'ANY' || t === 'ANY') continue;
        expect(isCompatibleFallback(s, t), `${s} -> ${t}`).toBe(allowed.has(`${s}>${t}`));
      }
  });

  it('is what the editor uses until the server has /api/types', () => {
    expect(builtinRules.origin).toBe('builtin');
    expect(builtinRules.isCompatible('LOSS_FN', 'MODEL')).toBe(false);
  });
});

describe('rules from GET /api/types', () => {
  it('follow the server’s table exactly', () => {
    const r = rulesFromServer({ data_types: ['A', 'B', 'C'], compatible: { A: ['A', 'B'], B: ['B'] } });
    expect(r.origin).toBe('server');
    expect(r.dataTypes).toEqual(['A', 'B', 'C']);
    expect(r.isCompatible('A', 'B')).toBe(true);
    expect(r.isCompatible('B', 'A')).toBe(false);
    expect(r.isCompatible('C', 'C')).toBe(false);
  });

  it('agree with the built-in copy when the server sends the same rule', () => {
    const compatible: Record<string, string[]> = {};
    for (const s of DATA_TYPES) compatible[s] = DATA_TYPES.filter((t) => isCompatibleFallback(s, t));
    const r = rulesFromServer({ data_types: [...DATA_TYPES], compatible });
    for (const s of DATA_TYPES) for (const t of DATA_TYPES) expect(r.isCompatible(s, t)).toBe(isCompatibleFallback(s, t));
  });
});
