// Pure mapping of the inspector routes' JSON to what the editor shows: the
// edge tooltip's text, a tensor's statistics and the rows of its value table.
import type { Nested, OutputData, RunOutputRef, TensorOutput } from '../api/outputs';
import { t } from '../i18n';

/** Rows and columns of a value table. */
export const TABLE_ROWS = 16;
export const TABLE_COLS = 8;
/** Tensors with at most this many values are fetched whole (statistics of all of them, slicing here). */
export const WHOLE_LIMIT = 65536;

export const numel = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** [64, 2]; [] for a 0-d tensor. */
export const formatShape = (shape: readonly number[]) => `[${shape.join(', ')}]`;

/** float32 for torch.float32. */
export const shortDtype = (dtype: string) => dtype.replace(/^torch\./, '');

/** A value for a table cell or a statistic: 5 significant digits, exponent when very large or small. */
export function formatNumber(v: unknown): string {
  if (v === null || v === undefined) return '–'; // the server sends NaN and ±inf as null
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-4 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(5)));
}

const HIDDEN = new Set(['type', 'run_id', 'node_id', 'port']);

/**
 * A non-tensor output's summary as [key, text] pairs (class, parameters,
 * value…), in the server's order; a value that is a JSON object (a metrics
 * dict) gives one pair per key.
 */
export function summaryEntries(data: OutputData): [string, string][] {
  const value = (data as { value?: unknown }).value;
  const own = Object.entries(data).filter(([k]) => !HIDDEN.has(k));
  const pairs =
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? [...own.filter(([k]) => k !== 'value'), ...Object.entries(value as Record<string, unknown>)]
      : own;
  return pairs.map(([k, v]): [string, string] => {
    if (typeof v === 'number' || typeof v === 'boolean' || v === null) return [k, formatNumber(v)];
    if (typeof v === 'string') return [k, v];
    const text = JSON.stringify(v);
    return [k, text.length > 120 ? `${text.slice(0, 119)}…` : text];
  });
}

/** The tooltip over a wire: what its source port gave in the recorded run. */
export function edgeTooltip(ref: RunOutputRef | undefined, data?: OutputData): { title: string; detail: string } {
  if (!ref) return { title: '', detail: t('inspector.notRecorded') };
  const title = `${ref.port} · ${ref.type.toUpperCase()}`;
  if (ref.type === 'tensor') {
    const shape = ref.full_shape ?? (data && 'full_shape' in data ? (data as TensorOutput).full_shape : null);
    const dtype = data && 'dtype' in data ? shortDtype(String(data.dtype)) : null;
    return {
      title,
      detail: [shape ? t('inspector.shape', { shape: formatShape(shape) }) : '', dtype ? t('inspector.dtype', { dtype }) : '']
        .filter(Boolean)
        .join(' · '),
    };
  }
  const entries = data ? summaryEntries(data).slice(0, 3) : [];
  return { title, detail: entries.map(([k, v]) => (k === 'value' ? v : `${k} ${v}`)).join(' · ') };
}

/** The cheapest request that tells a port's dtype or summary: an empty slice of a tensor, a non-tensor whole. */
export function tooltipRequest(ref: RunOutputRef): { slice: string; maxElements: number } {
  if (ref.type === 'tensor' && ref.full_shape && ref.full_shape.length > 0) return { slice: '0:0', maxElements: 1 };
  return { slice: '', maxElements: 1 };
}

/** The request for a tensor's table: whole when small, else the leading indices and the first rows and columns. */
export function tensorRequest(
  fullShape: readonly number[],
  leading: readonly number[],
): { slice: string; maxElements: number; whole: boolean } {
  const n = numel(fullShape);
  if (n <= WHOLE_LIMIT) return { slice: '', maxElements: Math.max(n, 1), whole: true };
  const dims = fullShape.length;
  const pieces = fullShape.map((size, d) => {
    if (d < dims - 2) return String(Math.min(Math.max(leading[d] ?? 0, 0), size - 1));
    return d === dims - 2 && dims >= 2 ? `0:${TABLE_ROWS}` : `0:${dims === 1 ? TABLE_ROWS : TABLE_COLS}`;
  });
  return { slice: pieces.join(','), maxElements: TABLE_ROWS * TABLE_COLS, whole: false };
}

export interface TableView {
  /** Column headers: column indices (one '' column for a 0-d or 1-d tensor). */
  columns: string[];
  rows: { index: number; cells: string[] }[];
  /** Rows and columns the tensor has at this level (the table shows at most TABLE_ROWS × TABLE_COLS). */
  totalRows: number;
  totalCols: number;
}

/**
 * The first rows and columns of `values` (of shape `shape`). A 0-d value is
 * one cell; a 1-d tensor is a column; for more dimensions `leading` picks the
 * index of every dimension but the last two. `fullShape` (when `values` is a
 * slice the server cut) gives the totals.
 */
export function tableView(
  values: Nested,
  shape: readonly number[],
  leading: readonly number[] = [],
  fullShape: readonly number[] = shape,
  maxRows = TABLE_ROWS,
  maxCols = TABLE_COLS,
): TableView {
  if (shape.length === 0) return { columns: [''], rows: [{ index: 0, cells: [formatNumber(values)] }], totalRows: 1, totalCols: 1 };
  let v: Nested = values;
  for (let d = 0; d < shape.length - 2; d++) {
    const i = Math.min(Math.max(leading[d] ?? 0, 0), shape[d]! - 1);
    v = Array.isArray(v) ? (v[i] ?? []) : [];
  }
  const list = Array.isArray(v) ? v : [v];
  if (shape.length === 1) {
    const rows = list.slice(0, maxRows).map((x, i) => ({ index: i, cells: [formatNumber(x)] }));
    return { columns: [''], rows, totalRows: fullShape[fullShape.length - 1]!, totalCols: 1 };
  }
  const totalRows = fullShape[fullShape.length - 2]!;
  const totalCols = fullShape[fullShape.length - 1]!;
  const cols = Math.min(shape[shape.length - 1]!, maxCols);
  const rows = list.slice(0, maxRows).map((row, i) => {
    const r = Array.isArray(row) ? row : [row];
    return { index: i, cells: r.slice(0, cols).map(formatNumber) };
  });
  return { columns: Array.from({ length: cols }, (_, c) => String(c)), rows, totalRows, totalCols };
}

/** The statistics the route gave, in a fixed order: min, max, mean, std (those present). */
export function statsOf(data: TensorOutput): { key: 'min' | 'max' | 'mean' | 'std'; value: string }[] {
  return (['min', 'max', 'mean', 'std'] as const)
    .filter((k) => data[k] !== undefined)
    .map((key) => ({ key, value: formatNumber(data[key]) }));
}
