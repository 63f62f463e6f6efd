import { ReactFlowProvider } from '@xyflow/react';
import { lazy, Suspense, useEffect } from 'react';
import { Canvas } from './canvas/Canvas';
import { BottomPanel } from './panels/BottomPanel';
import { FilesDialog } from './panels/FilesDialog';
import { HelpSheet } from './panels/HelpSheet';
import { QuickAdd } from './panels/QuickAdd';
import { SettingsDialog } from './panels/SettingsDialog';
import { Palette } from './panels/Palette';
import { ServerPanel } from './panels/ServerPanel';
import { SidePanel } from './panels/SidePanel';
import { TabBar } from './panels/TabBar';
import { Toasts } from './panels/Toasts';
import { Toolbar } from './panels/Toolbar';
import { useDocument } from './store/document';
import { init } from './store/editor';
import { usePanels } from './store/panels';
import { useRunHistory } from './store/runHistory';

/** The Runs panel and its compare view, fetched the first time it opens. */
const RunsPanel = lazy(() => import('./panels/RunsPanel').then((m) => ({ default: m.RunsPanel })));

export function App() {
  const filesOpen = usePanels((s) => s.filesOpen);
  const bottomOpen = usePanels((s) => s.bottomOpen);
  const name = useDocument((s) => s.meta.name);
  const runsOpen = useRunHistory((s) => s.open);

  useEffect(() => {
    void init();
  }, []);

  useEffect(() => {
    document.title = name ? `${name} — Codefy` : 'Codefy';
  }, [name]);

  return (
    <ReactFlowProvider>
      <div className={`app ${bottomOpen ? '' : 'bottom-closed'}`}>
        <Toolbar />
        <Palette />
        <main className="canvas-area">
          <TabBar />
          <Canvas />
          <SidePanel />
          <ServerPanel />
          {runsOpen && (
            <Suspense fallback={null}>
              <RunsPanel />
            </Suspense>
          )}
        </main>
        <BottomPanel />
        {filesOpen && <FilesDialog />}
        <QuickAdd />
        <HelpSheet />
        <SettingsDialog />
        <Toasts />
      </div>
    </ReactFlowProvider>
  );
}
