// The inspector's views: the toolbar's "Record outputs" toggle, the tooltip
// over a wire, and the side panel's section with a port's statistics and values.
import { useEffect } from 'react';
import { createPortal } from 'react-dom';
import { isTensorOutput } from '../api/outputs';
import { useT } from '../i18n';
import { useShownRun } from '../store/runSession';
import {
  edgeTooltip,
  formatShape,
  numel,
  shortDtype,
  statsOf,
  summaryEntries,
  tableView,
  tensorRequest,
  tooltipRequest,
} from './inspect';
import { isLoaded, outputKey, useInspector, type PortRef } from '../store/inspector';
import './inspector.css';

/** The recorded run whose outputs can be shown: the editor's last run, when it recorded and completed. */
export function useRecordedRun(): string | null {
  const recorded = useInspector((s) => s.recordedRun);
  const ready = useShownRun(
    (r) => recorded !== null && r.runId === recorded && r.phase === 'idle' && r.outcome === 'completed',
  );
  return ready ? recorded : null;
}

/** The recorded run's list of outputs, fetched the first time something asks for it. */
function useOutputList(runId: string | null) {
  const list = useInspector((s) => (runId ? s.lists[runId] : undefined));
  useEffect(() => {
    if (runId) useInspector.getState().loadList(runId);
  }, [runId]);
  return list;
}

/** The toolbar's toggle: whether runs record their outputs for the inspector. */
export function RecordOutputsToggle() {
  const t = useT();
  const record = useInspector((s) => s.record);
  return (
    <label className="record-outputs" title={t('inspector.recordHint')}>
      <input
        type="checkbox"
        data-testid="record-outputs"
        checked={record}
        onChange={(e) => useInspector.getState().setRecord(e.target.checked)}
      />
      <span>{t('inspector.record')}</span>
    </label>
  );
}

/** The tooltip over a hovered wire: its source port's type, shape and dtype (or summary) in the recorded run. */
export function EdgeTooltip({ source, port, x, y }: { source: string; port: string; x: number; y: number }) {
  const t = useT();
  const runId = useRecordedRun();
  const list = useOutputList(runId);
  const row = isLoaded(list) ? list.find((r) => r.node_id === source && r.port === port) : undefined;
  const req = row ? tooltipRequest(row) : null;
  const slice = req?.slice;
  const maxElements = req?.maxElements;
  const data = useInspector((s) => (runId && slice !== undefined ? s.outputs[outputKey(runId, { nodeId: source, port }, slice)] : undefined));
  useEffect(() => {
    if (runId && slice !== undefined) useInspector.getState().loadOutput(runId, { nodeId: source, port }, { slice, maxElements });
  }, [runId, source, port, slice, maxElements]);

  if (!runId || typeof document === 'undefined') return null;
  let title = port;
  let detail: string;
  if (list === undefined || list === 'loading') detail = t('inspector.loading');
  else if (!isLoaded(list)) detail = t('inspector.failed', { error: list.error });
  else {
    const tip = edgeTooltip(row, isLoaded(data) ? data : undefined);
    title = tip.title || port;
    detail = tip.detail;
  }
  return createPortal(
    <div className="edge-tooltip" data-testid="edge-tooltip" role="tooltip" style={{ left: x + 14, top: y + 14 }}>
      <strong>{title}</strong>
      {detail && <span>{detail}</span>}
    </div>,
    document.body,
  );
}

/** The side panel's Inspector: the node's recorded outputs, and the chosen one's statistics and values. */
export function InspectorSection({ nodeId }: { nodeId: string }) {
  const t = useT();
  const runId = useRecordedRun();
  const list = useOutputList(runId);
  const selected = useInspector((s) => s.selected);

  if (!runId) {
    return (
      <section className="inspector" data-testid="inspector" data-state="off">
        <h3>{t('inspector.title')}</h3>
        <p className="muted">{t('inspector.hint')}</p>
      </section>
    );
  }
  const rows = isLoaded(list) ? list.filter((r) => r.node_id === nodeId) : [];
  const chosen = selected?.nodeId === nodeId ? rows.find((r) => r.port === selected.port) : undefined;
  return (
    <section className="inspector" data-testid="inspector" data-state="ready">
      <h3>{t('inspector.title')}</h3>
      {(list === undefined || list === 'loading') && <p className="muted">{t('inspector.loading')}</p>}
      {list !== undefined && list !== 'loading' && !isLoaded(list) && (
        <p className="inspector-error">{t('inspector.failed', { error: list.error })}</p>
      )}
      {isLoaded(list) && rows.length === 0 && <p className="muted">{t('inspector.noOutputs')}</p>}
      {rows.length > 0 && (
        <div className="inspector-ports" role="group">
          {rows.map((r) => (
            <button
              key={r.port}
              type="button"
              className={`inspector-port${chosen?.port === r.port ? ' active' : ''}`}
              data-testid={`inspect-${nodeId}-${r.port}`}
              aria-pressed={chosen?.port === r.port}
              onClick={() => useInspector.getState().inspect({ nodeId, port: r.port })}
            >
              → {r.port} <span className="muted">{r.full_shape ? formatShape(r.full_shape) : r.type}</span>
            </button>
          ))}
        </div>
      )}
      {rows.length > 0 && !chosen && <p className="muted">{t('inspector.pick')}</p>}
      {chosen &&
        (chosen.type === 'tensor' && chosen.full_shape ? (
          <TensorView runId={runId} port={{ nodeId, port: chosen.port }} shape={chosen.full_shape} />
        ) : (
          <SummaryView runId={runId} port={{ nodeId, port: chosen.port }} />
        ))}
    </section>
  );
}

