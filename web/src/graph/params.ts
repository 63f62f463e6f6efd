// Param values by type: what a typed-in text becomes (coerceParam), and
// whether a value passes the same checks as the server's check_param_value
// (src/graph/validate.cpp), so the editor says "below the minimum" before a
// run is refused for it.
import type { ParamDefinition } from '../api/types';
import { problem, type Problem } from './problem';

/** Why a value is refused (put into words by the field that shows it). */
export type ParamProblem = Problem<
  | 'param.expectInt'
  | 'param.expectNumber'
  | 'param.expectFinite'
  | 'param.expectBool'
  | 'param.expectOption'
  | 'param.notAnOption'
  | 'param.expectGrid'
  | 'param.expectText'
  | 'param.belowMin'
  | 'param.aboveMax'
>;

export type Coerced = { ok: true; value: unknown } | { ok: false; error: ParamProblem };

/** The widget a param gets. */
export type ParamWidget = 'int' | 'float' | 'bool' | 'select' | 'device' | 'model_file' | 'text' | 'longtext';

/** Strings longer than this, or JSON, are edited in the side panel's text area. */
export const LONG_TEXT = 64;

/**
 * Device params are `select`s whose options are suggestions (the server
 * parses any device string at run time); /api/nodes marks them only by name.
 */
export function isDeviceParam(def: ParamDefinition): boolean {
  return def.name === 'device' && (def.param_type === 'select' || def.param_type === 'string');
}

export function widgetOf(def: ParamDefinition, value: unknown): ParamWidget {
  if (isDeviceParam(def)) return 'device';
  switch (def.param_type) {
    case 'int':
      return 'int';
    case 'float':
      return 'float';
    case 'bool':
      return 'bool';
    case 'select':
      return 'select';
    case 'model_file':
      return 'model_file';
    case 'tensor_grid':
      return 'longtext';
    default: {
      const s = typeof value === 'string' ? value : value === undefined || value === null ? '' : JSON.stringify(value);
      return s.length > LONG_TEXT || /^\s*[[{]/.test(s) ? 'longtext' : 'text';
    }
  }
}

/** The value a node has for a param: its own, else the definition's default. */
export function effectiveValue(def: ParamDefinition, params: Record<string, unknown>): unknown {
  const v = params[def.name];
  return v === undefined || v === null ? def.default : v;
}

/** A tensor_grid value: a number or bool, or a (nested) list of them. */
function isGrid(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value === 'boolean') return true;
  return Array.isArray(value) && value.every(isGrid);
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

function fmt(n: number): string {
  return String(n);
}

/** The server's check of one value; null when it passes. */
export function checkParamValue(def: ParamDefinition, value: unknown): ParamProblem | null {
  let n: number | null = null;
  switch (def.param_type) {
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) return problem('param.expectInt');
      n = value;
      break;
    case 'float':
      if (typeof value !== 'number') return problem('param.expectNumber');
      if (!Number.isFinite(value)) return problem('param.expectFinite');
      n = value;
      break;
    case 'bool':
      if (typeof value !== 'boolean') return problem('param.expectBool');
      break;
    case 'select':
      if (typeof value !== 'string') return problem('param.expectOption');
      if (!isDeviceParam(def) && def.options.length > 0 && !def.options.includes(value))
        return problem('param.notAnOption', { value, options: def.options.join(', ') });
      break;
    case 'tensor_grid':
      // A nested list of numbers, or none (the server also takes the list as text).
      if (value !== null && typeof value !== 'string' && !isGrid(value)) return problem('param.expectGrid');
      break;
    default:
      if (typeof value !== 'string') return problem('param.expectText');
  }
  if (n !== null) {
    if (def.min_value !== null && def.min_value !== undefined && n < def.min_value)
      return problem('param.belowMin', { value: fmt(n), min: fmt(def.min_value) });
    if (def.max_value !== null && def.max_value !== undefined && n > def.max_value)
      return problem('param.aboveMax', { value: fmt(n), max: fmt(def.max_value) });
  }
  return null;
}

/**
 * What the text typed into a param's field becomes. A number that parses
 * but breaks a limit is still refused: the field keeps the text and says
 * why, and the graph keeps its last good value.
 */
export function coerceParam(def: ParamDefinition, input: string | boolean): Coerced {
  let value: unknown;
  switch (def.param_type) {
    case 'bool':
      if (typeof input === 'boolean') value = input;
      else if (/^(true|1|yes|on)$/i.test(input.trim())) value = true;
      else if (/^(false|0|no|off)$/i.test(input.trim())) value = false;
      else return { ok: false, error: problem('param.expectBool') };
      break;
    case 'int':
    case 'float': {
      const s = String(input).trim();
      if (!NUMBER.test(s)) return { ok: false, error: problem(def.param_type === 'int' ? 'param.expectInt' : 'param.expectNumber') };
      const v = Number(s);
      if (def.param_type === 'int' && !Number.isSafeInteger(v)) return { ok: false, error: problem('param.expectInt') };
      value = v;
      break;
    }
    case 'tensor_grid': {
      const s = String(input).trim();
      if (s === '') {
        value = null;
        break;
      }
      try {
        value = JSON.parse(s);
      } catch {
        return { ok: false, error: problem('param.expectGrid') };
      }
      break;
    }
    default:
      value = typeof input === 'boolean' ? String(input) : input;
  }
  const refused = checkParamValue(def, value);
  return refused ? { ok: false, error: refused } : { ok: true, value };
}

/** How a value shows in a text field. */
export function displayValue(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** The params a fresh node of this definition starts with (its defaults). */
export function defaultParams(params: readonly ParamDefinition[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of params) if (p.default !== undefined && p.default !== null) out[p.name] = p.default;
  return out;
}
