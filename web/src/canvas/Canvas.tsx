import {
  Background,
  BackgroundVariant,
  Controls,
  MiniMap,
  ReactFlow,
  useNodesInitialized,
  useReactFlow,
  type Edge,
  type IsValidConnection,
  type OnConnectEnd,
} from '@xyflow/react';
import { useCallback, useEffect, useRef, type DragEvent, type MouseEvent } from 'react';
import { DATA_EDGE, NODE_COMPONENT, TRIGGER_EDGE, type CodefyEdge, type CodefyNode } from '../graph/graphJson';
import { useT } from '../i18n';
import { GenericNode } from '../nodes/GenericNode';
import { useDocument } from '../store/document';
import { useMessages } from '../store/messages';
import { usePanels } from '../store/panels';
import { usePreferences } from '../store/preferences';
import { shownRun } from '../store/runSession';
import { CheckedConnectionLine } from './ConnectionLine';
import { connectionOf } from './connectionOf';
import { TriggerEdge, TypedEdge } from './edges';
import { useShortcuts } from './useShortcuts';

import { PALETTE_MIME } from './dnd';

/** Width the floating side panel takes from the canvas, with its margins (styles/app.css). */
const SIDE_PANEL_SPACE = 340;

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
  const fitRequest = useDocument((s) => s.fitRequest);
  const onNodesChange = useDocument((s) => s.onNodesChange);
  const onEdgesChange = useDocument((s) => s.onEdgesChange);
  const connect = useDocument((s) => s.connect);
  const selectedId = useDocument((s) => s.selectedId);
  const { screenToFlowPosition, fitView, getNodes, getInternalNode, getViewport, setViewport } = useReactFlow<
    CodefyNode,
    CodefyEdge
  >();
  const wrapper = useRef<HTMLDivElement>(null);
  const initialized = useNodesInitialized();
  const fitted = useRef(0);
  const measureCheck = useDocument((s) => s.measureCheck);
  const pointer = useRef<{ x: number; y: number } | null>(null);
  useShortcuts(wrapper, pointer);

  // A double-click on the background opens the quick-add search there.
  const onDoubleClick = useCallback(
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

  // Fit a newly opened (or laid out) graph once all its nodes have been measured; an opened graph
  // laid out with estimated sizes is first laid out again with the measured ones.
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

  // The side panel floats over the canvas's right side: a node selected under it is moved into view
  // (once per selection, as soon as the node has been measured).
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
  }, [selectedId, initialized, nodes, getInternalNode, getViewport, setViewport]);

  const isValidConnection: IsValidConnection<Edge> = useCallback(
    (c) =>
      useDocument.getState().checkConnection({
        source: c.source,
        target: c.target,
        sourceHandle: c.sourceHandle ?? null,
        targetHandle: c.targetHandle ?? null,
      }).ok,
    [],
  );

  // A wire dropped on a handle that refuses it: say why (onConnect only hears valid ones).
  const onConnectEnd: OnConnectEnd = useCallback((_event, state) => {
    if (state.isValid !== false) return;
    const c = connectionOf(state);
    if (!c) return;
    const verdict = useDocument.getState().checkConnection(c);
    if (!verdict.ok) {
      useMessages.getState().toast('warning', verdict.reason);
      useMessages.getState().say('warning', verdict.reason, { nodeId: c.target });
    }
  }, []);

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
