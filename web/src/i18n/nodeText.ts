// Node and layer definitions in the current language. The server describes
// its node types and a SequentialModel's layer types in English; a locale's
// tables (nodes/zh-TW.ts) give their own text for a node type's description,
// params and ports and a layer type's params, and whatever they leave out
// stays as the server wrote it. Names (types, params, ports) are never
// translated: they are what graph files and the server read.
import { useMemo } from 'react';
import type { LayerTypeDefinition } from '../api/layers';
import type { NodeDefinition } from '../api/types';
import { useEditor } from '../store/editorStore';
import { useLocale, type Locale } from './index';
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

// One translated object per (definition, locale): components memoize on the
// definition's identity, which must not change from one render to the next.
const cache = new WeakMap<NodeDefinition, Map<Locale, NodeDefinition>>();

/** `def` with its description, params' and ports' descriptions in `locale` where the table has them. */
export function localizeDef(def: NodeDefinition, locale: Locale): NodeDefinition {
  const text = nodeTexts(locale)?.[def.node_name];
  if (!text) return def;
  let byLocale = cache.get(def);
  const hit = byLocale?.get(locale);
  if (hit) return hit;
  const out: NodeDefinition = {
    ...def,
    description: text.description ?? def.description,
    params: described(def.params, text.params),
    inputs: described(def.inputs, text.inputs),
    outputs: described(def.outputs, text.outputs),
  };
  if (!byLocale) cache.set(def, (byLocale = new Map()));
  byLocale.set(locale, out);
  return out;
}

const recordCache = new WeakMap<Record<string, NodeDefinition>, Map<Locale, Record<string, NodeDefinition>>>();

/** Every definition of `defs` in `locale`, the same object for the same record and locale. */
export function localizeDefs(defs: Record<string, NodeDefinition>, locale: Locale): Record<string, NodeDefinition> {
  if (!nodeTexts(locale)) return defs;
  let byLocale = recordCache.get(defs);
  const hit = byLocale?.get(locale);
  if (hit) return hit;
  const out: Record<string, NodeDefinition> = {};
  for (const [name, d] of Object.entries(defs)) out[name] = localizeDef(d, locale);
  if (!byLocale) recordCache.set(defs, (byLocale = new Map()));
  byLocale.set(locale, out);
  return out;
}

const layerCache = new WeakMap<LayerTypeDefinition, Map<Locale, LayerTypeDefinition>>();

/** `def` with its params' descriptions in `locale` where the table has them. */
export function localizeLayerType(def: LayerTypeDefinition, locale: Locale): LayerTypeDefinition {
  const text = layerTexts(locale)?.[def.type];
  if (!text) return def;
  let byLocale = layerCache.get(def);
  const hit = byLocale?.get(locale);
  if (hit) return hit;
  const out: LayerTypeDefinition = { ...def, params: described(def.params, text.params) };
  if (!byLocale) layerCache.set(def, (byLocale = new Map()));
  byLocale.set(locale, out);
  return out;
}

/** The server's node definitions by type, in the current language. */
export function useLocalizedDefs(): Record<string, NodeDefinition> {
  const defs = useEditor((s) => s.defs);
  const locale = useLocale();
  return localizeDefs(defs, locale);
}

/** The server's node definitions in its order, in the current language. */
export function useLocalizedDefList(): NodeDefinition[] {
  const list = useEditor((s) => s.defList);
  const locale = useLocale();
  return useMemo(() => list.map((d) => localizeDef(d, locale)), [list, locale]);
}

/** One node type's definition in the current language; undefined for a type the server does not offer. */
export function useLocalizedDef(type: string | undefined): NodeDefinition | undefined {
  const def = useEditor((s) => (type ? s.defs[type] : undefined));
  const locale = useLocale();
  return def ? localizeDef(def, locale) : undefined;
}
