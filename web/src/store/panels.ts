// Which panels and dialogs are open: the files dialog, the bottom panel
// (messages and charts), the shortcut sheet, the settings, and the quick-add
// search with where it opened.
import { create } from 'zustand';
import { useCatalogue } from './catalogue';

/** Where the quick-add search opened: on the screen, and the canvas position a node lands at. */
export interface QuickAddSpot {
  screen: { x: number; y: number };
  flow: { x: number; y: number };
}

interface PanelsData {
  filesOpen: boolean;
  bottomOpen: boolean;
  helpOpen: boolean;
  settingsOpen: boolean;
  quickAdd: QuickAddSpot | null;
}

export interface PanelsState extends PanelsData {
  /** Opens or closes the files dialog; opening it asks the server for its lists again. */
  setFilesOpen(open: boolean): void;
  setBottomOpen(open: boolean): void;
  setHelpOpen(open: boolean): void;
  setSettingsOpen(open: boolean): void;
  openQuickAdd(spot: QuickAddSpot | null): void;
}

export const initialPanels = (): PanelsData => ({
  filesOpen: false,
  bottomOpen: true,
  helpOpen: false,
  settingsOpen: false,
  quickAdd: null,
});

export const usePanels = create<PanelsState>()((set) => ({
  ...initialPanels(),

  setFilesOpen(open) {
    set({ filesOpen: open });
    if (open) void useCatalogue.getState().refreshLists();
  },

  setBottomOpen(open) {
    set({ bottomOpen: open });
  },

  setHelpOpen(open) {
    set({ helpOpen: open });
  },

  setSettingsOpen(open) {
    set({ settingsOpen: open });
  },

  openQuickAdd(spot) {
    set({ quickAdd: spot });
  },
}));
