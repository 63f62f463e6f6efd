// Undo and redo over snapshots of the open graph. Each edit records the
// graph as it was before; edits of one kind in quick succession (the
// keystrokes typed into one param, the steps of one drag, a node's removal
// with its wires) are one step. Pure, so its rules are tested on their own.

export interface History<T> {
  past: T[];
  future: T[];
  /** What the last recorded edit was, and when: edits with the same tag soon after join it. */
  lastTag: string | null;
  lastAt: number;
}

export const HISTORY_LIMIT = 100;
/** Edits with the same tag closer together than this are one undo step. */
export const JOIN_MS = 800;

export const emptyHistory = <T>(): History<T> => ({ past: [], future: [], lastTag: null, lastAt: 0 });

/**
 * The history after an edit of `current` tagged `tag` at time `now`: `current` becomes the state to
 * go back to, unless the edit continues the last one (same tag, within JOIN_MS). Any redo is dropped.
 */
export function record<T>(h: History<T>, current: T, tag: string, now: number): History<T> {
  const joins = tag === h.lastTag && now - h.lastAt < JOIN_MS && h.past.length > 0;
  const past = joins ? h.past : [...h.past.slice(-(HISTORY_LIMIT - 1)), current];
  return { past, future: [], lastTag: tag, lastAt: now };
}

/** One step back: the state to show and the history after it, or null with nothing to undo. */
export function undo<T>(h: History<T>, current: T): { state: T; history: History<T> } | null {
  const state = h.past.at(-1);
  if (state === undefined) return null;
  return { state, history: { past: h.past.slice(0, -1), future: [current, ...h.future], lastTag: null, lastAt: 0 } };
}

/** One step forward again, or null with nothing to redo. */
export function redo<T>(h: History<T>, current: T): { state: T; history: History<T> } | null {
  const state = h.future[0];
  if (state === undefined) return null;
  return { state, history: { past: [...h.past, current], future: h.future.slice(1), lastTag: null, lastAt: 0 } };
}
