import type { Connection, FinalConnectionState } from '@xyflow/react';

/** The connection a drag describes, source first whichever end it started from. */
export function connectionOf(state: Pick<FinalConnectionState, 'fromHandle' | 'toHandle'>): Connection | null {
  if (!state.fromHandle || !state.toHandle) return null;
  const from = state.fromHandle;
  const to = state.toHandle;
  const [s, tg] = from.type === 'source' ? [from, to] : [to, from];
  return { source: s.nodeId, sourceHandle: s.id ?? null, target: tg.nodeId, targetHandle: tg.id ?? null };
}
