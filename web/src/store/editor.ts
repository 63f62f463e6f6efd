// The editor's actions that span its stores: starting up, opening graphs
// (files, examples, saved graphs, drafts) into tabs, saving, closing a tab,
// editing a param, and the default device. It also keeps the page's address
// and this browser's drafts in step with the document, and resets every
// store for tests.
import * as api from '../api';
import { getHistoryRecord } from '../api/runs';
import type { MemoryPlan, PlanOption } from '../api/types';
import { anyOverlap, estimateSize } from '../graph/geometry';
import { emptyGraph, GraphFileError, graphToFlow } from '../graph/graphJson';
import { optionEdits } from '../graph/memoryPlan';
import { nodeShape, sizeOf } from '../graph/placement';
import { inWords, t } from '../i18n';
import { initialCatalogue, useCatalogue } from './catalogue';
import { initialDocument, isBlankDoc, useDocument } from './document';
import { draftKey, keepDrafts, readDrafts, writeDraft } from './drafts';
import { initialMemoryPlan, useMemoryPlan } from './memoryPlan';
import { describeError, initialMessages, useMessages, type MessageLevel } from './messages';
import { initialPanels, usePanels } from './panels';
import { shortRunId } from './historyRows';
import { initialPreferences, usePreferences } from './preferences';
import { initialRunHistory, useRunHistory } from './runHistory';
import { initialRunSession, useRunSession } from './runSession';
import { showInAddress, sourceFromSearch, type GraphSource } from './url';

export type { GraphSource };

const say = (level: MessageLevel, text: string) => useMessages.getState().say(level, text);
/** A failure that needs seeing: a toast, and the same line in the messages panel. */
const complain = (text: string) => {
  useMessages.getState().toast('error', text);
  say('error', text);
};

// The address names the shown graph; the shown graph's unsaved edits are kept in this browser.
useDocument.subscribe((s, prev) => {
  if (s.source !== prev.source) showInAddress(s.source);
});
const drafts = keepDrafts();

/** Loads the catalogue, opens the graph the address (or a draft) names, and connects; once per page. */
export function init(): Promise<void> {
  const started = useCatalogue.getState().startup;
  if (started) return started;
  const startup = startUp();
  useCatalogue.setState({ startup });
  return startup;
}

async function startUp(): Promise<void> {
  if (await useCatalogue.getState().load()) {
    const { devices, serverDevice } = useCatalogue.getState();
    useDocument.getState().setDevice(usePreferences.getState().settleDefaultDevice(devices, serverDevice));
  }
  void useCatalogue.getState().refreshLists();
  const wanted: GraphSource = typeof window === 'undefined' ? { kind: 'new' } : sourceFromSearch(window.location.search);
  const draft = readDrafts()[draftKey(wanted)];
  // A graph the person opened while the catalogue loaded (an import) stays: nothing is opened over it.
  const doc = useDocument.getState();
  const openedMeanwhile = doc.source.kind !== 'new' || doc.nodes.length > 0;
  if (openedMeanwhile) {
    // (the address's graph, if any, can still be opened from Open…)
  } else if (draft && (await openGraph(draft.graph, draft.source))) {
    useDocument.getState().markUnsaved();
    say('info', t('draft.restored', { time: new Date(draft.at).toLocaleTimeString() }));
  } else if (wanted.kind === 'example') await openExample(wanted.path);
  else if (wanted.kind === 'saved') await openSaved(wanted.name);
  else await newGraph();
  if (useCatalogue.getState().status === 'ready') useRunSession.getState().connect().catch(() => undefined);
}

/** Opens a graph in a new tab (or in the shown tab when it holds nothing worth keeping); false when it is not a graph. */
export async function openGraph(json: unknown, source: GraphSource, where: 'auto' | 'newTab' = 'auto'): Promise<boolean> {
  let flow;
  try {
    flow = graphToFlow(json);
  } catch (e) {
    complain(e instanceof GraphFileError ? t('file.cannotOpen', { error: inWords(e.problem) }) : describeError(e));
    return false;
  }
  let nodes = flow.nodes;
  const sized = { defs: useCatalogue.getState().defs, edges: flow.edges };
  const boxes = nodes.map((n) => ({ id: n.id, ...n.position, ...estimateSize(nodeShape(sized, n)) }));
  const overlapping = flow.unplaced.length === 0 && anyOverlap(boxes);
  const laidOut = flow.unplaced.length > 0 || overlapping;
  if (laidOut) {
    const { layoutPositions } = await import('../graph/layout');
    const placed = layoutPositions(
      nodes.map((n) => ({ id: n.id, size: sizeOf(sized, n, false) })),
      flow.edges,
    );
    nodes = nodes.map((n) => ({ ...n, position: placed.get(n.id) ?? n.position }));
  }
  // A graph opens in a tab of its own, unless the shown tab holds nothing worth keeping.
  const doc = useDocument.getState();
  const runs = useRunSession.getState();
  const newTab = where === 'newTab' || !isBlankDoc(doc) || runs.runOf(doc.activeTab).phase !== 'idle';
  if (!newTab) {
    runs.resetRun(doc.activeTab);
    useMemoryPlan.getState().forgetTab(doc.activeTab);
  }
  doc.show(
    {
      meta: flow.meta,
      source,
      nodes,
      edges: flow.edges,
      measureCheck: nodes.length === 0 ? null : laidOut ? 'laidOut' : 'check',
    },
    newTab,
  );
  if (source.kind !== 'new') {
    say('info', t('file.opened', { name: flow.meta.name || t('graph.untitled'), nodes: nodes.length }));
    if (overlapping) say('info', t('file.laidOut'));
  }
  return true;
}

