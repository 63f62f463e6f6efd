// Node and layer definitions in the current language. The server describes
// its node types and a SequentialModel's layer types in English; a locale's
// tables (nodes/zh-TW.ts) give their own text for a node type's description,
// params and ports and a layer type's params, and whatever they leave out
// stays as the server wrote it. Names (types, params, ports) are never
// translated: they are what graph files and the server read. Pure: the hooks
// that give the catalogue's definitions in the current language are in
// store/catalogue.ts.
import type { LayerTypeDefinition } from '../api/layers';
import type { NodeDefinition } from '../api/types';
import type { Locale } from './index';
import { zhTWLayers, zhTWNodes } from './nodes/zh-TW';

/** One node type's text in a language, by the names the server gives. */
export interface NodeText {
  description?: string;
  params?: Record<string, string>;
  inputs?: Record<string, string>;
  outputs?: Record<string, string>;
}

export type NodeTexts = Record<string, NodeText>;

/** One layer type's param text in a language, by param name. */
export interface LayerText {
  params?: Record<string, string>;
}

export type LayerTexts = Record<string, LayerText>;

const TABLES: Partial<Record<Locale, NodeTexts>> = { 'zh-TW': zhTWNodes };
const LAYER_TABLES: Partial<Record<Locale, LayerTexts>> = { 'zh-TW': zhTWLayers };

/** The node text table of `locale` (none for English, the server's own language). */
export function nodeTexts(locale: Locale): NodeTexts | undefined {
  return TABLES[locale];
}

/** The layer text table of `locale` (none for English). */
export function layerTexts(locale: Locale): LayerTexts | undefined {
  return LAYER_TABLES[locale];
}

/** `list` with the description of each item `texts` has text for replaced by it. */
function described<T extends { name: string; description: string }>(list: T[], texts?: Record<string, string>): T[] {
  if (!texts) return list;
  return list.map((p) => {
    const text = texts[p.name];
    return text ? { ...p, description: text } : p;
  });
}

/**
 * A memo of one translated object per (object, locale): components memoize on
 * a definition's identity, which must not change from one render to the next.
 */
function perLocale<T extends object>(): (item: T, locale: Locale, make: () => T) => T {
  const cache = new WeakMap<T, Map<Locale, T>>();
  return (item, locale, make) => {
    let byLocale = cache.get(item);
    if (!byLocale) cache.set(item, (byLocale = new Map()));
    let out = byLocale.get(locale);
    if (!out) byLocale.set(locale, (out = make()));
    return out;
  };
}

const defMemo = perLocale<NodeDefinition>();
const recordMemo = perLocale<Record<string, NodeDefinition>>();
const layerMemo = perLocale<LayerTypeDefinition>();

/** `def` with its description, params' and ports' descriptions in `locale` where the table has them. */
export function localizeDef(def: NodeDefinition, locale: Locale): NodeDefinition {
  const text = nodeTexts(locale)?.[def.node_name];
  if (!text) return def;
  return defMemo(def, locale, () => ({
    ...def,
    description: text.description ?? def.description,
    params: described(def.params, text.params),
    inputs: described(def.inputs, text.inputs),
    outputs: described(def.outputs, text.outputs),
  }));
}

/** Every definition of `defs` in `locale`, the same object for the same record and locale. */
export function localizeDefs(defs: Record<string, NodeDefinition>, locale: Locale): Record<string, NodeDefinition> {
  if (!nodeTexts(locale)) return defs;
  return recordMemo(defs, locale, () =>
    Object.fromEntries(Object.entries(defs).map(([name, d]) => [name, localizeDef(d, locale)])),
  );
}

/** `def` with its params' descriptions in `locale` where the table has them. */
export function localizeLayerType(def: LayerTypeDefinition, locale: Locale): LayerTypeDefinition {
  const text = layerTexts(locale)?.[def.type];
  if (!text) return def;
  return layerMemo(def, locale, () => ({ ...def, params: described(def.params, text.params) }));
}
