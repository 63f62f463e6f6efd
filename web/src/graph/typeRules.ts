// Which output type may feed which input type. The server's GET /api/types
// is the authority; until a server has it, a copy of src/graph/graph.cpp's
// is_compatible stands in (tests/typeRules.test.ts holds the two together).
import type { DataType, TypesResponse } from '../api/types';

export const TRIGGER: DataType = 'TRIGGER';
export const ANY: DataType = 'ANY';

/** CodefyUI's data types, in the server's order. */
export const DATA_TYPES: readonly DataType[] = [
  'TENSOR',
  'MODEL',
  'DATASET',
  'DATALOADER',
  'OPTIMIZER',
  'LOSS_FN',
  'SCALAR',
  'STRING',
  'IMAGE',
  'LIST',
  'TRANSFORM',
  'ANY',
  'TRIGGER',
];

/** The copy of the server's is_compatible(source, target). */
export function isCompatibleFallback(source: DataType, target: DataType): boolean {
  if (source === TRIGGER || target === TRIGGER) return source === TRIGGER && target === TRIGGER;
  if (source === target || target === ANY || source === ANY) return true;
  return source === 'IMAGE' && target === 'TENSOR';
}

export interface TypeRules {
  dataTypes: readonly DataType[];
  isCompatible(source: DataType, target: DataType): boolean;
  /** Where the rules came from: the server's /api/types, or the built-in copy. */
  origin: 'server' | 'builtin';
}

export const builtinRules: TypeRules = {
  dataTypes: DATA_TYPES,
  isCompatible: isCompatibleFallback,
  origin: 'builtin',
};

/** Rules from GET /api/types' answer: `compatible[source]` lists the targets it may feed. */
export function rulesFromServer(types: TypesResponse): TypeRules {
  const table = new Map<DataType, Set<DataType>>();
  for (const [source, targets] of Object.entries(types.compatible ?? {})) table.set(source, new Set(targets));
  return {
    dataTypes: types.data_types?.length ? types.data_types : DATA_TYPES,
    isCompatible: (source, target) => table.get(source)?.has(target) ?? false,
    origin: 'server',
  };
}

/** The CSS colour variable of a data type (handles and edges). */
export function typeColorVar(type: DataType): string {
  return `var(--type-${type.toLowerCase().replace(/[^a-z0-9]+/g, '-')}, var(--type-other))`;
}