/** Shows the tab that already holds the graph from `source`; false when none does. */
function showOpen(source: GraphSource): boolean {
  const doc = useDocument.getState();
  const tab = doc.tabOf(source);
  if (tab === null) return false;
  doc.switchTab(tab);
  return true;
}

export async function openExample(path: string): Promise<void> {
  if (showOpen({ kind: 'example', path })) return;
  try {
    await openGraph(await api.loadExample(path), { kind: 'example', path });
  } catch (e) {
    complain(t('file.exampleFailed', { path, error: describeError(e) }));
    if (useDocument.getState().nodes.length === 0) await newGraph();
  }
}

export async function openSaved(name: string): Promise<void> {
  if (showOpen({ kind: 'saved', name })) return;
  try {
    await openGraph(await api.loadGraph(name), { kind: 'saved', name });
  } catch (e) {
    complain(t('file.graphFailed', { name, error: describeError(e) }));
    if (useDocument.getState().nodes.length === 0) await newGraph();
  }
}

export async function importFile(file: File): Promise<void> {
  let json: unknown;
  try {
    json = JSON.parse(await file.text());
  } catch (e) {
    complain(t('file.cannotOpen', { error: t('file.notJson', { name: file.name, error: describeError(e) }) }));
    return;
  }
  await openGraph(json, { kind: 'file', filename: file.name });
}

export async function newGraph(): Promise<void> {
  await openGraph(emptyGraph(t('graph.untitled')), { kind: 'new' });
}

/** A new tab with a fresh graph. */
export async function newTab(): Promise<void> {
  await openGraph(emptyGraph(t('graph.untitled')), { kind: 'new' }, 'newTab');
}

/** The file name the server saves a graph name under (graph_routes.cpp's sanitize_name). */
export function fileStem(name: string): string {
  let out = '';
  for (const c of name) out += /^[A-Za-z0-9_-]$/.test(c) || c.codePointAt(0)! >= 0x80 ? c : '_';
  return out;
}

export async function saveGraph(): Promise<void> {
  const graph = useDocument.getState().exportGraph();
  if (!graph.name) {
    useMessages.getState().toast('warning', t('save.needName'));
    return;
  }
  try {
    let res;
    const source = useDocument.getState().source;
    // Saving the graph that was opened from the server under this name again replaces it without asking.
    const same = source.kind === 'saved' && source.name === fileStem(graph.name);
    try {
      res = await api.saveGraph(graph, same);
    } catch (e) {
      if (!(e instanceof api.ApiError) || e.status !== 409) throw e;
      const ok = typeof window !== 'undefined' && window.confirm(t('save.replace', { name: graph.name }));
      if (!ok) return;
      res = await api.saveGraph(graph, true);
    }
    useDocument.getState().markSaved({ kind: 'saved', name: res.file });
    useMessages.getState().toast('info', t('save.done', { name: graph.name }));
    say('info', t('save.doneAt', { name: graph.name, path: res.path }));
    void useCatalogue.getState().refreshLists();
  } catch (e) {
    complain(t('save.failed', { error: describeError(e) }));
  }
}

/** The name a run's snapshot opens under: "<graph> @ <short id>" (a snapshot of a snapshot is not named twice). */
export function snapshotName(graph: string, runId: string): string {
  return `${snapshotBase(graph) || t('graph.untitled')} @ ${shortRunId(runId)}`;
}

/** The graph a snapshot's name is of: "Toy MLP @ 3fa2b1" → "Toy MLP". */
const snapshotBase = (name: string) => name.replace(/ @ \S+$/, '').trim();

