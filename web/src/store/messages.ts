// What the editor tells the person: the messages panel's lines (warnings,
// errors and run notes, the most recent few hundred) and the toasts over the
// canvas. Every store says things through here.
import { create } from 'zustand';
import type { MessageLevel, NewMessage } from './runReducer';

export type { MessageLevel, NewMessage };

export interface Message extends NewMessage {
  id: number;
  time: number;
}

export interface Toast {
  id: number;
  level: MessageLevel;
  text: string;
}

const MESSAGES_KEPT = 500;
const TOAST_MS = 6000;

interface MessagesData {
  messages: Message[];
  toasts: Toast[];
  /** The id the next line or toast gets. */
  nextId: number;
}

export interface MessagesState extends MessagesData {
  say(level: MessageLevel, text: string, extra?: Partial<NewMessage>): void;
  /** Several lines at once (a batch of run messages): one state change for all of them. */
  sayAll(lines: readonly NewMessage[]): void;
  toast(level: MessageLevel, text: string): void;
  dismissToast(id: number): void;
  clearMessages(): void;
}

export const initialMessages = (): MessagesData => ({ messages: [], toasts: [], nextId: 1 });

/** What an error says, for a message. */
export function describeError(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/** A panel line from what a reducer or an action said (only the fields a line keeps). */
function toMessage(m: NewMessage): NewMessage {
  return {
    level: m.level,
    text: m.text,
    ...(m.nodeId ? { nodeId: m.nodeId } : {}),
    ...(m.param ? { param: m.param } : {}),
    ...(m.outOfMemory ? { outOfMemory: true } : {}),
  };
}

export const useMessages = create<MessagesState>()((set, get) => ({
  ...initialMessages(),

  say(level, text, extra) {
    get().sayAll([{ ...extra, level, text }]);
  },

  sayAll(lines) {
    if (lines.length === 0) return;
    const time = Date.now();
    set((s) => ({
      messages: [...s.messages, ...lines.map((m, i): Message => ({ ...toMessage(m), id: s.nextId + i, time }))].slice(-MESSAGES_KEPT),
      nextId: s.nextId + lines.length,
    }));
  },

  toast(level, text) {
    const toast: Toast = { id: get().nextId, level, text };
    set((s) => ({ nextId: s.nextId + 1, toasts: [...s.toasts.slice(-3), toast] }));
    // By identity, not id: ids start again after a reset, and this toast may be long gone.
    setTimeout(
      () => set((s) => (s.toasts.includes(toast) ? { toasts: s.toasts.filter((x) => x !== toast) } : s)),
      level === 'error' ? TOAST_MS * 2 : TOAST_MS,
    );
  },

  dismissToast(id) {
    set((s) => ({ toasts: s.toasts.filter((x) => x.id !== id) }));
  },

  clearMessages() {
    set({ messages: [] });
  },
}));
