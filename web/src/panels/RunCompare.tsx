// The Runs panel's compare view, for two or more ticked runs: a legend (a
// colour a run, in the order ticked), their curves overlaid (loss per epoch,
// validation loss and accuracy, learning rate), the settings that differ
// (GET /api/runs/compare: only those) and the final metrics side by side.
import { useMemo, useState, type ReactNode } from 'react';
import { CompareChart } from '../charts/CompareChart';
import type { CompareLine } from '../charts/compareOptions';
import { COMPARE_KINDS, overlay, SERIES_OF, type CompareKind } from '../charts/overlay';
import { runColor } from '../charts/runColors';
import { t, useLocale, type MessageKey } from '../i18n';
import { en } from '../i18n/en';
import { diffRows, metricRows, type DiffWhat, type MetricWhat } from '../store/compareRows';
import { shortRunId } from '../store/historyRows';
import { usePreferences } from '../store/preferences';
import { useRunHistory } from '../store/runHistory';
import { RunSwatch } from './RunSwatch';
import { statusText } from './runText';

const TITLE: Record<CompareKind, MessageKey> = {
  epochLoss: 'runs.chart.epochLoss',
  valLoss: 'runs.chart.valLoss',
  valAccuracy: 'runs.chart.valAccuracy',
  lr: 'runs.chart.lr',
};

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

export function RunCompare() {
  useLocale(); // re-render in the chosen language
  const theme = usePreferences((p) => p.theme);
  const selected = useRunHistory((s) => s.selected);
  const entries = useRunHistory((s) => s.entries);
  const series = useRunHistory((s) => s.series);
  const compare = useRunHistory((s) => s.compare);
  const compareKey = useRunHistory((s) => s.compareKey);
  const compareError = useRunHistory((s) => s.compareError);
  const comparing = useRunHistory((s) => s.comparing);
  const [allMetrics, setAllMetrics] = useState(false);

  const current = compare && compareKey === selected.join(',') ? compare : null;
  const runs = selected.map((id, i) => {
    const entry = current?.runs[i] ?? entries.find((e) => e.run_id === id);
    return { id, short: shortRunId(id), graph: entry?.graph ?? '', status: entry?.status ?? '', color: runColor(i, theme) };
  });
  const lines: CompareLine[] = runs.map((r) => ({ label: r.graph ? `${r.short} · ${r.graph}` : r.short, color: r.color }));
  const overlays = useMemo(
    () => Object.fromEntries(COMPARE_KINDS.map((k) => [k, overlay(selected.map((id) => series[id]?.series[SERIES_OF[k]]))])),
    [selected, series],
  ) as Record<CompareKind, ReturnType<typeof overlay>>;
  const diffs = useMemo(() => (current ? diffRows(current) : []), [current]);
  const metrics = useMemo(() => (current ? metricRows(current) : []), [current]);
  const shownMetrics = allMetrics ? metrics : metrics.filter((m) => m.primary);
  const folded = metrics.length - metrics.filter((m) => m.primary).length;

  const runHeads = runs.map((r) => (
    <th key={r.id} className="runs-col-run" title={`${r.id}${r.graph ? ` · ${r.graph}` : ''}`}>
      <RunSwatch color={r.color} /> <span className="mono">{r.short}</span>
    </th>
  ));

  return (
    <section className="runs-compare" data-testid="runs-compare" aria-label={t('runs.compare', { count: runs.length })}>
      <h3>
        {t('runs.compare', { count: runs.length })}
        {comparing && <span className="muted runs-comparing"> · {t('runs.comparing')}</span>}
      </h3>
      <ul className="runs-legend" data-testid="runs-legend" aria-label={t('runs.legend')}>
        {runs.map((r) => (
          <li key={r.id} data-testid={`runs-legend-${r.id}`} data-color={r.color.stroke} title={r.id}>
            <RunSwatch color={r.color} />
            <span className="mono">{r.short}</span>
            {r.graph && <span className="runs-legend-graph">{r.graph}</span>}
            {r.status && r.status !== 'completed' && <span className={`run-status ${r.status}`}>{statusText(r.status)}</span>}
          </li>
        ))}
      </ul>
      {compareError && (
        <p className="server-notice error" role="alert" data-testid="runs-compare-error">
          {t('runs.compareFailed', { error: compareError })}
        </p>
      )}

      <div className="runs-charts">
        {COMPARE_KINDS.map((k) => (
          <CompareChart key={k} kind={k} title={t(TITLE[k])} lines={lines} overlay={overlays[k]} empty={t('runs.chartEmpty')} />
        ))}
      </div>

      {current && (
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
                  {runHeads}
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

          <h3>{t('runs.metrics')}</h3>
          <table className="runs-table runs-side" data-testid="runs-metrics">
            <thead>
              <tr>
                <th>{t('runs.metric')}</th>
                {runHeads}
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
            <button type="button" className="small runs-more-metrics" data-testid="runs-more-metrics" onClick={() => setAllMetrics(!allMetrics)}>
              {allMetrics ? t('runs.fewerMetrics') : t('runs.moreMetrics', { count: folded })}
            </button>
          )}
        </>
      )}
    </section>
  );
}
