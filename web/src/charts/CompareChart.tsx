// One of the compare view's charts: the compared runs' series overlaid, a
// line a run in its colour (the view's legend names them).
import { useEffect, useRef, useState } from 'react';
import type uPlotType from 'uplot';
import { useLocale } from '../i18n';
import { usePreferences } from '../store/preferences';
import { wantsLogScale } from './chartData';
import { compareOptions, LOG_KINDS, type CompareLine } from './compareOptions';
import type { CompareKind, Overlay } from './overlay';
import { cssVar, loadUPlot, type UPlotCtor } from './uplot';

export function CompareChart({
  kind,
  title,
  lines,
  overlay,
  empty,
}: {
  kind: CompareKind;
  title: string;
  lines: readonly CompareLine[];
  overlay: Overlay;
  /** Said when no run has a value to draw. */
  empty: string;
}) {
  const theme = usePreferences((s) => s.theme);
  const locale = useLocale(); // the axis label is set when the plot is made
  const [UPlot, setUPlot] = useState<UPlotCtor | null>(null);
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlotType | null>(null);
  // The plot is made again when the runs (their number, names or colours) change.
  const linesKey = lines.map((l) => `${l.label}\u0000${l.color.stroke}\u0000${String(l.color.dash)}`).join('\u0001');
  const log = LOG_KINDS.has(kind) && wantsLogScale('loss', overlay.data);

  useEffect(() => {
    if (overlay.points > 0 && !UPlot) void loadUPlot().then((ctor) => setUPlot(() => ctor));
  }, [overlay.points, UPlot]);

  useEffect(() => {
    const el = host.current;
    if (!UPlot || !el) return;
    const size = () => ({ width: Math.max(el.clientWidth, 160), height: Math.max(el.clientHeight, 100) });
    const { width, height } = size();
    const colors = { axis: cssVar('--text-muted', '#999'), grid: cssVar('--border', '#333') };
    const u = new UPlot(compareOptions(kind, width, height, colors, lines, log), [[], ...lines.map(() => [])], el);
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize(size()));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // `lines` is read through linesKey: a new array with the same runs keeps the plot.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [UPlot, theme, kind, locale, linesKey, log]);

  useEffect(() => {
    const u = plot.current;
    if (!u || u.series.length !== overlay.data.length) return;
    u.setData(overlay.data as uPlotType.AlignedData);
  }, [overlay, UPlot, theme, locale, linesKey, log]);

  return (
    <figure
      className="runs-chart"
      data-testid={`runs-chart-${kind}`}
      data-points={overlay.points}
      data-series={overlay.drawn.filter(Boolean).length}
      data-log={log ? 'true' : 'false'}
    >
      <figcaption>{title}</figcaption>
      <div className="runs-chart-body">
        <div className="runs-chart-plot" ref={host} />
        {overlay.points === 0 && <p className="muted chart-empty">{empty}</p>}
      </div>
    </figure>
  );
}
