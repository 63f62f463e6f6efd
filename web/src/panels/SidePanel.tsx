import { Fragment, useMemo } from 'react';
import type { ParamDefinition } from '../api/types';
import { effectiveValue } from '../graph/params';
import { typeColorVar } from '../graph/typeRules';
import { useT } from '../i18n';
import { AdvancedFold } from '../nodes/AdvancedFold';
import { LayerEditorLauncher } from '../nodes/LayerEditor';
import { ParamField } from '../nodes/ParamField';
import { nodeShape } from '../graph/placement';
import { useCatalogue, useLocalizedDef, useLocalizedDefs } from '../store/catalogue';
import { useDocument } from '../store/document';
import { setParam } from '../store/editor';
import { useRunSession, useShownRun } from '../store/runSession';
import { MemorySection } from './MemorySection';
import { MessageText } from './MessageText';
import { InspectorSection } from '../inspector/Inspector';

/** The selected node's params (all of them, long texts included), problems and ports, over the canvas's right side. */
export function SidePanel() {
  const t = useT();
  const selectedId = useDocument((s) => s.selectedId);
  const node = useDocument((s) => (s.selectedId ? s.nodes.find((n) => n.id === s.selectedId) : undefined));
  const def = useLocalizedDef(node?.data.nodeType);
  const edges = useDocument((s) => s.edges);
  const defs = useLocalizedDefs();
  const issues = useShownRun((r) => (selectedId ? r.issues[selectedId] : undefined));
  const status = useShownRun((r) => (selectedId ? (r.statuses[selectedId] ?? 'idle') : 'idle'));
  const devices = useCatalogue((s) => s.devices);
  const models = useCatalogue((s) => s.models);
  const shape = useMemo(() => (node ? nodeShape({ defs, edges }, node) : null), [node, defs, edges]);

  if (!node || !shape) return null;

  const field = (p: ParamDefinition) => (
    <Fragment key={`${node.id}:${p.name}`}>
      {/* SequentialModel's layer spec: the layer editor, with the raw text below as before. */}
      {node.data.nodeType === 'SequentialModel' && p.name === 'layers' && (
        <LayerEditorLauncher
          nodeId={node.id}
          value={effectiveValue(p, node.data.params)}
          onChange={(v) => setParam(node.id, p.name, v)}
        />
      )}
      <ParamField
        def={p}
        value={effectiveValue(p, node.data.params)}
        onChange={(v) => setParam(node.id, p.name, v)}
        testId={`panel-param-${node.id}-${p.name}`}
        issue={issues?.find((i) => i.param === p.name)?.message}
        devices={devices}
        models={models}
        onInvalid={(e) => useRunSession.getState().setDraftError(node.id, p.name, e)}
      />
    </Fragment>
  );
  const basic = shape.params.filter((p) => !p.advanced);
  const advanced = shape.params.filter((p) => p.advanced);

  return (
    <aside className="side-panel" data-testid="side-panel" aria-label={t('side.label')}>
      <button
        type="button"
        className="icon side-panel-close"
        onClick={() => useDocument.getState().select(null)}
        aria-label={t('side.close')}
        title={t('side.close')}
      >
        ×
      </button>
      <h2>
        {node.data.nodeType} <span className="muted id">{node.id}</span>
      </h2>
      <p className={`status-line status-${status}`}>{t(`status.${status}`)}</p>
      {def?.description ? <p className="muted">{def.description}</p> : null}
      {!shape.known && <p className="muted">{t('node.unknownType')}</p>}

      {issues && issues.length > 0 && (
        <section className="side-issues" role="alert">
          <h3>{t('side.problems')}</h3>
          {issues.map((i, k) => (
            <div key={k} className="side-issue">
              {i.param && <strong>{i.param}: </strong>}
              {i.port && <strong>{i.port}: </strong>}
              <MessageText text={i.message} />
            </div>
          ))}
        </section>
      )}

      {shape.params.length > 0 && (
        <section className="side-params">
          <h3>{t('side.params')}</h3>
          {basic.map(field)}
          <AdvancedFold count={advanced.length} testId={`panel-advanced-${node.id}`}>
            {advanced.map(field)}
          </AdvancedFold>
        </section>
      )}

      {node.data.nodeType === 'TrainingLoop' && <MemorySection nodeId={node.id} />}

      <section className="side-ports">
        <h3>{t('side.ports')}</h3>
        <ul>
          {shape.inputs.map((p) => (
            <li key={`in:${p.name}`}>
              <span className="swatch" style={{ background: typeColorVar(p.data_type) }} />← {p.name}{' '}
              <span className="muted">
                {p.data_type}
                {p.optional ? `, ${t('node.optional')}` : ''}
              </span>
            </li>
          ))}
          {shape.outputs.map((p) => (
            <li key={`out:${p.name}`}>
              <span className="swatch" style={{ background: typeColorVar(p.data_type) }} />→ {p.name}{' '}
              <span className="muted">{p.data_type}</span>
            </li>
          ))}
        </ul>
      </section>
      <InspectorSection nodeId={node.id} />
    </aside>
  );
}
