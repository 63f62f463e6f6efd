// The node types' text in Traditional Chinese (Taiwan), by node type: the
// description, and each param's and port's, under the names the server gives
// them (tests/nodeText.test.ts checks them against the server's definitions:
// every node type, param and port with English text has its Chinese, and none
// names something the server does not offer). Terms follow ../zh-TW.ts.
import type { NodeTexts } from '../nodeText';
import classical from './zh-TW/classical.json';
import layers from './zh-TW/layers.json';
import pipeline from './zh-TW/pipeline.json';

export const zhTWNodes: NodeTexts = { ...pipeline, ...classical, ...layers };
