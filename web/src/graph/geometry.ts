// Node sizes before React Flow has measured them, and whether placed nodes
// overlap: what decides that an opened graph needs laying out.
import type { NodeShape } from './ports';

export interface Size {
  width: number;
  height: number;
}
export interface Box extends Size {
  id: string;
  x: number;
  y: number;
}

// Keep in step with the node's CSS (styles/node.css): fixed width, one row
// per port pair, one per visible param.
export const NODE_WIDTH = 248;
const HEADER = 36;
const PORT_ROW = 22;
const PARAM_ROW = 32;
const ADVANCED_ROW = 26;
const PADDING = 12;
const PROGRESS = 58;

/** Nodes that train (they take a DATALOADER) keep room for their progress bar. */
export function showsProgress(shape: NodeShape): boolean {
  return shape.inputs.some((p) => p.data_type === 'DATALOADER');
}

/** The size a node is drawn at, estimated from its shape before it is measured. */
export function estimateSize(shape: NodeShape): Size {
  const ports = Math.max(shape.inputs.length, shape.outputs.length);
  const visible = shape.params.filter((p) => !p.advanced).length;
  const advanced = shape.params.some((p) => p.advanced) ? ADVANCED_ROW : 0;
  const progress = showsProgress(shape) ? PROGRESS : 0;
  return { width: NODE_WIDTH, height: HEADER + ports * PORT_ROW + progress + visible * PARAM_ROW + advanced + PADDING };
}

/** Whether two boxes overlap (a gap smaller than `margin` counts). */
export function overlaps(a: Box, b: Box, margin = 8): boolean {
  return (
    a.x < b.x + b.width + margin &&
    b.x < a.x + a.width + margin &&
    a.y < b.y + b.height + margin &&
    b.y < a.y + a.height + margin
  );
}

/** Whether `box` overlaps any of `others`. */
export function overlapsAny(box: Box, others: readonly Box[], margin = 8): boolean {
  return others.some((o) => overlaps(box, o, margin));
}

/** Whether any two boxes overlap. */
export function anyOverlap(boxes: readonly Box[], margin = 8): boolean {
  return boxes.some((a, i) => overlapsAny(a, boxes.slice(i + 1), margin));
}
