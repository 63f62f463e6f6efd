// Uploading and deleting model files. The list itself is the catalogue's
// `models` (what file params offer), refreshed after each change so a
// ModelLoader's file menu shows it at once.
import { create } from 'zustand';
import { deleteModel, uploadModel } from '../api/server';
import { t } from '../i18n';
import { formatBytes } from './serverRows';
import { useCatalogue } from './catalogue';

export interface ModelFilesState {
  /** The fraction sent of the file being uploaded; null when none is. */
  progress: number | null;
  /** The outcome of the last upload or delete. */
  result: { level: 'info' | 'error'; text: string } | null;
  upload(file: File): Promise<void>;
  remove(name: string): Promise<void>;
}

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e));

export const useModelFiles = create<ModelFilesState>()((set, get) => ({
  progress: null,
  result: null,

  async upload(file) {
    if (get().progress !== null) return;
    set({ progress: 0, result: null });
    try {
      const r = await uploadModel(file, (progress) => set({ progress }));
      set({ result: { level: 'info', text: t('models.uploaded', { name: r.filename, size: formatBytes(r.size) }) } });
    } catch (e) {
      set({ result: { level: 'error', text: t('models.uploadRefused', { name: file.name, error: describe(e) }) } });
    } finally {
      set({ progress: null });
    }
    await useCatalogue.getState().refreshLists();
  },

  async remove(name) {
    try {
      await deleteModel(name);
      set({ result: { level: 'info', text: t('models.deleted', { name }) } });
    } catch (e) {
      set({ result: { level: 'error', text: t('models.deleteFailed', { name, error: describe(e) }) } });
    }
    await useCatalogue.getState().refreshLists();
  },
}));
