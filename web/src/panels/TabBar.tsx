import { t as translate, useT } from '../i18n';
import { useDocument, type GraphDoc } from '../store/document';
import { closeTab, newTab } from '../store/editor';
import type { RunState } from '../store/runReducer';
import { useRunSession } from '../store/runSession';

interface TabView {
  id: number;
  name: string;
  unsaved: boolean;
  running: boolean;
}

/** What each tab shows: its graph's name, whether it has unsaved changes, whether it is running. */
export function tabViews(
  order: readonly number[],
  active: number,
  shown: Pick<GraphDoc, 'meta' | 'unsaved'>,
  parked: Readonly<Record<number, GraphDoc>>,
  runs: Readonly<Record<number, RunState>>,
): TabView[] {
  return order.flatMap((id) => {
    const d = id === active ? shown : parked[id];
    if (!d) return [];
    const running = (runs[id]?.phase ?? 'idle') !== 'idle';
    return [{ id, name: d.meta.name || translate('graph.untitled'), unsaved: d.unsaved, running }];
  });
}

/** The open graphs, one tab each, above the canvas. */
export function TabBar() {
  const t = useT();
  const order = useDocument((s) => s.tabOrder);
  const active = useDocument((s) => s.activeTab);
  const parked = useDocument((s) => s.parked);
  const meta = useDocument((s) => s.meta);
  const unsaved = useDocument((s) => s.unsaved);
  const runs = useRunSession((s) => s.runs);
  const tabs = tabViews(order, active, { meta, unsaved }, parked, runs);

  return (
    <nav className="tab-bar" role="tablist" aria-label={t('tabs.label')} data-testid="tab-bar">
      {tabs.map((tab) => (
        <div
          key={tab.id}
          role="tab"
          aria-selected={tab.id === active}
          className={`tab${tab.id === active ? ' active' : ''}`}
          data-testid={`tab-${tab.id}`}
          data-active={tab.id === active}
          title={tab.name}
          onMouseDown={(e) => {
            if (e.button === 0) useDocument.getState().switchTab(tab.id);
          }}
          onAuxClick={(e) => {
            if (e.button === 1) closeTab(tab.id);
          }}
        >
          {tab.running && <span className="tab-running" aria-hidden="true" />}
          <span className="tab-name">{tab.name}</span>
          {tab.unsaved && <span className="unsaved">●</span>}
          <button
            type="button"
            className="icon tab-close"
            data-testid={`tab-close-${tab.id}`}
            aria-label={t('tabs.close', { name: tab.name })}
            onMouseDown={(e) => e.stopPropagation()}
            onClick={() => closeTab(tab.id)}
          >
            ×
          </button>
        </div>
      ))}
      <button type="button" className="icon tab-new" data-testid="tab-new" title={t('tabs.new')} aria-label={t('tabs.new')} onClick={() => void newTab()}>
        +
      </button>
    </nav>
  );
}
