import { t as translate, useT } from '../i18n';
import { useEditor, type GraphDoc } from '../store/editorStore';

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
  shown: Pick<GraphDoc, 'meta' | 'unsaved' | 'run'>,
  parked: Readonly<Record<number, GraphDoc>>,
): TabView[] {
  return order.flatMap((id) => {
    const d = id === active ? shown : parked[id];
    if (!d) return [];
    return [{ id, name: d.meta.name || translate('graph.untitled'), unsaved: d.unsaved, running: d.run.phase !== 'idle' }];
  });
}

/** The open graphs, one tab each, above the canvas. */
export function TabBar() {
  const t = useT();
  const order = useEditor((s) => s.tabOrder);
  const active = useEditor((s) => s.activeTab);
  const parked = useEditor((s) => s.parked);
  const meta = useEditor((s) => s.meta);
  const unsaved = useEditor((s) => s.unsaved);
  const run = useEditor((s) => s.run);
  const a = useEditor.getState();
  const tabs = tabViews(order, active, { meta, unsaved, run }, parked);

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
            if (e.button === 0) a.switchTab(tab.id);
          }}
          onAuxClick={(e) => {
            if (e.button === 1) a.closeTab(tab.id);
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
            onClick={() => a.closeTab(tab.id)}
          >
            ×
          </button>
        </div>
      ))}
      <button type="button" className="icon tab-new" data-testid="tab-new" title={t('tabs.new')} aria-label={t('tabs.new')} onClick={() => void a.newTab()}>
        +
      </button>
    </nav>
  );
}
