// uPlot's options for a compare chart: one line a run in its colour, by
// epoch, with a y range that fits every run. Only uPlot's types are imported.
import type uPlot from 'uplot';
import { t } from '../i18n';
import { fitLogRange, fitRange, isDecade, tickLabel } from './chartData';
import type { CompareKind } from './overlay';
import type { RunColor } from './runColors';

export interface CompareLine {
  label: string;
  color: RunColor;
}

const percent = (splits: number[]) => {
  const span = splits.length > 1 ? Math.abs(splits[splits.length - 1]! - splits[0]!) : 1;
  return splits.map((v) => (v === null || v === undefined ? '' : `${(v * 100).toFixed(span < 0.05 ? 1 : 0)}%`));
};

/**
 * A log axis's labels: its decades, and where it spans two decades or less
 * (a loss from 0.4 to 0.015) also 2 and 5 times them, so that it has a few.
 */
export function logTickLabels(splits: readonly (number | null | undefined)[]): string[] {
  const shown = splits.filter((v): v is number => typeof v === 'number' && v > 0);
  const decades = shown.length ? Math.log10(Math.max(...shown) / Math.min(...shown)) : 0;
  return splits.map((v) => {
    if (typeof v !== 'number' || !(v > 0)) return '';
    if (isDecade(v)) return tickLabel(v);
    const lead = Math.round(v / 10 ** Math.floor(Math.log10(v) + 1e-9));
    return decades <= 2 && (lead === 2 || lead === 5) ? tickLabel(v) : '';
  });
}

/** The charts that may draw on a log scale (as the run's loss chart does: see wantsLogScale). */
export const LOG_KINDS: ReadonlySet<CompareKind> = new Set(['epochLoss', 'valLoss']);

/**
 * The options of one compare chart, `width` × `height` pixels; `axis`, `grid`: the theme's colours;
 * `log`: a log y scale (a loss falling twentyfold or more, whose late differences would hug the axis).
 */
export function compareOptions(
  kind: CompareKind,
  width: number,
  height: number,
  colors: { axis: string; grid: string },
  lines: readonly CompareLine[],
  log = false,
): uPlot.Options {
  const axisStyle = { stroke: colors.axis, grid: { stroke: colors.grid, width: 1 }, ticks: { stroke: colors.grid } };
  const x: uPlot.Axis = { ...axisStyle, label: t('charts.epoch'), labelSize: 14, size: 32, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] };
  const y: uPlot.Axis = {
    ...axisStyle,
    size: 54,
    // uPlot keeps only the decades of a log axis from the labels; logTickLabels chooses instead.
    ...(log ? { filter: (_u: uPlot, splits: number[]) => splits } : {}),
    values: (_u, splits) =>
      kind === 'valAccuracy'
        ? percent(splits)
        : log
          ? logTickLabels(splits)
          : splits.map((v) => (v === null || v === undefined ? '' : tickLabel(v))),
  };
  const limits = kind === 'valAccuracy' ? ([0, 1] as const) : undefined;
  return {
    width,
    height,
    legend: { show: false }, // one legend for the four charts, above them
    cursor: { drag: { x: false, y: false } },
    scales: {
      x: { time: false },
      y: log ? { distr: 3, log: 10, range: (_u, min, max) => fitLogRange(min, max) } : { range: (_u, min, max) => fitRange(min, max, limits) },
    },
    axes: [x, y],
    series: [
      { label: t('charts.epoch') },
      ...lines.map(
        (l): uPlot.Series => ({
          label: l.label,
          stroke: l.color.stroke,
          width: 2,
          spanGaps: true,
          ...(l.color.dash ? { dash: l.color.dash } : {}),
          points: { size: 5 },
        }),
      ),
    ],
  };
}
