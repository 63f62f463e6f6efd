import { useEffect, useMemo, useRef, useState } from 'react';
import type uPlotType from 'uplot';
import { t, useLocale, type MessageKey } from '../i18n';
import { useDocument } from '../store/document';
import { usePreferences } from '../store/preferences';
import { useShownRun } from '../store/runSession';
import {
  CHART_KINDS,
  chartColumns,
  decimate,
  latest,
  seriesWithValues,
  tickLabel,
  wantsLogScale,
  type ChartColumns,
  type ChartKind,
} from './chartData';
import { plotOptions } from './plotOptions';
import { RunFacts } from './RunFacts';
import { cssVar, loadUPlot, type UPlotCtor } from './uplot';

const LEGEND = 30; // px under the plot for uPlot's legend

const TEST_ID: Record<ChartKind, string> = {
  loss: 'loss-chart',
  accuracy: 'chart-val-accuracy',
  lr: 'chart-lr',
  gradNorm: 'chart-grad-norm',
};
const TAB: Record<ChartKind, MessageKey> = { loss: 'charts.loss', accuracy: 'charts.accuracy', lr: 'charts.lr', gradNorm: 'charts.gradNorm' };
const EMPTY: Record<ChartKind, MessageKey> = {
  loss: 'chart.empty',
  accuracy: 'charts.emptyAccuracy',
  lr: 'charts.emptyLr',
  gradNorm: 'charts.emptyGradNorm',
};

const tabValue = (kind: ChartKind, v: number | null) =>
  v === null ? '' : kind === 'accuracy' ? `${(v * 100).toFixed(1)}%` : tickLabel(Number(v.toPrecision(3)));

/** One uPlot chart, drawn while it is shown; reports how many values it drew (after thinning). */
function Plot({ kind, columns, onDrawn }: { kind: ChartKind; columns: ChartColumns; onDrawn: (n: number) => void }) {
  const theme = usePreferences((s) => s.theme);
  const locale = useLocale(); // the plot's labels are set when it is made: remake it on a switch
  const [UPlot, setUPlot] = useState<UPlotCtor | null>(null);
  const [log, setLog] = useState(false);
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlotType | null>(null);

  useEffect(() => {
    if (columns.points > 0 && !UPlot) void loadUPlot().then((ctor) => setUPlot(() => ctor));
  }, [columns.points, UPlot]);

  // (Re)create the plot when uPlot arrives or the theme changes.
  useEffect(() => {
    const el = host.current;
    if (!UPlot || !el) return;
    const size = () => ({ width: Math.max(el.clientWidth, 200), height: Math.max(el.clientHeight - LEGEND, 80) });
    const { width, height } = size();
    const colors = {
      axis: cssVar('--text-muted', '#999'),
      grid: cssVar('--border', '#333'),
      train: cssVar('--chart-train', '#5aa9ff'),
      epoch: cssVar('--chart-epoch', '#f59e0b'),
      val: cssVar('--chart-val', '#34d399'),
    };
    const u = new UPlot(plotOptions(kind, width, height, colors, log), [[], ...plotOptionsSeriesEmpty(kind)], el);
    plot.current = u;
    onDrawn(0); // nothing drawn on it yet (the effect below draws)
    const ro = new ResizeObserver(() => u.setSize(size()));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [UPlot, theme, kind, log, locale, onDrawn]);

  // Long series are thinned to the plot's width in pixels before drawing (a
  // lowest and a highest value per pixel column: the same line, a fraction of
  // the cost; see bench/chart_update.sh).
  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    const thin = decimate(columns.data, Math.max(200, Math.round(host.current?.clientWidth ?? 600)));
    // A loss falling by a factor of 20 or more reads better on a log scale: the plot is made again with one.
    const wantLog = wantsLogScale(kind, thin.data);
    if (wantLog !== log) return setLog(wantLog);
    u.setData(thin.data as uPlotType.AlignedData);
    // A series with no values yet (a short run's per-update losses) keeps out of the legend.
    const shown = seriesWithValues(thin.data);
    const rows = u.root.querySelectorAll<HTMLElement>('.u-legend .u-series');
    const first = rows.length - shown.length; // uPlot lists x in its legend only when the legend is live
    rows.forEach((row, i) => {
      if (i >= first) row.style.display = shown[i - first] ? '' : 'none';
    });
    if (host.current) host.current.dataset.series = shown.map((s) => (s ? '1' : '0')).join(''); // for the browser tests
    onDrawn(thin.values);
  }, [columns, UPlot, theme, onDrawn, kind, log, locale]); // a remade plot (theme, language) starts empty

  return <div className="uplot-host" ref={host} />;
}

const plotOptionsSeriesEmpty = (kind: ChartKind): number[][] => (kind === 'loss' ? [[], [], []] : [[]]);

/**
 * The run's charts for one TrainingLoop (the selected one when it trains,
 * else the latest to report): loss, validation accuracy, learning rate and
 * gradient norm as tabs (each tab shows its latest value), and the run's facts beside them.
 */
export function ChartsPanel() {
  useLocale(); // re-render in the chosen language
  const sel = useDocument((s) => s.selectedId);
  const nodeId = useShownRun((r) => (sel && (r.series[sel] || r.facts[sel]) ? sel : r.seriesNode));
  const series = useShownRun((r) => (nodeId ? r.series[nodeId] : undefined));
  const facts = useShownRun((r) => (nodeId ? r.facts[nodeId] : undefined));
  const [active, setActive] = useState<ChartKind>('loss');
  const [drawn, setDrawn] = useState<Record<ChartKind, number>>({ loss: 0, accuracy: 0, lr: 0, gradNorm: 0 });
  const columns = useMemo(
    () => Object.fromEntries(CHART_KINDS.map((k) => [k, chartColumns(k, series)])) as Record<ChartKind, ChartColumns>,
    [series],
  );
  const onDrawn = useMemo(
    () => Object.fromEntries(CHART_KINDS.map((k) => [k, (n: number) => setDrawn((d) => (d[k] === n ? d : { ...d, [k]: n }))])) as Record<ChartKind, (n: number) => void>,
    [],
  );

  return (
    <section className="chart-panel" aria-label={t('charts.label')}>
      <header>
        <div className="chart-tabs" role="tablist" aria-label={t('charts.tabs')}>
          {CHART_KINDS.map((k) => (
            <button
              key={k}
              type="button"
              role="tab"
              aria-selected={k === active}
              className={`chart-tab${k === active ? ' active' : ''}`}
              data-testid={`chart-tab-${k}`}
              onClick={() => setActive(k)}
            >
              {t(TAB[k])}
              <span className="chart-tab-value">{tabValue(k, latest(k, series))}</span>
            </button>
          ))}
        </div>
        {nodeId && <span className="muted">{nodeId}</span>}
      </header>
      <div className="chart-body">
        {CHART_KINDS.map((k) => (
          <div
            key={k}
            className="loss-chart run-chart"
            hidden={k !== active}
            role="tabpanel"
            data-testid={TEST_ID[k]}
            data-points={columns[k].points}
            data-drawn={drawn[k]}
            data-node={nodeId ?? undefined}
          >
            {k === active && <Plot kind={k} columns={columns[k]} onDrawn={onDrawn[k]} />}
            {columns[k].points === 0 && <p className="muted chart-empty">{t(EMPTY[k])}</p>}
          </div>
        ))}
        <RunFacts facts={facts} />
      </div>
    </section>
  );
}
