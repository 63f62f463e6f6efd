// One colour a compared run, the same in its legend, its chart lines and the
// tables' column heads. Ten colours that read on both themes (the editor's own
// chart and type colours); from the eleventh run on they come again, dashed.

const DARK = ['#5aa9ff', '#f0b44c', '#3fcf8e', '#f26d6d', '#b98cff', '#4cc6e8', '#f47fbf', '#e8d44d', '#f5965a', '#b6bcc5'];
const LIGHT = ['#1f6fd6', '#b87a00', '#17955c', '#cf3333', '#7a45d6', '#1387a8', '#c23d8a', '#8a7a00', '#c7611c', '#5e6773'];

export interface RunColor {
  stroke: string;
  /** A dash pattern for the line (uPlot's and SVG's), or null for a solid one. */
  dash: number[] | null;
}

/** The colour of the `index`-th compared run (0 first) on a theme. */
export function runColor(index: number, theme: 'dark' | 'light'): RunColor {
  const palette = theme === 'light' ? LIGHT : DARK;
  const i = ((index % palette.length) + palette.length) % palette.length;
  const round = Math.floor(Math.max(0, index) / palette.length);
  return { stroke: palette[i]!, dash: round === 0 ? null : round === 1 ? [6, 4] : [2, 3] };
}
