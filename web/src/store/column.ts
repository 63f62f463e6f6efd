// Append-only columns that successive run states share. Copying a series on
// every progress message is O(n) per message, O(n²) over a run (100k
// updates: seconds of copying). Here appending to the newest state writes
// into the shared array (amortised O(1)) and each state keeps its own
// length, so an older state still reads exactly the values it had; appending
// to an older state (a branch) copies first. States stay values: nothing a
// state can read ever changes.

export interface Column<T> {
  /** Shared with later states; only indexes below `length` belong to this one. */
  readonly store: { readonly values: T[] };
  readonly length: number;
}

export function emptyColumn<T>(): Column<T> {
  return { store: { values: [] }, length: 0 };
}

/** The column with `value` appended; `c` is unchanged. */
export function append<T>(c: Column<T>, value: T): Column<T> {
  if (c.store.values.length === c.length) {
    c.store.values.push(value); // the newest state: extend the shared array
    return { store: c.store, length: c.length + 1 };
  }
  const values = c.store.values.slice(0, c.length); // a branch off an older state
  values.push(value);
  return { store: { values }, length: c.length + 1 };
}

/**
 * The column's values as an array of exactly its length: the shared array
 * itself for the newest state (no copy; read it, never write it), a copy for
 * an older one.
 */
export function values<T>(c: Column<T>): readonly T[] {
  return c.store.values.length === c.length ? c.store.values : c.store.values.slice(0, c.length);
}

export function last<T>(c: Column<T>): T | undefined {
  return c.length > 0 ? c.store.values[c.length - 1] : undefined;
}

/** A plain array copy (for tests and small uses). */
export function toArray<T>(c: Column<T>): T[] {
  return c.store.values.slice(0, c.length);
}
