import { getBezierPath, useConnection, type ConnectionLineComponentProps } from '@xyflow/react';
import { useDocument } from '../store/document';
import { connectionOf } from './connectionOf';

/**
 * The wire being dragged: green over a handle that takes it, red over one
 * that refuses it, with the reason written beside the pointer.
 */
export function CheckedConnectionLine(props: ConnectionLineComponentProps) {
  const connection = useConnection();
  const [path] = getBezierPath({
    sourceX: props.fromX,
    sourceY: props.fromY,
    sourcePosition: props.fromPosition,
    targetX: props.toX,
    targetY: props.toY,
    targetPosition: props.toPosition,
  });
  let reason: string | null = null;
  if (connection.inProgress && connection.isValid === false) {
    const c = connectionOf(connection);
    if (c) {
      const verdict = useDocument.getState().checkConnection(c);
      if (!verdict.ok) reason = verdict.reason;
    }
  }
  const status = props.connectionStatus ?? 'none';
  return (
    <g className={`connection-line ${status}`}>
      <path d={path} fill="none" strokeWidth={2} className="connection-path" />
      {reason && (
        <foreignObject x={props.toX + 12} y={props.toY + 10} width={300} height={80} className="connection-reason-box">
          <div className="connection-reason" data-testid="connection-reason">
            {reason}
          </div>
        </foreignObject>
      )}
    </g>
  );
}
