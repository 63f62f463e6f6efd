// What the server offers: its node definitions and type rules, its devices,
// and the lists of examples, saved graphs and model files. Loaded at start-up
// (editor.ts's init) and the lists again when the files dialog opens or a
// file changes. The hooks at the end give the definitions in the current
// language.
import { useMemo } from 'react';
import { create } from 'zustand';
import * as api from '../api';
import type { DeviceEntry, ExampleEntry, ModelFileEntry, NodeDefinition, SavedGraphEntry } from '../api/types';
import { builtinRules, rulesFromServer, type TypeRules } from '../graph/typeRules';
import { t, useLocale } from '../i18n';
import { localizeDef, localizeDefs } from '../i18n/nodeText';
import { describeError, useMessages } from './messages';

interface CatalogueData {
  status: 'loading' | 'ready' | 'offline';
  loadError: string | null;
  defs: Record<string, NodeDefinition>;
  /** The definitions in the server's order. */
  defList: NodeDefinition[];
  rules: TypeRules;
  devices: DeviceEntry[];
  /** The device the server runs graphs on unless told otherwise (null until it said, or when it did not answer). */
  serverDevice: string | null;
  examples: ExampleEntry[];
  savedGraphs: SavedGraphEntry[];
  models: ModelFileEntry[];
  /** The editor's start-up (editor.ts's init), once per page: StrictMode mounts the app twice in development. */
  startup: Promise<void> | null;
}

export interface CatalogueState extends CatalogueData {
  /** Asks for the node definitions, devices and type rules; false when the server did not answer (and says so). */
  load(): Promise<boolean>;
  /** Asks again for the examples, saved graphs and model files. */
  refreshLists(): Promise<void>;
}

export const initialCatalogue = (): CatalogueData => ({
  status: 'loading',
  loadError: null,
  defs: {},
  defList: [],
  rules: builtinRules,
  devices: [],
  serverDevice: null,
  examples: [],
  savedGraphs: [],
  models: [],
  startup: null,
});

export const useCatalogue = create<CatalogueState>()((set) => ({
  ...initialCatalogue(),

  async load() {
    set({ status: 'loading', loadError: null });
    try {
      const [defs, devices, types] = await Promise.all([
        api.listNodes(),
        api.listDevices().catch(() => null),
        api.getTypes().catch(() => null),
      ]);
      const byName: Record<string, NodeDefinition> = {};
      for (const d of defs) byName[d.node_name] = d;
      set({
        status: 'ready',
        defs: byName,
        defList: defs,
        devices: devices?.devices ?? [],
        serverDevice: devices?.default ?? null,
        rules: types ? rulesFromServer(types) : builtinRules,
      });
      return true;
    } catch (e) {
      set({ status: 'offline', loadError: describeError(e) });
      useMessages.getState().say('error', t('load.serverDown', { error: describeError(e) }));
      return false;
    }
  },

  async refreshLists() {
    const [examples, savedGraphs, models] = await Promise.all([
      api.listExamples().catch(() => [] as ExampleEntry[]),
      api.listGraphs().catch(() => [] as SavedGraphEntry[]),
      api.listModels().catch(() => [] as ModelFileEntry[]),
    ]);
    set({ examples, savedGraphs, models });
  },
}));

/** The server's node definitions by type, in the current language. */
export function useLocalizedDefs(): Record<string, NodeDefinition> {
  const defs = useCatalogue((s) => s.defs);
  const locale = useLocale();
  return localizeDefs(defs, locale);
}

/** The server's node definitions in its order, in the current language. */
export function useLocalizedDefList(): NodeDefinition[] {
  const list = useCatalogue((s) => s.defList);
  const locale = useLocale();
  return useMemo(() => list.map((d) => localizeDef(d, locale)), [list, locale]);
}

/** One node type's definition in the current language; undefined for a type the server does not offer. */
export function useLocalizedDef(type: string | undefined): NodeDefinition | undefined {
  const def = useCatalogue((s) => (type ? s.defs[type] : undefined));
  const locale = useLocale();
  return def ? localizeDef(def, locale) : undefined;
}