/**
 * Opens a run's graph snapshot (GET /api/runs/{id}) in a tab named
 * "<graph> @ <short id>"; with `run`, in a new tab, and starts it there as
 * Run does. A snapshot already open shows its tab. The snapshot of an
 * example's run runs in that example's folder (its data files). False when
 * there is no snapshot to open; the Runs panel and a toast say why.
 */
export async function openRunSnapshot(runId: string, run = false): Promise<boolean> {
  const failed = (error: string) => {
    const text = t(run ? 'runs.rerunFailed' : 'runs.openFailed', { id: runId, error });
    useRunHistory.getState().say({ level: 'error', text });
    complain(text);
    return false;
  };
  if (!run && showOpen({ kind: 'run', runId })) return true;
  let record;
  try {
    record = await getHistoryRecord(runId);
  } catch (e) {
    return failed(describeError(e));
  }
  const snapshot = record.graph_snapshot;
  if (!snapshot || typeof snapshot !== 'object' || !Array.isArray(snapshot.nodes)) return failed(t('runs.noSnapshot'));
  const graphName = typeof snapshot.name === 'string' && snapshot.name ? snapshot.name : (record.graph ?? '');
  const example = useCatalogue.getState().examples.find((e) => e.name === snapshotBase(graphName))?.path;
  const source: GraphSource = { kind: 'run', runId, ...(example ? { example } : {}) };
  if (!(await openGraph({ ...snapshot, name: snapshotName(graphName, runId) }, source, 'newTab'))) return false;
  if (run) await useRunSession.getState().runGraph();
  return true;
}

/** Closes a tab (asking first when it has unsaved changes); false when it stays open. */
export function closeTab(id: number): boolean {
  const doc = useDocument.getState();
  const closing = doc.docOf(id);
  if (!closing) return false;
  const runs = useRunSession.getState();
  if (runs.runOf(id).phase !== 'idle') {
    useMessages.getState().toast('warning', t('tabs.running'));
    return false;
  }
  const name = closing.meta.name || t('graph.untitled');
  if (closing.unsaved && typeof window !== 'undefined' && !window.confirm(t('tabs.closeUnsaved', { name }))) return false;
  if (closing.unsaved) writeDraft(draftKey(closing.source), null);
  const last = doc.tabOrder.every((x) => x === id);
  runs.forgetTab(id);
  useMemoryPlan.getState().forgetTab(id);
  doc.removeTab(id);
  // The last tab closes into a fresh graph.
  if (last) void newGraph();
  return true;
}

/** Sets a param's value; the run's mark on that param (a problem the server found) goes with the old value. */
export function setParam(nodeId: string, name: string, value: unknown): void {
  const doc = useDocument.getState();
  useRunSession.getState().clearParamIssue(doc.activeTab, nodeId, name);
  doc.setParam(nodeId, name, value);
}

/**
 * Makes the graph train as a memory plan's option says, as one undo step: the batch source's
 * param (DataLoader.batch_size) gets the micro-batch, the TrainingLoop its accumulation steps
 * and precision. False when the option cannot be applied (no param sets the micro-batch).
 */
export function applyPlanOption(plan: MemoryPlan, option: PlanOption): boolean {
  const edits = optionEdits(plan, option);
  const doc = useDocument.getState();
  if (!edits || !edits.every((e) => doc.nodes.some((n) => n.id === e.nodeId))) {
    useMessages.getState().toast('warning', t('plan.applyNoSource'));
    return false;
  }
  const runs = useRunSession.getState();
  for (const e of edits) runs.clearParamIssue(doc.activeTab, e.nodeId, e.param);
  doc.setParams(edits);
  const text = t('plan.applied', {
    node: plan.node_id,
    precision: option.precision,
    micro: option.micro_batch,
    steps: option.accumulate_steps,
  });
  say('info', text);
  useMessages.getState().toast('info', text);
  return true;
}

/** The settings' default device (remembered in this browser); the shown graph follows it too. */
export function setDefaultDevice(device: string): void {
  usePreferences.getState().setDefaultDevice(device);
  useDocument.getState().setDevice(device);
}

/** For tests: every store of the editor back to its first state (the socket closed, nothing waiting). */
export function resetEditorForTests(): void {
  useRunSession.getState().disconnect();
  useRunSession.setState(initialRunSession());
  useDocument.setState(initialDocument());
  useCatalogue.setState(initialCatalogue());
  useMessages.setState(initialMessages());
  usePreferences.setState(initialPreferences());
  usePanels.setState(initialPanels());
  useMemoryPlan.setState(initialMemoryPlan());
  useRunHistory.getState().setOpen(false);
  useRunHistory.setState(initialRunHistory());
  drafts.cancel();
}
