// The runs the compare view shows: in the order ticked, each with its colour,
// the compare answer when it is for these runs, and their series overlaid.
import { useMemo } from 'react';
import type { CompareLine } from '../charts/compareOptions';
import { COMPARE_KINDS, overlay, SERIES_OF, type CompareKind } from '../charts/overlay';
import { runColor, type RunColor } from '../charts/runColors';
import { diffRows, metricRows } from '../store/compareRows';
import { shortRunId } from '../store/historyRows';
import { usePreferences } from '../store/preferences';
import { useRunHistory } from '../store/runHistory';

export interface ComparedRun {
  id: string;
  short: string;
  graph: string;
  status: string;
  color: RunColor;
}

export function useComparedRuns() {
  const theme = usePreferences((p) => p.theme);
  const selected = useRunHistory((s) => s.selected);
  const entries = useRunHistory((s) => s.entries);
  const series = useRunHistory((s) => s.series);
  const compare = useRunHistory((s) => s.compare);
  const compareKey = useRunHistory((s) => s.compareKey);

  const current = compare && compareKey === selected.join(',') ? compare : null;
  const runs: ComparedRun[] = selected.map((id, i) => {
    const entry = current?.runs[i] ?? entries.find((e) => e.run_id === id);
    return { id, short: shortRunId(id), graph: entry?.graph ?? '', status: entry?.status ?? '', color: runColor(i, theme) };
  });
  const lines: CompareLine[] = runs.map((r) => ({ label: r.graph ? `${r.short} · ${r.graph}` : r.short, color: r.color }));
  const overlays = useMemo(
    () => Object.fromEntries(COMPARE_KINDS.map((k) => [k, overlay(selected.map((id) => series[id]?.series[SERIES_OF[k]]))])),
    [selected, series],
  ) as Record<CompareKind, ReturnType<typeof overlay>>;
  const diffs = useMemo(() => (current ? diffRows(current) : []), [current]);
  const metrics = useMemo(() => (current ? metricRows(current) : []), [current]);
  return { runs, lines, overlays, current, diffs, metrics };
}
