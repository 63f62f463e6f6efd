import { Handle, Position, type NodeProps } from '@xyflow/react';
import { memo, useMemo } from 'react';
import { useShallow } from 'zustand/react/shallow';
import type { ParamDefinition, PortDefinition } from '../api/types';
import type { CodefyEdge, CodefyNode } from '../graph/graphJson';
import { showsProgress } from '../graph/geometry';
import { firstLine } from '../graph/issues';
import { effectiveValue } from '../graph/params';
import { shapeOf, TRIGGER_HANDLE, type EdgeEnds } from '../graph/ports';
import { TRIGGER, typeColorVar } from '../graph/typeRules';
import { useT } from '../i18n';
import { useCatalogue, useLocalizedDef } from '../store/catalogue';
import { useDocument } from '../store/document';
import { setParam } from '../store/editor';
import { useRunSession, useShownRun } from '../store/runSession';
import { AdvancedFold } from './AdvancedFold';
import { ParamField } from './ParamField';
import { TrainingProgressBar } from './TrainingProgressBar';

const NO_EDGES: EdgeEnds[] = [];
const NO_FLOW_EDGES: CodefyEdge[] = [];

/** The edges touching `id`, only for nodes whose ports come from their edges (unknown types). */
function useOwnEdges(id: string, needed: boolean): EdgeEnds[] {
  // Select the store's own edge objects (stable between renders, so the
  // shallow comparison settles); build the plain ends from them afterwards.
  const own = useDocument(
    useShallow((s) => (needed ? s.edges.filter((e) => e.source === id || e.target === id) : NO_FLOW_EDGES)),
  );
  return useMemo(
    () =>
      own.length === 0
        ? NO_EDGES
        : own.map((e) => ({
            source: e.source,
            target: e.target,
            sourceHandle: e.sourceHandle,
            targetHandle: e.targetHandle,
            kind: e.data?.kind ?? 'data',
          })),
    [own],
  );
}

function PortLabel({ port, side }: { port: PortDefinition; side: 'in' | 'out' }) {
  const t = useT();
  return (
    <span
      className={`port-label ${side}${port.optional ? ' optional' : ''}`}
      title={`${port.name}: ${port.data_type}${port.optional ? ` (${t('node.optional')})` : ''}${port.description ? ` — ${port.description}` : ''}`}
    >
      {port.name}
      {port.optional && side === 'in' ? <span className="optional-mark">?</span> : null}
    </span>
  );
}

/** Any node, drawn from its definition: title, typed ports, params in place, status, training progress. */
export const GenericNode = memo(function GenericNode({ id, data, selected }: NodeProps<CodefyNode>) {
  const t = useT();
  const def = useLocalizedDef(data.nodeType);
  const ownEdges = useOwnEdges(id, !def);
  const status = useShownRun((r) => r.statuses[id] ?? 'idle');
  const progress = useShownRun((r) => r.progress[id]);
  const issues = useShownRun((r) => r.issues[id]);
  const devices = useCatalogue((s) => s.devices);
  const models = useCatalogue((s) => s.models);
  const select = useDocument((s) => s.select);

  const shape = useMemo(
    () => shapeOf(id, data.nodeType, def, data.params, ownEdges),
    [id, data.nodeType, def, data.params, ownEdges],
  );
  const rows = Math.max(shape.inputs.length, shape.outputs.length);
  const basic = shape.params.filter((p) => !p.advanced);
  const advanced = shape.params.filter((p) => p.advanced);
  const paramIssue = (name: string) => issues?.find((i) => i.param === name)?.message;
  const nodeIssue = issues?.find((i) => !i.param);
  const portIssues = new Set(issues?.filter((i) => i.port).map((i) => i.port));

  const field = (p: ParamDefinition) => (
    <ParamField
      key={p.name}
      def={p}
      value={effectiveValue(p, data.params)}
      onChange={(v) => setParam(id, p.name, v)}
      testId={`param-${id}-${p.name}`}
      issue={paramIssue(p.name)}
      devices={devices}
      models={models}
      compact
      onOpenLong={() => select(id)}
      onInvalid={(e) => useRunSession.getState().setDraftError(id, p.name, e)}
    />
  );

  return (
    <div
      className={`cnode status-${status}${selected ? ' selected' : ''}${issues?.length ? ' has-issue' : ''}${shape.known ? '' : ' unknown'}`}
      data-testid={`node-${id}`}
      data-status={status}
      data-type={data.nodeType}
    >
      <header className="cnode-header">
        {shape.acceptsTrigger && (
          <Handle
            type="target"
            position={Position.Left}
            id={TRIGGER_HANDLE}
            className="handle handle-trigger-in"
            title={t('node.triggerIn')}
          />
        )}
        <span className="cnode-title" title={def?.description ?? (shape.known ? '' : t('node.unknownType'))}>
          {data.nodeType}
        </span>
        <span className="cnode-id">{id}</span>
        <span className={`status-dot ${status}`} title={t(`status.${status}`)} aria-label={t(`status.${status}`)} />
      </header>

      {rows > 0 && (
        <div className="cnode-ports">
          {Array.from({ length: rows }, (_, i) => {
            const input = shape.inputs[i];
            const output = shape.outputs[i];
            return (
              <div className="port-row" key={i}>
                {input ? (
                  <>
                    <Handle
                      type="target"
                      position={Position.Left}
                      id={input.name}
                      className={`handle${input.optional ? ' optional' : ''}${portIssues.has(input.name) ? ' port-issue' : ''}`}
                      style={{ ['--handle-color' as string]: typeColorVar(input.data_type) }}
                      data-type={input.data_type}
                    />
                    <PortLabel port={input} side="in" />
                  </>
                ) : (
                  <span />
                )}
                {output ? (
                  <>
                    <PortLabel port={output} side="out" />
                    <Handle
                      type="source"
                      position={Position.Right}
                      id={output.name}
                      className={`handle${output.data_type === TRIGGER ? ' handle-trigger-out' : ''}`}
                      style={{ ['--handle-color' as string]: typeColorVar(output.data_type) }}
                      data-type={output.data_type}
                    />
                  </>
                ) : (
                  <span />
                )}
              </div>
            );
          })}
        </div>
      )}

      {(progress || showsProgress(shape)) && (
        <TrainingProgressBar progress={progress ?? null} running={status === 'running'} />
      )}

      {shape.params.length > 0 && (
        <div className="cnode-params">
          {basic.map(field)}
          <AdvancedFold count={advanced.length} testId={`advanced-${id}`} className="nodrag">
            {advanced.map(field)}
          </AdvancedFold>
        </div>
      )}

      {nodeIssue && (
        <div className="cnode-issue" role="alert" title={nodeIssue.message} onClick={() => select(id)}>
          {firstLine(nodeIssue.message)}
        </div>
      )}
    </div>
  );
});
