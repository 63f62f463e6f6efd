// The layer editor's own small store: the layer types (GET /api/layers,
// fetched once) and shape traces. Components call these actions; only they
// call src/api/layers.ts.
import { create } from 'zustand';
import { listLayerTypes, traceLayerShapes, type LayerTypeDefinition, type ShapeTraceResponse } from '../api/layers';

export interface LayerStoreState {
  types: LayerTypeDefinition[];
  typesStatus: 'idle' | 'loading' | 'ready' | 'failed';
  loadTypes(): Promise<void>;
  /** Each layer's output shape for a batch of one sample of `inputShape`. */
  traceShapes(layers: unknown, inputShape: readonly number[], signal?: AbortSignal): Promise<ShapeTraceResponse>;
}

export const useLayerStore = create<LayerStoreState>()((set, get) => ({
  types: [],
  typesStatus: 'idle',
  async loadTypes() {
    if (get().typesStatus === 'loading' || get().typesStatus === 'ready') return;
    set({ typesStatus: 'loading' });
    try {
      set({ types: await listLayerTypes(), typesStatus: 'ready' });
    } catch {
      set({ typesStatus: 'failed' });
    }
  },
  traceShapes: (layers, inputShape, signal) => traceLayerShapes(layers, inputShape, signal),
}));
