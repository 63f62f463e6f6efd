// The compare view's tables, a column a run: the settings that differ, and
// the final metrics (the primary ones, the rest on demand).
import type { ReactNode } from 'react';
import { t, type MessageKey } from '../i18n';
import { en } from '../i18n/en';
import type { DiffRow, DiffWhat, MetricRow, MetricWhat } from '../store/compareRows';
import { RunSwatch } from './RunSwatch';
import type { ComparedRun } from './useComparedRuns';

const hasKey = (key: string): key is MessageKey => key in en;

function diffLabel(what: DiffWhat): ReactNode {
  switch (what.kind) {
    case 'field':
      return t(`runs.field.${what.field}`);
    case 'param':
      return (
        <>
          <span className="mono">
            {what.node}.{what.param}
          </span>
          {what.nodeType && <span className="muted"> {what.nodeType}</span>}
        </>
      );
    case 'nodeType':
      return (
        <>
          <span className="mono">{what.node}</span> <span className="muted">{t('runs.nodeType')}</span>
        </>
      );
    case 'other':
      return what.label;
  }
}

function metricLabel(what: MetricWhat): ReactNode {
  if (what.kind === 'duration') return t('runs.metric.duration');
  if (what.kind === 'peak') return t('runs.metric.peak', { device: what.device });
  const key = `runs.metric.${what.name}`;
  return (
    <>
      {hasKey(key) ? t(key) : <span className="mono">{what.name}</span>}
      {what.node && <span className="muted mono"> {what.node}</span>}
    </>
  );
}

/** The runs' column heads: a swatch and the short id. */
function RunHeads({ runs }: { runs: ComparedRun[] }) {
  return runs.map((r) => (
    <th key={r.id} className="runs-col-run" title={`${r.id}${r.graph ? ` · ${r.graph}` : ''}`}>
      <RunSwatch color={r.color} /> <span className="mono">{r.short}</span>
    </th>
  ));
}

export function DiffTable({ runs, diffs }: { runs: ComparedRun[]; diffs: DiffRow[] }) {
  return (
    <>
      <h3>{t('runs.diff')}</h3>
      {diffs.length === 0 ? (
        <p className="muted" data-testid="runs-diff-none">
          {t('runs.diffNone')}
        </p>
      ) : (
        <table className="runs-table runs-side" data-testid="runs-diff">
          <thead>
            <tr>
              <th>{t('runs.setting')}</th>
              <RunHeads runs={runs} />
            </tr>
          </thead>
          <tbody>
            {diffs.map((d) => (
              <tr key={d.key} data-testid={`runs-diff-${d.key}`}>
                <th scope="row">{diffLabel(d.what)}</th>
                {d.cells.map((c, i) => (
                  <td key={runs[i]?.id ?? i} className={c.absent ? 'muted' : 'mono'} title={c.full.length > c.text.length ? c.full : undefined}>
                    {c.absent ? t('runs.absent') : c.text}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

interface MetricsTableProps {
  runs: ComparedRun[];
  metrics: MetricRow[];
  /** Whether every metric is shown, or only the primary ones (kept by the compare view while its runs change). */
  allMetrics: boolean;
  onAllMetrics(all: boolean): void;
}

export function MetricsTable({ runs, metrics, allMetrics, onAllMetrics }: MetricsTableProps) {
  const shownMetrics = allMetrics ? metrics : metrics.filter((m) => m.primary);
  const folded = metrics.length - metrics.filter((m) => m.primary).length;
  return (
    <>
      <h3>{t('runs.metrics')}</h3>
      <table className="runs-table runs-side" data-testid="runs-metrics">
        <thead>
          <tr>
            <th>{t('runs.metric')}</th>
            <RunHeads runs={runs} />
          </tr>
        </thead>
        <tbody>
          {shownMetrics.map((m) => (
            <tr key={m.key} data-testid={`runs-metric-${m.key}`}>
              <th scope="row">{metricLabel(m.what)}</th>
              {m.cells.map((c, i) => (
                <td key={runs[i]?.id ?? i} className={`num${c.best ? ' best' : ''}`} title={c.best ? t('runs.best') : undefined}>
                  {c.text}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {folded > 0 && (
        <button type="button" className="small runs-more-metrics" data-testid="runs-more-metrics" onClick={() => onAllMetrics(!allMetrics)}>
          {allMetrics ? t('runs.fewerMetrics') : t('runs.moreMetrics', { count: folded })}
        </button>
      )}
    </>
  );
}
