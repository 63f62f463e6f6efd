// What the pointer does on the canvas's background: a palette item dropped
// adds its node there, a double-click opens the quick-add search there.
import { useReactFlow } from '@xyflow/react';
import { useCallback, type DragEvent, type MouseEvent } from 'react';
import { useDocument } from '../store/document';
import { usePanels } from '../store/panels';
import { PALETTE_MIME } from './dnd';

/** Dragging a palette item over the canvas, and dropping it: its node added where it lands. */
export function usePaletteDrop() {
  const { screenToFlowPosition } = useReactFlow();
  const onDragOver = useCallback((e: DragEvent) => {
    if (!e.dataTransfer.types.includes(PALETTE_MIME)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
  }, []);
  const onDrop = useCallback(
    (e: DragEvent) => {
      const type = e.dataTransfer.getData(PALETTE_MIME);
      if (!type) return;
      e.preventDefault();
      const p = screenToFlowPosition({ x: e.clientX, y: e.clientY });
      useDocument.getState().addNode(type, { x: Math.round(p.x - 40), y: Math.round(p.y - 16) });
    },
    [screenToFlowPosition],
  );
  return { onDragOver, onDrop };
}

/** A double-click on the background opens the quick-add search there. */
export function useQuickAddOnDoubleClick() {
  const { screenToFlowPosition } = useReactFlow();
  return useCallback(
    (e: MouseEvent) => {
      const target = e.target as Element;
      if (!target.closest('.react-flow__pane') || target.closest('.react-flow__node')) return;
      usePanels.getState().openQuickAdd({
        screen: { x: e.clientX, y: e.clientY },
        flow: screenToFlowPosition({ x: e.clientX, y: e.clientY }),
      });
    },
    [screenToFlowPosition],
  );
}
