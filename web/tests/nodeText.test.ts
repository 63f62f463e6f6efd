import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { LayerTypeDefinition } from '../src/api/layers';
import type { NodeDefinition } from '../src/api/types';
import { layerTexts, localizeDef, localizeDefs, localizeLayerType, nodeTexts } from '../src/i18n/nodeText';
import { def, defsByName, nodeDefs } from './helpers';

/** GET /api/layers as this repository's server answers it (`codefy layers --json`). */
const layerDefs: LayerTypeDefinition[] = JSON.parse(
  readFileSync(new URL('./fixtures/layers.json', import.meta.url), 'utf8'),
);
const zhLayers = layerTexts('zh-TW')!;

const zh = nodeTexts('zh-TW')!;
const HAN = /[\u4e00-\u9fff]/;

describe('node text in Traditional Chinese', () => {
  it('translates the server\'s text, which is all English', () => {
    const chinese = nodeDefs.filter((d) => HAN.test(JSON.stringify(d))).map((d) => d.node_name);
    expect(chinese).toEqual([]);
  });

  it('covers every node type, param and port the server describes', () => {
    const missing: string[] = [];
    for (const d of nodeDefs) {
      const text = zh[d.node_name];
      if (!text?.description) missing.push(d.node_name);
      for (const p of d.params) if (p.description && !text?.params?.[p.name]) missing.push(`${d.node_name}.${p.name}`);
      for (const p of d.inputs) if (p.description && !text?.inputs?.[p.name]) missing.push(`${d.node_name} in ${p.name}`);
      for (const p of d.outputs) if (p.description && !text?.outputs?.[p.name]) missing.push(`${d.node_name} out ${p.name}`);
    }
    expect(missing).toEqual([]);
  });

  it('names nothing the server does not offer', () => {
    const stray: string[] = [];
    for (const [type, text] of Object.entries(zh)) {
      const d = defsByName[type];
      if (!d) {
        stray.push(type);
        continue;
      }
      for (const [kind, list] of [
        ['params', d.params],
        ['inputs', d.inputs],
        ['outputs', d.outputs],
      ] as const)
        for (const name of Object.keys(text[kind] ?? {}))
          if (!list.some((p) => p.name === name)) stray.push(`${type} ${kind} ${name}`);
    }
    expect(stray).toEqual([]);
  });

  it('is Chinese text, with the numbers of the English', () => {
    const numbers = (s: string) => (s.match(/\d+(?:\.\d+)?/g) ?? []).sort();
    const wrong: string[] = [];
    for (const d of nodeDefs) {
      const text = zh[d.node_name]!;
      const pairs: [string, string, string | undefined][] = [[d.node_name, d.description, text.description]];
      for (const p of d.params) if (p.description) pairs.push([`${d.node_name}.${p.name}`, p.description, text.params?.[p.name]]);
      for (const [where, en, zhText] of pairs) {
        if (!zhText || !HAN.test(zhText)) wrong.push(`${where}: not Chinese`);
        else if (numbers(en).join() !== numbers(zhText).join()) wrong.push(`${where}: ${numbers(en)} vs ${numbers(zhText)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('localizeDef', () => {
  const conv = def('Conv2d');

  it('gives the locale text for the description, params and ports, and keeps every name and everything else', () => {
    const out = localizeDef(conv, 'zh-TW');
    expect(out.description).toBe(zh.Conv2d!.description);
    expect(out.node_name).toBe('Conv2d');
    expect(out.params.map((p) => p.name)).toEqual(conv.params.map((p) => p.name));
    expect(out.params.map((p) => [p.param_type, p.default, p.options])).toEqual(
      conv.params.map((p) => [p.param_type, p.default, p.options]),
    );
    for (const p of out.params) if (zh.Conv2d!.params?.[p.name]) expect(p.description).toBe(zh.Conv2d!.params[p.name]);
    for (const p of out.inputs) expect(HAN.test(p.description ?? '')).toBe(true);
    expect(out.inputs.map((p) => [p.name, p.data_type, p.optional])).toEqual(
      conv.inputs.map((p) => [p.name, p.data_type, p.optional]),
    );
    expect(conv.description).not.toBe(out.description); // the server's definition is left as it was
  });

  it('is the same object for the same definition and locale, and the definition itself in English', () => {
    expect(localizeDef(conv, 'zh-TW')).toBe(localizeDef(conv, 'zh-TW'));
    expect(localizeDef(conv, 'en')).toBe(conv);
    const all = localizeDefs(defsByName, 'zh-TW');
    expect(localizeDefs(defsByName, 'zh-TW')).toBe(all);
    expect(localizeDefs(defsByName, 'en')).toBe(defsByName);
    expect(all.Conv2d).toBe(localizeDef(conv, 'zh-TW'));
  });

  it('leaves a node type without text as the server describes it', () => {
    const plugin: NodeDefinition = { ...conv, node_name: 'SomePlugin:Node', description: 'A node from a plugin' };
    expect(localizeDef(plugin, 'zh-TW')).toBe(plugin);
  });
});

describe('layer param text in Traditional Chinese', () => {
  it('covers every param of every layer type the server describes, in Chinese with the numbers of the English', () => {
    const wrong: string[] = [];
    const numbers = (s: string) => (s.match(/\d+(?:\.\d+)?/g) ?? []).sort().join();
    for (const d of layerDefs)
      for (const p of d.params) {
        if (!p.description) continue;
        const zhText = zhLayers[d.type]?.params?.[p.name];
        if (!zhText || !HAN.test(zhText)) wrong.push(`${d.type}.${p.name}: missing`);
        else if (numbers(zhText) !== numbers(p.description)) wrong.push(`${d.type}.${p.name}: numbers`);
      }
    expect(wrong).toEqual([]);
  });

  it('names no layer type or param the server does not offer, and says the same English the same way', () => {
    const stray: string[] = [];
    const said = new Map<string, Set<string>>();
    for (const [type, text] of Object.entries(zhLayers)) {
      const d = layerDefs.find((l) => l.type === type);
      if (!d) stray.push(type);
      for (const [name, zhText] of Object.entries(text.params ?? {})) {
        const p = d?.params.find((q) => q.name === name);
        if (!p) stray.push(`${type}.${name}`);
        else said.set(p.description, (said.get(p.description) ?? new Set()).add(zhText));
      }
    }
    expect(stray).toEqual([]);
    expect([...said].filter(([, ways]) => ways.size > 1)).toEqual([]);
  });

  it('localizeLayerType keeps names, kinds and defaults, and gives one object per type and locale', () => {
    const conv = layerDefs.find((l) => l.type === 'Conv2d')!;
    const out = localizeLayerType(conv, 'zh-TW');
    expect(out).toBe(localizeLayerType(conv, 'zh-TW'));
    expect(localizeLayerType(conv, 'en')).toBe(conv);
    expect(out.params.map((p) => [p.name, p.param_type, p.default, p.required])).toEqual(
      conv.params.map((p) => [p.name, p.param_type, p.default, p.required]),
    );
    expect(out.params.find((p) => p.name === 'stride')!.description).toBe(zhLayers.Conv2d!.params!.stride);
    expect(conv.params.find((p) => p.name === 'stride')!.description).not.toBe(zhLayers.Conv2d!.params!.stride);
  });
});
