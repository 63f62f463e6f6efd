// What the Runs panel follows while it is mounted: Escape closes it, and the
// history is asked for again when the shown graph or this editor's runs change.
import { useEffect, useRef } from 'react';
import { usePanels } from '../store/panels';
import { useRunHistory } from '../store/runHistory';
import { useRunSession } from '../store/runSession';

/** While open, Escape closes the panel (a dialog over it closes first). */
export function useEscapeClosesRuns(open: boolean) {
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      const p = usePanels.getState();
      if (e.key === 'Escape' && !p.filesOpen && !p.settingsOpen && !p.helpOpen) useRunHistory.getState().setOpen(false);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open]);
}

/** Another tab shown or the graph renamed, or a run of this editor starting or ending: the history is asked for again. */
export function useRunsFollowEditor(graphName: string) {
  // The editor's runs (which tab runs what).
  const editorRuns = useRunSession((r) =>
    Object.values(r.runs)
      .map((run) => `${run.phase}:${run.serverRunId ?? ''}`)
      .join(','),
  );

  useEffect(() => {
    useRunHistory.getState().graphChanged();
  }, [graphName]);

  // Asked about at once (opening the panel asks already).
  const seenRuns = useRef(editorRuns);
  useEffect(() => {
    if (seenRuns.current === editorRuns) return;
    seenRuns.current = editorRuns;
    if (useRunHistory.getState().open) void useRunHistory.getState().refresh();
  }, [editorRuns]);
}
