import { describe, expect, it } from 'vitest';
import type { ParamDefinition } from '../src/api/types';
import {
  checkParamValue as checkValue,
  coerceParam as coerce,
  defaultParams,
  displayValue,
  effectiveValue,
  isDeviceParam,
  widgetOf,
} from '../src/graph/params';
import { inWords } from '../src/i18n';
import { def } from './helpers';

// graph/params.ts says why a value is refused as data (a message key and its values); these
// put it into words (English) as the field shows it.
const coerceParam = (d: ParamDefinition, input: string | boolean) => {
  const r = coerce(d, input);
  return r.ok ? r : { ok: false as const, error: inWords(r.error) };
};
const checkParamValue = (d: ParamDefinition, value: unknown) => {
  const problem = checkValue(d, value);
  return problem ? inWords(problem) : null;
};

const param = (node: string, name: string): ParamDefinition => {
  const p = def(node).params.find((x) => x.name === name);
  if (!p) throw new Error(`${node}.${name}`);
  return p;
};

describe('coerceParam', () => {
  const epochs = param('TrainingLoop', 'epochs'); // int, min 1
  const lr = param('Optimizer', 'lr'); // float, min 0
  const pct = param('LRScheduler', 'pct_start'); // float, 0..1
  const shuffle = param('DataLoader', 'shuffle'); // bool
  const lossType = param('Loss', 'type'); // select
  const title = param('Visualize', 'title'); // string
  const modelPath = param('ModelLoader', 'path'); // model_file

  it('int: whole numbers, within limits', () => {
    expect(coerceParam(epochs, '12')).toEqual({ ok: true, value: 12 });
    expect(coerceParam(epochs, ' 3 ')).toEqual({ ok: true, value: 3 });
    expect(coerceParam(epochs, '1e2')).toEqual({ ok: true, value: 100 });
    expect(coerceParam(epochs, '2.5')).toEqual({ ok: false, error: 'Expected a whole number.' });
    expect(coerceParam(epochs, 'ten')).toEqual({ ok: false, error: 'Expected a whole number.' });
    expect(coerceParam(epochs, '')).toEqual({ ok: false, error: 'Expected a whole number.' });
    expect(coerceParam(epochs, '0')).toEqual({ ok: false, error: '0 is below the minimum 1.' });
    expect(coerce(epochs, '0')).toEqual({ ok: false, error: { key: 'param.belowMin', vars: { value: '0', min: '1' } } });
  });

  it('float: decimals and exponents, within limits', () => {
    expect(coerceParam(lr, '0.001')).toEqual({ ok: true, value: 0.001 });
    expect(coerceParam(lr, '1e-4')).toEqual({ ok: true, value: 0.0001 });
    expect(coerceParam(lr, '.5')).toEqual({ ok: true, value: 0.5 });
    expect(coerceParam(lr, '-0.1')).toEqual({ ok: false, error: '-0.1 is below the minimum 0.' });
    expect(coerceParam(lr, 'NaN')).toEqual({ ok: false, error: 'Expected a number.' });
    expect(coerceParam(lr, 'Infinity')).toEqual({ ok: false, error: 'Expected a number.' });
    expect(coerceParam(pct, '1.5')).toEqual({ ok: false, error: '1.5 is above the maximum 1.' });
  });

  it('bool: a checkbox’s value, or the usual words', () => {
    expect(coerceParam(shuffle, false)).toEqual({ ok: true, value: false });
    expect(coerceParam(shuffle, 'true')).toEqual({ ok: true, value: true });
    expect(coerceParam(shuffle, 'off')).toEqual({ ok: true, value: false });
    expect(coerceParam(shuffle, 'maybe').ok).toBe(false);
  });

  it('select: one of the options', () => {
    expect(coerceParam(lossType, 'MSELoss')).toEqual({ ok: true, value: 'MSELoss' });
    const r = coerceParam(lossType, 'FooLoss');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^“FooLoss” is not one of the options \(CrossEntropyLoss, MSELoss/);
  });

  it('text and model files: any text', () => {
    expect(coerceParam(title, '  loss  ')).toEqual({ ok: true, value: '  loss  ' });
    expect(coerceParam(modelPath, 'weights.safetensors')).toEqual({ ok: true, value: 'weights.safetensors' });
  });

  // TensorInput's `values` (CodefyUI's TENSOR_GRID): a nested list typed as JSON in the side panel.
  const grid: ParamDefinition = {
    name: 'values',
    param_type: 'tensor_grid',
    default: null,
    description: '',
    options: [],
    min_value: null,
    max_value: null,
  };

  it('tensor_grid: a nested list of numbers, or nothing', () => {
    expect(coerceParam(grid, '[[1, 2], [3, 4.5]]')).toEqual({ ok: true, value: [[1, 2], [3, 4.5]] });
    expect(coerceParam(grid, ' ')).toEqual({ ok: true, value: null });
    expect(coerceParam(grid, '[[1, 2], [3')).toEqual({ ok: false, error: 'Expected a nested list of numbers, e.g. [[1, 2], [3, 4]].' });
    expect(coerceParam(grid, '[["a"]]')).toEqual({ ok: false, error: 'Expected a nested list of numbers, e.g. [[1, 2], [3, 4]].' });
    expect(widgetOf(grid, [[1, 2]])).toBe('longtext');
  });
});

