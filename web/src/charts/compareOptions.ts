// uPlot's options for a compare chart: one line a run in its colour, by
// epoch, with a y range that fits every run. Only uPlot's types are imported.
import type uPlot from 'uplot';
import { t } from '../i18n';
import { fitRange, tickLabel } from './chartData';
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

/** The options of one compare chart, `width` × `height` pixels; `axis`, `grid`: the theme's colours. */
export function compareOptions(
  kind: CompareKind,
  width: number,
  height: number,
  colors: { axis: string; grid: string },
  lines: readonly CompareLine[],
): uPlot.Options {
  const axisStyle = { stroke: colors.axis, grid: { stroke: colors.grid, width: 1 }, ticks: { stroke: colors.grid } };
  const x: uPlot.Axis = { ...axisStyle, label: t('charts.epoch'), labelSize: 14, size: 32, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] };
  const y: uPlot.Axis = {
    ...axisStyle,
    size: 54,
    values: (_u, splits) => (kind === 'valAccuracy' ? percent(splits) : splits.map((v) => (v === null || v === undefined ? '' : tickLabel(v)))),
  };
  const limits = kind === 'valAccuracy' ? ([0, 1] as const) : undefined;
  return {
    width,
    height,
    legend: { show: false }, // one legend for the four charts, above them
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: false }, y: { range: (_u, min, max) => fitRange(min, max, limits) } },
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
