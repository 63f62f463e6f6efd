// The layer editor's routes: GET /api/layers (the layer types and their
// params) and POST /api/layers/shapes (each layer's output shape for a sample
// input). Codefy's own routes; CodefyUI keeps its layer table in its editor.
import { apiFetch } from './auth';
import { readAnswer as answer } from './rest';
import type { ParamDefinition } from './types';

/** One param of a layer type: /api/nodes' shape, and whether a layer needs it. */
export interface LayerParamDefinition extends ParamDefinition {
  /** No PyTorch default: a new layer gets `default`, and the layer can't be built without it. */
  required: boolean;
}

/** One entry of GET /api/layers. */
export interface LayerTypeDefinition {
  type: string;
  category: string;
  kind: 'layer' | 'merge';
  min_inputs: number;
  /** null: any number. */
  max_inputs: number | null;
  params: LayerParamDefinition[];
}

/** One node of a shape trace, in evaluation order; the batch dimension (1) first. */
export interface TracedNode {
  id: string;
  type: string;
  output_shape: number[];
  params: number;
}

/** Where a trace stopped. */
export interface TraceError {
  node_id: string | null;
  node_type: string | null;
  param: string | null;
  message: string;
}

/** POST /api/layers/shapes' answer. */
export interface ShapeTraceResponse {
  nodes: TracedNode[];
  /** null after an error. */
  output_shape: number[] | null;
  total_params: number;
  error: TraceError | null;
}


export const listLayerTypes = async () => answer<LayerTypeDefinition[]>(await apiFetch('/api/layers'));

export const traceLayerShapes = async (layers: unknown, inputShape: readonly number[], signal?: AbortSignal) =>
  answer<ShapeTraceResponse>(
    await apiFetch('/api/layers/shapes', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ layers, input_shape: inputShape }),
      ...(signal ? { signal } : {}),
    }),
  );
