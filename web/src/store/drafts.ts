// Unsaved edits kept in this browser, so a reload or a server restart loses
// nothing: one draft per graph (an example, a saved graph, or the one unnamed
// scratch graph), the most recent few. keepDrafts() writes the shown graph's
// a moment after its last change and forgets it once it is saved.
import { useDocument } from './document';
import { storage } from './storage';
import type { GraphSource } from './url';

const DRAFTS_KEY = 'codefy.drafts';
const DRAFTS_KEPT = 10;
/** How long after the last change the draft is written (ms). */
const DRAFT_DELAY_MS = 400;

export interface Draft {
  source: GraphSource;
  graph: unknown;
  at: number;
}

/** Which draft a graph from `source` keeps its edits in. */
export function draftKey(source: GraphSource): string {
  if (source.kind === 'example') return `example:${source.path}`;
  if (source.kind === 'saved') return `saved:${source.name}`;
  if (source.kind === 'run') return `run:${source.runId}`;
  return 'scratch';
}

export function readDrafts(): Record<string, Draft> {
  const text = storage.get(DRAFTS_KEY);
  if (!text) return {};
  try {
    const all = JSON.parse(text) as unknown;
    if (!all || typeof all !== 'object' || Array.isArray(all)) return {};
    const out: Record<string, Draft> = {};
    for (const [k, d] of Object.entries(all as Record<string, Draft>))
      if (d && typeof d === 'object' && d.source && d.graph && typeof d.at === 'number') out[k] = d;
    return out;
  } catch {
    return {};
  }
}

/** Writes (or, with null, forgets) the draft under `key`, keeping the most recent few. */
export function writeDraft(key: string, draft: Draft | null): void {
  const all = readDrafts();
  if (draft) all[key] = draft;
  else if (key in all) delete all[key];
  else return;
  const kept = Object.entries(all)
    .sort(([, a], [, b]) => b.at - a.at)
    .slice(0, DRAFTS_KEPT);
  if (kept.length) storage.set(DRAFTS_KEY, JSON.stringify(Object.fromEntries(kept)));
  else storage.remove(DRAFTS_KEY);
}

/** The shown graph's draft, a moment after each change; `cancel` drops a write still waiting. */
export interface DraftKeeper {
  cancel(): void;
  stop(): void;
}

/** Keeps the shown graph's unsaved edits in this browser, and forgets them once it is saved or replaced. */
export function keepDrafts(): DraftKeeper {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cancel = () => clearTimeout(timer);
  const unsubscribe = useDocument.subscribe((s, prev) => {
    if (s.nodes === prev.nodes && s.edges === prev.edges && s.meta === prev.meta && s.unsaved === prev.unsaved) return;
    cancel();
    timer = setTimeout(() => {
      const now = useDocument.getState();
      const key = draftKey(now.source);
      if (!now.unsaved) return writeDraft(key, null);
      writeDraft(key, { source: now.source, graph: now.exportGraph(), at: Date.now() });
    }, DRAFT_DELAY_MS);
  });
  return {
    cancel,
    stop() {
      cancel();
      unsubscribe();
    },
  };
}
