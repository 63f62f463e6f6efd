import { useEffect, useMemo, useRef, useState } from 'react';
import type uPlotType from 'uplot';
import { useLocale, useT } from '../i18n';
import { useEditor } from '../store/editorStore';
import { lossColumns } from './lossData';

type UPlotCtor = typeof uPlotType;
const LEGEND = 30; // px under the plot for uPlot's legend
let loading: Promise<UPlotCtor> | null = null;

/** uPlot and its CSS, fetched the first time a loss arrives (not part of the first screen). */
function loadUPlot(): Promise<UPlotCtor> {
  loading ??= Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([m]) => m.default);
  return loading;
}

const cssVar = (name: string, fallback: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;

/** The live loss chart: training loss per update, per-epoch loss and validation loss. */
export function LossChart() {
  const t = useT();
  const locale = useLocale(); // the plot's labels are set when it is made: remake it on a switch
  const nodeId = useEditor((s) => {
    const sel = s.selectedId;
    return sel && s.run.loss[sel] ? sel : s.run.lossNode;
  });
  const series = useEditor((s) => (nodeId ? s.run.loss[nodeId] : undefined));
  const theme = useEditor((s) => s.theme);
  const columns = useMemo(() => lossColumns(series), [series]);
  const [UPlot, setUPlot] = useState<UPlotCtor | null>(null);
  const [drawn, setDrawn] = useState(0);
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlotType | null>(null);

  useEffect(() => {
    if (columns.points > 0 && !UPlot) void loadUPlot().then((ctor) => setUPlot(() => ctor));
  }, [columns.points, UPlot]);

  // (Re)create the plot when uPlot arrives or the theme changes.
  useEffect(() => {
    const el = host.current;
    if (!UPlot || !el) return;
    const axis = cssVar('--text-muted', '#999');
    const grid = cssVar('--border', '#333');
    const opts: uPlotType.Options = {
      width: Math.max(el.clientWidth, 200),
      height: Math.max(el.clientHeight - LEGEND, 80),
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false } },
      axes: [
        { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label: t('chart.step'), labelSize: 14, size: 34 },
        { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, size: 48 },
      ],
      series: [
        { label: t('chart.step') },
        { label: t('chart.trainLoss'), stroke: cssVar('--chart-train', '#5aa9ff'), width: 1.5, points: { show: false } },
        { label: t('chart.epochLoss'), stroke: cssVar('--chart-epoch', '#f59e0b'), width: 2, spanGaps: true, points: { show: true, size: 6 } },
        { label: t('chart.valLoss'), stroke: cssVar('--chart-val', '#34d399'), width: 2, spanGaps: true, dash: [6, 4], points: { show: true, size: 6 } },
      ],
    };
    const u = new UPlot(opts, [[], [], [], []], el);
    plot.current = u;
    const ro = new ResizeObserver(() => {
      u.setSize({ width: Math.max(el.clientWidth, 200), height: Math.max(el.clientHeight - LEGEND, 80) });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [UPlot, theme, locale]);

  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    u.setData([columns.x, columns.batch, columns.epoch, columns.val] as uPlotType.AlignedData);
    setDrawn(columns.points);
  }, [columns, UPlot, theme, locale]);

  return (
    <section className="chart-panel" aria-label={t('chart.label')}>
      <header>
        <h3>{t('chart.label')}</h3>
        {nodeId && <span className="muted">{nodeId}</span>}
      </header>
      <div className="loss-chart" data-testid="loss-chart" data-points={drawn} data-node={nodeId ?? undefined}>
        <div className="uplot-host" ref={host} />
        {columns.points === 0 && <p className="muted chart-empty">{t('chart.empty')}</p>}
      </div>
    </section>
  );
}
