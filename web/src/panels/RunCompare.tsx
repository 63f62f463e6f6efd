// The Runs panel's compare view, for two or more ticked runs: a legend (a
// colour a run, in the order ticked), their curves overlaid (loss per epoch,
// validation loss and accuracy, learning rate), the settings that differ
// (GET /api/runs/compare: only those) and the final metrics side by side.
import { useState } from 'react';
import { CompareChart } from '../charts/CompareChart';
import { COMPARE_KINDS, type CompareKind } from '../charts/overlay';
import { t, useLocale, type MessageKey } from '../i18n';
import { useRunHistory } from '../store/runHistory';
import { DiffTable, MetricsTable } from './CompareTables';
import { RunSwatch } from './RunSwatch';
import { statusText } from './runText';
import { useComparedRuns, type ComparedRun } from './useComparedRuns';

const TITLE: Record<CompareKind, MessageKey> = {
  epochLoss: 'runs.chart.epochLoss',
  valLoss: 'runs.chart.valLoss',
  valAccuracy: 'runs.chart.valAccuracy',
  lr: 'runs.chart.lr',
};

/** A colour a run, in the order ticked, with its graph and any status but completed. */
function CompareLegend({ runs }: { runs: ComparedRun[] }) {
  return (
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
  );
}

export function RunCompare() {
  useLocale(); // re-render in the chosen language
  const compareError = useRunHistory((s) => s.compareError);
  const comparing = useRunHistory((s) => s.comparing);
  const { runs, lines, overlays, current, diffs, metrics } = useComparedRuns();
  const [allMetrics, setAllMetrics] = useState(false);

  return (
    <section className="runs-compare" data-testid="runs-compare" aria-label={t('runs.compare', { count: runs.length })}>
      <h3>
        {t('runs.compare', { count: runs.length })}
        {comparing && <span className="muted runs-comparing"> · {t('runs.comparing')}</span>}
      </h3>
      <CompareLegend runs={runs} />
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
          <DiffTable runs={runs} diffs={diffs} />
          <MetricsTable runs={runs} metrics={metrics} allMetrics={allMetrics} onAllMetrics={setAllMetrics} />
        </>
      )}
    </section>
  );
}
