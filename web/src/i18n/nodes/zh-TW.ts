// The node types' text in Traditional Chinese (Taiwan), by node type: the
// description, and each param's and port's, under the names the server gives
// them; and the params' text of a SequentialModel's layer types, by layer
// type (tests/nodeText.test.ts checks both against the server's definitions:
// everything with English text has its Chinese, and nothing names what the
// server does not offer). Terms follow ../zh-TW.ts.
import type { LayerTexts, NodeTexts } from '../nodeText';
import classical from './zh-TW/classical.json';
import layerTypes from './zh-TW/layer-types.json';
import layers from './zh-TW/layers.json';
import pipeline from './zh-TW/pipeline.json';

export const zhTWNodes: NodeTexts = { ...pipeline, ...classical, ...layers };

export const zhTWLayers: LayerTexts = layerTypes;
