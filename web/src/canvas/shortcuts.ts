// The editor's keyboard shortcuts as data: the key handler and the help
// sheet read the same table, so the sheet lists exactly what works.
import type { MessageKey } from '../i18n';

export type Command =
  | 'undo'
  | 'redo'
  | 'copy'
  | 'cut'
  | 'paste'
  | 'duplicate'
  | 'selectAll'
  | 'save'
  | 'run'
  | 'fit'
  | 'newTab'
  | 'quickAdd'
  | 'help';

export interface Shortcut {
  command: Command | 'delete' | 'multiSelect' | 'escape';
  /** As written in the sheet; `Mod` is Ctrl (⌘ on a Mac). */
  keys: string[];
  what: MessageKey;
}

export const SHORTCUTS: readonly Shortcut[] = [
  { command: 'quickAdd', keys: ['Space', '/'], what: 'key.quickAddKey' },
  { command: 'undo', keys: ['Mod+Z'], what: 'key.undo' },
  { command: 'redo', keys: ['Mod+Shift+Z', 'Mod+Y'], what: 'key.redo' },
  { command: 'copy', keys: ['Mod+C'], what: 'key.copy' },
  { command: 'cut', keys: ['Mod+X'], what: 'key.cut' },
  { command: 'paste', keys: ['Mod+V'], what: 'key.paste' },
  { command: 'duplicate', keys: ['Mod+D'], what: 'key.duplicate' },
  { command: 'selectAll', keys: ['Mod+A'], what: 'key.selectAll' },
  { command: 'delete', keys: ['Delete', 'Backspace'], what: 'key.delete' },
  { command: 'multiSelect', keys: ['Shift+Click', 'Shift+Drag'], what: 'key.multiSelect' },
  { command: 'save', keys: ['Mod+S'], what: 'key.save' },
  { command: 'run', keys: ['Mod+Enter'], what: 'key.run' },
  { command: 'fit', keys: ['F'], what: 'key.fit' },
  { command: 'newTab', keys: ['Alt+T'], what: 'key.newTab' },
  { command: 'help', keys: ['?'], what: 'key.help' },
  { command: 'escape', keys: ['Escape'], what: 'key.escape' },
];

/** Commands a key runs even while typing in a field (the others type into it). */
const IN_FIELDS: ReadonlySet<Command> = new Set<Command>(['save', 'run']);
/** Commands left to the browser's own copy/cut/paste events (they carry the clipboard). */
const CLIPBOARD_EVENTS: ReadonlySet<Command> = new Set<Command>(['copy', 'cut', 'paste']);

export interface KeyLike {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  altKey: boolean;
}

/** The key as the table writes it: `Mod+Shift+Z`, `?`, `Space`. */
export function comboOf(e: KeyLike): string {
  let key = e.key === ' ' ? 'Space' : e.key;
  if (key.length === 1) key = key.toUpperCase();
  // A printed symbol already says whether Shift was down ('?' is Shift+/).
  const shift = e.shiftKey && (key.length > 1 || /[A-Z]/.test(key));
  return `${e.ctrlKey || e.metaKey ? 'Mod+' : ''}${e.altKey ? 'Alt+' : ''}${shift ? 'Shift+' : ''}${key}`;
}

const byCombo = new Map<string, Command>();
for (const s of SHORTCUTS)
  if (s.command !== 'delete' && s.command !== 'multiSelect' && s.command !== 'escape')
    for (const k of s.keys) byCombo.set(k.toUpperCase(), s.command);

/**
 * The command a key press runs, or null: none while typing in a field (except save and run), and
 * none for copy/cut/paste, which the clipboard events handle.
 */
export function commandFor(e: KeyLike, inField: boolean): Command | null {
  const command = byCombo.get(comboOf(e).toUpperCase()) ?? null;
  if (!command || CLIPBOARD_EVENTS.has(command)) return null;
  if (inField && !IN_FIELDS.has(command)) return null;
  return command;
}

/** Whether keys typed now go into a text field, a select or an editable element. */
export function typingIn(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || typeof el.closest !== 'function') return false;
  if (el.isContentEditable) return true;
  const tag = el.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT';
}