function TensorView({ runId, port, shape }: { runId: string; port: PortRef; shape: number[] }) {
  const t = useT();
  const leading = useInspector((s) => s.leading);
  const req = tensorRequest(shape, leading);
  const { slice, maxElements } = req;
  const { nodeId, port: name } = port;
  const data = useInspector((s) => s.outputs[outputKey(runId, port, slice)]);
  useEffect(() => {
    useInspector.getState().loadOutput(runId, { nodeId, port: name }, { slice, maxElements });
  }, [runId, nodeId, name, slice, maxElements]);

  if (data === undefined || data === 'loading') return <p className="muted">{t('inspector.loading')}</p>;
  if (!isLoaded(data)) return <p className="inspector-error">{t('inspector.failed', { error: data.error })}</p>;
  if (!isTensorOutput(data)) return <SummaryView runId={runId} port={port} />;

  const table = tableView(data.values, data.sliced_shape, req.whole ? leading : [], shape);
  const stats = statsOf(data);
  const leadingDims = shape.slice(0, Math.max(shape.length - 2, 0));
  return (
    <div className="inspector-tensor">
      <p className="inspector-meta">
        {t('inspector.shape', { shape: formatShape(data.full_shape) })} · {t('inspector.dtype', { dtype: shortDtype(data.dtype) })}
      </p>
      {stats.length > 0 && (
        <>
          <p className="muted inspector-stats-label">
            {req.whole
              ? t('inspector.statsAll', { count: numel(shape) })
              : t('inspector.statsShown', { count: numel(data.sliced_shape) })}
          </p>
          <dl className="inspector-stats" data-testid="inspector-stats">
            {stats.map((s) => (
              <div key={s.key} data-stat={s.key}>
                <dt>{t(`inspector.${s.key}`)}</dt>
                <dd>{s.value}</dd>
              </div>
            ))}
          </dl>
        </>
      )}
      {leadingDims.map((size, d) => (
        <label key={d} className="inspector-index">
          <span>{t('inspector.index', { dim: d, max: size - 1 })}</span>
          <input
            type="number"
            min={0}
            max={size - 1}
            step={1}
            data-testid={`inspector-index-${d}`}
            value={leading[d] ?? 0}
            onChange={(e) => {
              const v = Math.round(Number(e.target.value));
              if (Number.isFinite(v)) useInspector.getState().setLeading(d, Math.min(Math.max(v, 0), size - 1));
            }}
          />
        </label>
      ))}
      <p className="muted inspector-shown">
        {shape.length <= 1
          ? t('inspector.shown1d', { rows: Math.max(table.rows.length - 1, 0), total: table.totalRows })
          : t('inspector.shown', {
              rows: Math.max(table.rows.length - 1, 0),
              totalRows: table.totalRows,
              cols: Math.max(table.columns.length - 1, 0),
              totalCols: table.totalCols,
            })}
      </p>
      <div className="inspector-table-wrap">
        <table className="inspector-table" data-testid="inspector-table">
          <thead>
            <tr>
              <th />
              {table.columns.map((c, i) => (
                <th key={i} scope="col">
                  {c === '' ? t('inspector.value') : c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {table.rows.map((r) => (
              <tr key={r.index}>
                <th scope="row">{r.index}</th>
                {r.cells.map((c, i) => (
                  <td key={i}>{c}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

function SummaryView({ runId, port }: { runId: string; port: PortRef }) {
  const t = useT();
  const data = useInspector((s) => s.outputs[outputKey(runId, port, '')]);
  const { nodeId, port: name } = port;
  useEffect(() => {
    useInspector.getState().loadOutput(runId, { nodeId, port: name }, { slice: '' });
  }, [runId, nodeId, name]);

  if (data === undefined || data === 'loading') return <p className="muted">{t('inspector.loading')}</p>;
  if (!isLoaded(data)) return <p className="inspector-error">{t('inspector.failed', { error: data.error })}</p>;
  return (
    <div className="inspector-summary" data-testid="inspector-summary">
      <p className="inspector-meta">
        {t('inspector.summary')} · {data.type.toUpperCase()}
      </p>
      <dl>
        {summaryEntries(data).map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
    </div>
  );
}
