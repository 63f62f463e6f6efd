import { BaseEdge, getBezierPath, type EdgeProps } from '@xyflow/react';
import { memo, useState } from 'react';
import type { CodefyEdge } from '../graph/graphJson';
import { outputPort } from '../graph/ports';
import { typeColorVar } from '../graph/typeRules';
import { EdgeTooltip } from '../inspector/Inspector';
import { nodeShape } from '../graph/placement';
import { useCatalogue } from '../store/catalogue';
import { useDocument } from '../store/document';

/** The data type leaving `source` at `handle` ('ANY' when unknown). */
function useSourceType(source: string, handle: string | null | undefined): string {
  const defs = useCatalogue((s) => s.defs);
  return useDocument((s) => {
    const node = s.nodes.find((n) => n.id === source);
    if (!node) return 'ANY';
    return outputPort(nodeShape({ defs, edges: s.edges }, node), handle)?.data_type ?? 'ANY';
  });
}

/** A data wire, coloured by the type it carries; hovered after a recorded run, it tells what it carried. */
export const TypedEdge = memo(function TypedEdge(props: EdgeProps<CodefyEdge>) {
  const type = useSourceType(props.source, props.sourceHandleId);
  const [path] = getBezierPath(props);
  const [hover, setHover] = useState<{ x: number; y: number } | null>(null);
  return (
    <>
      <g onMouseMove={(e) => setHover({ x: e.clientX, y: e.clientY })} onMouseLeave={() => setHover(null)}>
        <BaseEdge
          id={props.id}
          path={path}
          markerEnd={props.markerEnd}
          interactionWidth={16}
          className={`edge-data${props.selected ? ' selected' : ''}`}
          style={{ stroke: typeColorVar(type), strokeWidth: props.selected ? 3 : 2 }}
        />
      </g>
      {hover && props.sourceHandleId && (
        <EdgeTooltip source={props.source} port={props.sourceHandleId} x={hover.x} y={hover.y} />
      )}
    </>
  );
});

/** A trigger wire (Start's trigger onto the node it starts): dashed. */
export const TriggerEdge = memo(function TriggerEdge(props: EdgeProps<CodefyEdge>) {
  const [path] = getBezierPath(props);
  return (
    <BaseEdge
      id={props.id}
      path={path}
      interactionWidth={16}
      className={`edge-trigger${props.selected ? ' selected' : ''}`}
      style={{ stroke: typeColorVar('TRIGGER'), strokeWidth: props.selected ? 2.5 : 1.5, strokeDasharray: '6 4' }}
    />
  );
});
