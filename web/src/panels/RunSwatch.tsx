// A compared run's colour as a short line (dashed where its chart line is),
// beside its checkbox, in the legend and over its table columns.
import type { RunColor } from '../charts/runColors';

export function RunSwatch({ color }: { color: RunColor }) {
  return (
    <svg className="run-swatch" width="18" height="8" viewBox="0 0 18 8" aria-hidden="true" data-color={color.stroke}>
      <line
        x1="1"
        y1="4"
        x2="17"
        y2="4"
        stroke={color.stroke}
        strokeWidth="3"
        strokeLinecap="round"
        strokeDasharray={color.dash ? color.dash.map((d) => d / 2).join(' ') : undefined}
      />
    </svg>
  );
}
