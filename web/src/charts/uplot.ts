// uPlot, loaded the first time a chart has something to draw (it is not part
// of the first screen), and the theme's colours as the charts read them.
import type uPlotType from 'uplot';

export type UPlotCtor = typeof uPlotType;
let loading: Promise<UPlotCtor> | null = null;

/** uPlot and its CSS, fetched once. */
export function loadUPlot(): Promise<UPlotCtor> {
  loading ??= Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([m]) => m.default);
  return loading;
}

/** A CSS variable of the page's theme, or `fallback` when it has none. */
export const cssVar = (name: string, fallback: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