describe('checkParamValue (the server’s check_param_value)', () => {
  it('refuses values of the wrong JSON type', () => {
    expect(checkParamValue(param('TrainingLoop', 'epochs'), '3')).toBe('Expected a whole number.');
    expect(checkParamValue(param('Optimizer', 'lr'), true)).toBe('Expected a number.');
    expect(checkParamValue(param('DataLoader', 'shuffle'), 1)).toBe('Expected true or false.');
    expect(checkParamValue(param('Visualize', 'title'), 5)).toBe('Expected text.');
  });

  it('takes any string for a device: the server parses it and falls back with a warning', () => {
    const device = param('TrainingLoop', 'device');
    expect(isDeviceParam(device)).toBe(true);
    expect(checkParamValue(device, 'cuda:3')).toBeNull();
    expect(isDeviceParam(param('Loss', 'type'))).toBe(false);
  });
});

describe('widgets, defaults and display', () => {
  it('each param type gets its widget; long text and JSON go to a text area', () => {
    expect(widgetOf(param('TrainingLoop', 'epochs'), 5)).toBe('int');
    expect(widgetOf(param('Optimizer', 'lr'), 0.1)).toBe('float');
    expect(widgetOf(param('DataLoader', 'shuffle'), true)).toBe('bool');
    expect(widgetOf(param('Loss', 'type'), 'MSELoss')).toBe('select');
    expect(widgetOf(param('TrainingLoop', 'device'), 'auto')).toBe('device');
    expect(widgetOf(param('ModelLoader', 'path'), '')).toBe('model_file');
    expect(widgetOf(param('Visualize', 'title'), 'short')).toBe('text');
    expect(widgetOf(param('SequentialModel', 'layers'), '{"version":2}')).toBe('longtext');
    expect(widgetOf(param('Visualize', 'title'), 'x'.repeat(80))).toBe('longtext');
  });

  it('a node shows its own value, else the default', () => {
    const epochs = param('TrainingLoop', 'epochs');
    expect(effectiveValue(epochs, {})).toBe(5);
    expect(effectiveValue(epochs, { epochs: null })).toBe(5);
    expect(effectiveValue(epochs, { epochs: 2 })).toBe(2);
  });

  it('a new node starts with every default', () => {
    expect(defaultParams(def('DataLoader').params)).toEqual({ batch_size: 32, shuffle: true, num_workers: 0, pin_memory: false, drop_last: false, persistent_workers: false, prefetch_factor: 2, seed: -1 });
  });

  it('values show as text', () => {
    expect(displayValue(undefined)).toBe('');
    expect(displayValue(0.001)).toBe('0.001');
    expect(displayValue({ a: 1 })).toBe('{"a":1}');
  });
});
