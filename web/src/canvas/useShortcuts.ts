// Keyboard shortcuts and the clipboard for the canvas. Copy, cut and paste
// go through the browser's clipboard events (so nodes copied here paste in
// another tab or window, and a graph.json copied from a file pastes here);
// the other keys come from the table in shortcuts.ts.
import { useReactFlow } from '@xyflow/react';
import { useEffect, type RefObject } from 'react';
import type { CodefyEdge, CodefyNode } from '../graph/graphJson';
import { t } from '../i18n';
import { useDocument } from '../store/document';
import { newTab, saveGraph } from '../store/editor';
import { useMessages } from '../store/messages';
import { usePanels } from '../store/panels';
import { useRunSession } from '../store/runSession';
import { commandFor, typingIn } from './shortcuts';

/** The last nodes copied here, for a browser that gives a paste event no text. */
let lastCopied: string | null = null;

/** Whether the browser's text selection (in a message, a panel) is what a copy should take. */
const textSelected = () => (globalThis.getSelection?.()?.toString() ?? '') !== '';

/**
 * Installs the editor's keys while the canvas is mounted. `pointer` is the mouse position over the
 * canvas (screen coordinates; null when the mouse is elsewhere): pasted nodes and quick add go there.
 */
export function useShortcuts(wrapper: RefObject<HTMLDivElement | null>, pointer: RefObject<{ x: number; y: number } | null>) {
  const { fitView, screenToFlowPosition } = useReactFlow<CodefyNode, CodefyEdge>();

  useEffect(() => {
    /** Where keyboard-made things land: at the pointer over the canvas, else the canvas's middle. */
    const spot = (): { screen: { x: number; y: number }; flow: { x: number; y: number } } | null => {
      const el = wrapper.current;
      if (!el) return null;
      const r = el.getBoundingClientRect();
      const screen = pointer.current ?? { x: r.left + r.width / 2, y: r.top + r.height / 3 };
      return { screen, flow: screenToFlowPosition(screen) };
    };
    const blocked = () => {
      const s = usePanels.getState();
      return s.filesOpen || s.quickAdd !== null;
    };

    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.isComposing) return;
      const s = useDocument.getState();
      const panels = usePanels.getState();
      const command = commandFor(e, typingIn(e.target));
      if (!command) return;
      if (panels.helpOpen && command !== 'help') return;
      if (blocked()) return;
      e.preventDefault();
      switch (command) {
        case 'undo':
          return s.undo();
        case 'redo':
          return s.redo();
        case 'duplicate':
          return s.duplicateSelection();
        case 'selectAll':
          return s.selectAll();
        case 'save':
          return void saveGraph();
        case 'run':
          return void useRunSession.getState().runGraph();
        case 'fit':
          return void fitView({ padding: 0.08, maxZoom: 1, duration: 200 });
        case 'newTab':
          return void newTab();
        case 'help':
          return panels.setHelpOpen(!panels.helpOpen);
        case 'quickAdd': {
          const at = spot();
          if (at) panels.openQuickAdd(at);
          return;
        }
        default:
          return;
      }
    };

    const onCopy = (e: ClipboardEvent, cut: boolean) => {
      if (typingIn(e.target) || textSelected() || blocked()) return;
      const s = useDocument.getState();
      const text = cut ? s.cutSelection() : s.copySelection();
      if (!text) return;
      lastCopied = text;
      e.clipboardData?.setData('text/plain', text);
      e.preventDefault();
    };
    const copy = (e: ClipboardEvent) => onCopy(e, false);
    const cut = (e: ClipboardEvent) => onCopy(e, true);
    const paste = (e: ClipboardEvent) => {
      if (typingIn(e.target) || blocked()) return;
      const text = e.clipboardData?.getData('text/plain') || lastCopied;
      if (!text) return;
      const s = useDocument.getState();
      const at = pointer.current ? screenToFlowPosition(pointer.current) : undefined;
      const before = s.nodes.length;
      if (s.paste(text, at)) {
        e.preventDefault();
        useMessages.getState().say('info', t('edit.pasted', { count: useDocument.getState().nodes.length - before }));
      }
    };

    window.addEventListener('keydown', onKey);
    document.addEventListener('copy', copy);
    document.addEventListener('cut', cut);
    document.addEventListener('paste', paste);
    return () => {
      window.removeEventListener('keydown', onKey);
      document.removeEventListener('copy', copy);
      document.removeEventListener('cut', cut);
      document.removeEventListener('paste', paste);
    };
  }, [wrapper, pointer, fitView, screenToFlowPosition]);
}
