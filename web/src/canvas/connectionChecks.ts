// The canvas's wire checks by the server's type rules: while a wire is
// dragged, and when one is dropped on a handle that refuses it.
import type { Edge, IsValidConnection, OnConnectEnd } from '@xyflow/react';
import { useDocument } from '../store/document';
import { useMessages } from '../store/messages';
import { connectionOf } from './connectionOf';

export const isValidConnection: IsValidConnection<Edge> = (c) =>
  useDocument.getState().checkConnection({
    source: c.source,
    target: c.target,
    sourceHandle: c.sourceHandle ?? null,
    targetHandle: c.targetHandle ?? null,
  }).ok;

/** A wire dropped on a handle that refuses it: say why (onConnect only hears valid ones). */
export const onConnectEnd: OnConnectEnd = (_event, state) => {
  if (state.isValid !== false) return;
  const c = connectionOf(state);
  if (!c) return;
  const verdict = useDocument.getState().checkConnection(c);
  if (!verdict.ok) {
    useMessages.getState().toast('warning', verdict.reason);
    useMessages.getState().say('warning', verdict.reason, { nodeId: c.target });
  }
};
