// Where the canvas looks: a newly opened or laid out graph fitted once its
// nodes are measured, and a selected node moved out from under the side panel.
import { useNodesInitialized, useReactFlow } from '@xyflow/react';
import { useEffect, useRef, type RefObject } from 'react';
import type { CodefyEdge, CodefyNode } from '../graph/graphJson';
import { useDocument } from '../store/document';

/** Width the floating side panel takes from the canvas, with its margins (styles/app.css). */
const SIDE_PANEL_SPACE = 340;

/**
 * Fit a newly opened (or laid out) graph once all its nodes have been measured; an opened graph
 * laid out with estimated sizes is first laid out again with the measured ones.
 */
export function useFitWhenMeasured(nodes: CodefyNode[]) {
  const { fitView, getNodes } = useReactFlow<CodefyNode, CodefyEdge>();
  const initialized = useNodesInitialized();
  const fitRequest = useDocument((s) => s.fitRequest);
  const measureCheck = useDocument((s) => s.measureCheck);
  const fitted = useRef(0);
  useEffect(() => {
    if (!initialized || fitted.current === fitRequest) return;
    const all = getNodes();
    if (all.length === 0 || !all.every((n) => n.measured?.width && n.measured?.height)) return;
    if (measureCheck) {
      void useDocument.getState().relayoutMeasured();
      return;
    }
    const id = requestAnimationFrame(() => {
      fitted.current = fitRequest;
      void fitView({ padding: 0.08, maxZoom: 1, duration: 0 });
    });
    return () => cancelAnimationFrame(id);
  }, [initialized, fitRequest, measureCheck, fitView, getNodes, nodes]);
}

/**
 * The side panel floats over the canvas's right side: a node selected under it is moved into view
 * (once per selection, as soon as the node has been measured).
 */
export function useRevealSelected(wrapper: RefObject<HTMLDivElement | null>, nodes: CodefyNode[]) {
  const { getInternalNode, getViewport, setViewport } = useReactFlow<CodefyNode, CodefyEdge>();
  const initialized = useNodesInitialized();
  const selectedId = useDocument((s) => s.selectedId);
  const revealed = useRef<string | null>(null);
  useEffect(() => {
    const el = wrapper.current;
    const n = selectedId ? getInternalNode(selectedId) : undefined;
    if (!selectedId) revealed.current = null;
    if (!el || !n || n.dragging || !n.measured.width || revealed.current === selectedId) return;
    revealed.current = selectedId;
    const vp = getViewport();
    const left = vp.x + n.internals.positionAbsolute.x * vp.zoom;
    const right = left + n.measured.width * vp.zoom;
    const limit = el.clientWidth - SIDE_PANEL_SPACE;
    const dx = Math.min(right - limit, Math.max(left - 16, 0));
    if (dx > 0) void setViewport({ ...vp, x: vp.x - dx }, { duration: 200 });
  }, [wrapper, selectedId, initialized, nodes, getInternalNode, getViewport, setViewport]);
}
