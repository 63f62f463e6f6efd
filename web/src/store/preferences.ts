// The person's choices that this browser remembers: the theme and the
// device graphs run on unless their own says otherwise.
import { create } from 'zustand';
import type { DeviceEntry } from '../api/types';
import { storage } from './storage';

export type Theme = 'dark' | 'light';

const THEME_KEY = 'codefy.theme';
const DEVICE_KEY = 'codefy.device';

interface PreferencesData {
  theme: Theme;
  /** Where graphs run unless their own device says otherwise (the settings' choice); a new graph starts here. */
  defaultDevice: string;
}

export interface PreferencesState extends PreferencesData {
  setTheme(theme: Theme): void;
  /** The settings' default device, remembered in this browser (editor.ts's setDefaultDevice moves the open graph too). */
  setDefaultDevice(device: string): void;
  /**
   * At start-up, once the server has listed its devices: the remembered default when the server
   * offers it, else the server's default. Not written down (a server's default is not a choice).
   */
  settleDefaultDevice(devices: readonly DeviceEntry[], serverDefault: string | null): string;
}

export const initialPreferences = (): PreferencesData => ({
  theme: storage.get(THEME_KEY) === 'light' ? 'light' : 'dark',
  defaultDevice: 'auto',
});

export const usePreferences = create<PreferencesState>()((set) => ({
  ...initialPreferences(),

  setTheme(theme) {
    storage.set(THEME_KEY, theme);
    if (typeof document !== 'undefined') document.documentElement.dataset.theme = theme;
    set({ theme });
  },

  setDefaultDevice(device) {
    storage.set(DEVICE_KEY, device);
    set({ defaultDevice: device });
  },

  settleDefaultDevice(devices, serverDefault) {
    const remembered = storage.get(DEVICE_KEY);
    const device =
      remembered && devices.some((d) => d.device === remembered) ? remembered : (serverDefault ?? devices[0]?.device ?? 'auto');
    set({ defaultDevice: device });
    return device;
  },
}));
