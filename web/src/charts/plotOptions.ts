// uPlot's options for each run chart: series, colours, axes and a y range
// that fits the data (see fitRange). Only uPlot's types are imported here,
// so the first screen does not load uPlot.
import type uPlot from 'uplot';
import { t } from '../i18n';
import { fewerThanTwo, fitLogRange, fitRange, isDecade, tickLabel, type ChartKind } from './chartData';

export interface PlotColors {
  axis: string;
  grid: string;
  train: string;
  epoch: string;
  val: string;
}

const percent = (splits: number[]): string[] => {
  const span = splits.length > 1 ? Math.abs(splits[splits.length - 1]! - splits[0]!) : 1;
  return splits.map((v) => (v === null || v === undefined ? '' : `${(v * 100).toFixed(span < 0.05 ? 1 : 0)}%`));
};

/** The options of one chart, `width` × `height` pixels of plot; `log`: a log y scale (see wantsLogScale). */
export function plotOptions(kind: ChartKind, width: number, height: number, c: PlotColors, log = false): uPlot.Options {
  const axisStyle = { stroke: c.axis, grid: { stroke: c.grid, width: 1 }, ticks: { stroke: c.grid } };
  const xLabel = kind === 'accuracy' ? t('charts.epoch') : t('chart.step');
  const x: uPlot.Axis = { ...axisStyle, label: xLabel, labelSize: 14, size: 34 };
  if (kind === 'accuracy') x.incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
  const y: uPlot.Axis = {
    ...axisStyle,
    size: log ? 62 : 52,
    // A log axis leaves some splits unlabelled (null).
    values: (_u, splits) =>
      kind === 'accuracy' ? percent(splits) : splits.map((v) => (v === null || v === undefined || (log && !isDecade(v)) ? '' : tickLabel(v))),
  };
  const limits = kind === 'accuracy' ? ([0, 1] as const) : undefined;
  const line = (label: string, stroke: string, extra: Partial<uPlot.Series> = {}): uPlot.Series => ({
    label,
    stroke,
    width: 1.5,
    spanGaps: true,
    points: { show: false },
    ...extra,
  });
  const series: uPlot.Series[] =
    kind === 'loss'
      ? [
          { label: t('chart.step') },
          // Per update: thin, but a solid line across the epoch rows between updates.
          // Its points show while it has fewer than two values (a short run's single update is no line).
          line(t('chart.trainLoss'), c.train, { width: 1.25, points: { show: (u, si, i0, i1) => fewerThanTwo(u.data[si], i0, i1), size: 6 } }),
          line(t('chart.epochLoss'), c.epoch, { width: 2, points: { show: true, size: 6 } }),
          line(t('chart.valLoss'), c.val, { width: 2, dash: [6, 4], points: { show: true, size: 6 } }),
        ]
      : kind === 'accuracy'
        ? [{ label: xLabel }, line(t('charts.accuracySeries'), c.val, { width: 2, points: { show: true, size: 6 } })]
        : kind === 'lr'
          ? [{ label: xLabel }, line(t('charts.lrSeries'), c.epoch, { width: 1.5 })]
          : [{ label: xLabel }, line(t('charts.gradNormSeries'), c.train, { width: 1.25 })];
  return {
    width,
    height,
    legend: { show: true, live: false },
    cursor: { drag: { x: false, y: false } },
    scales: {
      x: { time: false },
      y: log
        ? { distr: 3, log: 10, range: (_u, min, max) => fitLogRange(min, max) }
        : { range: (_u, min, max) => fitRange(min, max, limits) },
    },
    axes: [x, y],
    series,
  };
}
