import { Background, BackgroundVariant, Controls, MiniMap, ReactFlow } from '@xyflow/react';
import { useRef } from 'react';
import { DATA_EDGE, NODE_COMPONENT, TRIGGER_EDGE, type CodefyEdge, type CodefyNode } from '../graph/graphJson';
import { useT } from '../i18n';
import { GenericNode } from '../nodes/GenericNode';
import { useDocument } from '../store/document';
import { usePreferences } from '../store/preferences';
import { shownRun } from '../store/runSession';
import { isValidConnection, onConnectEnd } from './connectionChecks';
import { CheckedConnectionLine } from './ConnectionLine';
import { TriggerEdge, TypedEdge } from './edges';
import { usePaletteDrop, useQuickAddOnDoubleClick } from './useCanvasPointer';
import { useFitWhenMeasured, useRevealSelected } from './useCanvasView';
import { useShortcuts } from './useShortcuts';

const nodeTypes = { [NODE_COMPONENT]: GenericNode };

/** A node in the minimap, coloured by its run status (as its border on the canvas). */
function minimapColor(n: CodefyNode): string {
  const status = shownRun().statuses[n.id];
  return status && status !== 'idle' ? `var(--status-${status})` : 'var(--minimap-node)';
}
const edgeTypes = { [DATA_EDGE]: TypedEdge, [TRIGGER_EDGE]: TriggerEdge };

export function Canvas() {
  const t = useT();
  const nodes = useDocument((s) => s.nodes);
  const edges = useDocument((s) => s.edges);
  const theme = usePreferences((s) => s.theme);
  const onNodesChange = useDocument((s) => s.onNodesChange);
  const onEdgesChange = useDocument((s) => s.onEdgesChange);
  const connect = useDocument((s) => s.connect);
  const wrapper = useRef<HTMLDivElement>(null);
  const pointer = useRef<{ x: number; y: number } | null>(null);
  useShortcuts(wrapper, pointer);
  useFitWhenMeasured(nodes);
  useRevealSelected(wrapper, nodes);
  const { onDragOver, onDrop } = usePaletteDrop();
  const onDoubleClick = useQuickAddOnDoubleClick();

  return (
    <div
      className="canvas"
      data-testid="canvas"
      ref={wrapper}
      onDragOver={onDragOver}
      onDrop={onDrop}
      onDoubleClick={onDoubleClick}
      onMouseMove={(e) => (pointer.current = { x: e.clientX, y: e.clientY })}
      onMouseLeave={() => (pointer.current = null)}
    >
      <ReactFlow<CodefyNode, CodefyEdge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={connect}
        onConnectEnd={onConnectEnd}
        isValidConnection={isValidConnection}
        connectionLineComponent={CheckedConnectionLine}
        colorMode={theme}
        minZoom={0.15}
        maxZoom={2}
        deleteKeyCode={['Backspace', 'Delete']}
        selectNodesOnDrag={false}
        zoomOnDoubleClick={false}
        multiSelectionKeyCode={['Shift', 'Meta', 'Control']}
        fitView
        fitViewOptions={{ padding: 0.08, maxZoom: 1 }}
      >
        <Background variant={BackgroundVariant.Dots} gap={20} size={1} />
        <Controls showInteractive={false} />
        <MiniMap<CodefyNode>
          pannable
          zoomable
          ariaLabel={t('canvas.minimap')}
          nodeColor={minimapColor}
          nodeStrokeWidth={3}
          style={{ width: 160, height: 110 }}
        />
      </ReactFlow>
      {nodes.length === 0 && <div className="canvas-empty">{t('canvas.empty')}</div>}
    </div>
  );
}
