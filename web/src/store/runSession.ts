// The run session: the execution WebSocket and each tab's run on it. A run
// belongs to the tab it started in (its statuses, progress, series and
// problem marks keep arriving there while another tab is shown); one runs at
// a time. Server messages are applied in batches; a connection lost mid-run
// asks the server how the run ended. Reads the document for the graph to run.
import { create } from 'zustand';
import * as api from '../api';
import type { ExecuteMessage, ServerMessage } from '../api/types';
import { issuesFromValidation } from '../graph/issues';
import { t } from '../i18n';
import { useDocument } from './document';
import { recordOutputsFor } from './inspector';
import { noFitWarnings, useMemoryPlan } from './memoryPlan';
import { describeError, useMessages, type NewMessage } from './messages';
import { usePanels } from './panels';
import { idleRun, markIssues, reduceRun, settleRunning, startRun, type RunState } from './runReducer';
import { exampleOf } from './url';

/** A param field holding text that is not a good value (the text is the field's, not the graph's). */
export interface DraftError {
  nodeId: string;
  param: string;
  error: string;
}

interface RunSessionData {
  /** Each tab's run, by tab id; a tab with none is idle. */
  runs: Record<number, RunState>;
  /** The tab whose graph the current (or last) run is running; null: the shown tab. */
  runTab: number | null;
  socket: api.SocketState;
  /** Param fields holding text that is not a good value, by node and param: Run refuses while there are any. */
  draftErrors: Record<string, DraftError>;
  /** The execution WebSocket, made on first use. */
  connection: api.ExecutionSocket | null;
  /**
   * Server messages waiting for the next batch, and the timer that applies them. Nothing draws
   * this, so it is changed in place: a message arriving notifies no one until its batch is applied.
   */
  batch: { messages: ServerMessage[]; timer: ReturnType<typeof setTimeout> | null };
}

export interface RunSessionState extends RunSessionData {
  /** Tab `tab`'s run (idle when it has none). */
  runOf(tab: number): RunState;
  /** A graph was opened into tab `tab`: it starts with no run. */
  resetRun(tab: number): void;
  /** Tab `tab` closed. */
  forgetTab(tab: number): void;
  /** A param's value changed: the run's mark on it (a validation problem) goes. */
  clearParamIssue(tab: number, nodeId: string, param: string): void;
  /** Opens the WebSocket (at start-up, so the connection dot says whether runs can start). */
  connect(): Promise<void>;
  runGraph(): Promise<void>;
  stopRun(): void;
  validate(): Promise<void>;
  /** A param field holds text that is not a good value (or, with null, no longer does). */
  setDraftError(nodeId: string, param: string, error: string | null): void;
  receive(msg: ServerMessage): void;
  /** Several server messages applied at once: one state change and one re-render for all of them. */
  receiveAll(msgs: readonly ServerMessage[]): void;
  /** Closes the WebSocket and drops what waits for a batch (tests' reset). */
  disconnect(): void;
}

/** The run of a tab that has none. Never changed: every reducer returns a new state. */
const IDLE_RUN: RunState = idleRun();

/** Batches of server messages are applied at most this often (ms). */
const BATCH_MS = 30;

export const initialRunSession = (): RunSessionData => ({
  runs: {},
  runTab: null,
  socket: 'closed',
  draftErrors: {},
  connection: null,
  batch: { messages: [], timer: null },
});

function runId(): string {
  const c = globalThis.crypto as Crypto | undefined;
  if (c && typeof c.randomUUID === 'function') return c.randomUUID();
  return `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

const say = (level: NewMessage['level'], text: string, extra?: Partial<NewMessage>) => useMessages.getState().say(level, text, extra);
const toast = (level: NewMessage['level'], text: string) => useMessages.getState().toast(level, text);

export const useRunSession = create<RunSessionState>()((set, get) => {
  const setRunOf = (tab: number, update: (r: RunState) => RunState) =>
    set((s) => ({ runs: { ...s.runs, [tab]: update(s.runs[tab] ?? IDLE_RUN) } }));
  /** The tab of the run the socket reports on. */
  const runTabNow = () => get().runTab ?? useDocument.getState().activeTab;
  const ended = (tab: number, outcome: RunState['outcome']) => setRunOf(tab, (r) => ({ ...r, phase: 'idle', outcome }));

  /** Marks what the server's validation found on tab `tab`'s nodes, and says it. */
  const applyValidation = (tab: number, v: api.ValidateResponse) => {
    const issues = v.issues ?? [];
    const marked = issuesFromValidation(issues);
    setRunOf(tab, (r) => markIssues(r, marked));
    if (v.valid) return;
    if (issues.length)
      for (const i of issues) {
        const field = i.field ? `${i.field}: ` : '';
        const param = marked.find((m) => m.nodeId === i.node_id && m.message === i.message)?.param;
        say('error', i.node_id ? `${i.node_id} (${i.node_type ?? ''}) ${field}${i.message}` : i.message, {
          ...(i.node_id ? { nodeId: i.node_id } : {}),
          ...(param ? { param } : {}),
        });
      }
    else for (const e of v.errors) say('error', e);
  };

  /** Asks the server how run `id` ended (a few tries while it winds down) and says so. */
  const reportRunEnd = async (id: string) => {
    const connection = get().connection;
    for (let i = 0; i < 20 && get().connection === connection; i++) {
      try {
        const r = await api.getRun(id);
        if (r.status !== 'queued' && r.status !== 'running') {
          const outcome = r.status === 'completed' ? 'completed' : r.status === 'failed' ? 'error' : 'stopped';
          const tab = runTabNow();
          if (get().runOf(tab).serverRunId === id) setRunOf(tab, (run) => ({ ...run, outcome }));
          say(r.status === 'completed' ? 'info' : 'warning', t('socket.runEnded', { status: r.status }));
          return;
        }
      } catch {
        /* the server may be restarting: try again */
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  };

  /** Applies the messages waiting for a batch now. */
  const flush = () => {
    const { batch } = get();
    if (batch.timer) clearTimeout(batch.timer);
    batch.timer = null;
    if (batch.messages.length) get().receiveAll(batch.messages.splice(0));
  };

  const socketNow = (): api.ExecutionSocket => {
    const existing = get().connection;
    if (existing) return existing;
    const connection = new api.ExecutionSocket(
      (m) => {
        // Messages are applied in batches, at most every BATCH_MS: a fast run sends hundreds a
        // second, and one re-render each made the editor fall behind the run it shows.
        const { batch } = get();
        batch.messages.push(m);
        batch.timer ??= setTimeout(flush, BATCH_MS);
      },
      (state, reason) => {
        // What arrived before the connection changed is applied first (a run's end among it).
        flush();
        set({ socket: state });
        if (reason)
          say('error', t('socket.refused', { reason: reason === api.HANDSHAKE_REFUSED ? t('socket.refusedHandshake') : reason }));
        // A connection lost mid-run ends that run on the server (CodefyUI's rule),
        // unless it ended first: the server's run list says which. (A refused
        // handshake never started one: Run's own catch says so.)
        const tab = runTabNow();
        const run = get().runOf(tab);
        if (state === 'closed' && run.phase !== 'idle' && reason !== api.HANDSHAKE_REFUSED) {
          setRunOf(tab, (r) => ({ ...r, phase: 'idle', outcome: 'stopped', statuses: settleRunning(r.statuses) }));
          say('error', t('socket.lostRun'));
          if (run.serverRunId) void reportRunEnd(run.serverRunId);
        }
      },
    );
    set({ connection });
    return connection;
  };

  return {
    ...initialRunSession(),

    runOf(tab) {
      return get().runs[tab] ?? IDLE_RUN;
    },

    resetRun(tab) {
      set((s) => {
        if (!(tab in s.runs)) return s;
        const runs = { ...s.runs };
        delete runs[tab];
        return { runs };
      });
    },

    forgetTab(tab) {
      get().resetRun(tab);
      if (get().runTab === tab) set({ runTab: null });
    },

    clearParamIssue(tab, nodeId, param) {
      const issues = get().runOf(tab).issues[nodeId];
      const left = issues?.filter((i) => i.param !== param);
      if (!issues || !left || left.length === issues.length) return;
      setRunOf(tab, (r) => ({ ...r, issues: { ...r.issues, [nodeId]: left } }));
    },

    connect() {
      return socketNow().connect();
    },

    async runGraph() {
      const doc = useDocument.getState();
      const tab = doc.activeTab;
      const s = get();
      if (s.runOf(tab).phase !== 'idle') return;
      // One run at a time per editor (the server runs one per connection): say where it is.
      if (s.runTab !== null && s.runTab !== tab && s.runOf(s.runTab).phase !== 'idle') {
        const other = doc.docOf(s.runTab);
        toast('warning', t('tabs.otherRunning', { name: other?.meta.name || t('graph.untitled') }));
        return;
      }
      // A field showing a refused value would otherwise run with its last good value, unseen.
      const drafts = Object.values(s.draftErrors).filter((d) => doc.nodes.some((n) => n.id === d.nodeId));
      if (drafts.length) {
        for (const d of drafts) say('error', t('param.draftProblem', { param: d.param, error: d.error }), { nodeId: d.nodeId, param: d.param });
        toast('error', t('param.draftRefused', { count: drafts.length }));
        usePanels.getState().setBottomOpen(true);
        return;
      }
      const id = runId();
      const graph = doc.exportGraph();
      set((st) => ({ runs: { ...st.runs, [tab]: startRun(id) }, runTab: tab }));
      usePanels.getState().setBottomOpen(true);
      let verdict: api.ValidateResponse | null = null;
      try {
        verdict = await api.validateGraph(graph);
      } catch {
        // The check could not be asked: the run's own validation still refuses a bad graph.
      }
      if (verdict && !verdict.valid) {
        applyValidation(tab, verdict);
        ended(tab, 'error');
        toast('error', t('validate.refused', { count: verdict.errors.length }));
        return;
      }
      // A plan made for this very graph and device that predicts no fit: say so and what would
      // fit before the run starts; the run still starts (the prediction may be wrong, or the person knows).
      const plan = useMemoryPlan.getState().freshPlan(tab, graph, doc.device);
      if (plan && !plan.response.fits) {
        const warnings = noFitWarnings(plan.response);
        useMessages.getState().sayAll(warnings);
        for (const w of warnings) toast('warning', w.text);
      }
      const ws = socketNow();
      try {
        await ws.connect();
      } catch (e) {
        ended(tab, 'error');
        say('error', t('socket.connectFailed', { error: describeError(e) }));
        toast('error', t('socket.connectFailed', { error: describeError(e) }));
        return;
      }
      // What changed since the last run, as the document is now (edits made meanwhile included).
      const now = useDocument.getState();
      const changed = Object.keys(now.changed).filter((nid) => now.nodes.some((n) => n.id === nid));
      const example = exampleOf(now.source);
      const message: ExecuteMessage = {
        ...graph,
        action: 'execute',
        graph_id: graph.name || 'editor',
        device: now.device,
        run_id: id,
        record_outputs: recordOutputsFor(id),
        weights_persistent: true,
        client: 'codefy',
        ...(changed.length ? { changed_nodes: changed } : {}),
        ...(example ? { example } : {}),
      };
      if (!ws.send(message)) {
        ended(tab, 'error');
        say('error', t('socket.connectFailed', { error: 'not connected' }));
        return;
      }
      now.clearChanged();
    },

    stopRun() {
      const tab = useDocument.getState().activeTab;
      if (get().runOf(tab).phase === 'idle') return;
      const connection = get().connection;
      if (!connection || !connection.send({ action: 'stop' })) {
        ended(tab, 'stopped');
        return;
      }
      setRunOf(tab, (r) => ({ ...r, phase: 'stopping' }));
    },

    async validate() {
      const doc = useDocument.getState();
      try {
        const v = await api.validateGraph(doc.exportGraph());
        applyValidation(doc.activeTab, v);
        if (v.valid) toast('info', t('validate.ok'));
      } catch (e) {
        say('error', t('validate.failed', { error: describeError(e) }));
      }
    },

    setDraftError(nodeId, param, error) {
      const key = `${nodeId}\u0000${param}`;
      const known = get().draftErrors[key];
      if (error === null ? !known : known?.error === error) return;
      set((s) => {
        const draftErrors = { ...s.draftErrors };
        if (error === null) delete draftErrors[key];
        else draftErrors[key] = { nodeId, param, error };
        return { draftErrors };
      });
    },

    receive(msg) {
      get().receiveAll([msg]);
    },

    receiveAll(msgs) {
      if (msgs.length === 0) return;
      const tab = runTabNow();
      let run = get().runOf(tab);
      const said: NewMessage[] = [];
      for (const msg of msgs) {
        const next = reduceRun(run, msg);
        run = next.state;
        said.push(...next.messages);
      }
      const ran = run;
      setRunOf(tab, () => ran);
      useMessages.getState().sayAll(said);
      if (msgs.some((m) => m.type === 'execution_error')) toast('error', t('run.failedToast'));
    },

    disconnect() {
      const { connection, batch } = get();
      if (batch.timer) clearTimeout(batch.timer);
      batch.timer = null;
      batch.messages.length = 0;
      connection?.close();
      set({ connection: null });
    },
  };
});

/** The shown tab's run, for code outside React. */
export function shownRun(): RunState {
  return useRunSession.getState().runOf(useDocument.getState().activeTab);
}

/** What `pick` takes from the shown tab's run; the component re-renders when that changes. */
export function useShownRun<T>(pick: (run: RunState) => T): T {
  const tab = useDocument((s) => s.activeTab);
  return useRunSession((s) => pick(s.runs[tab] ?? IDLE_RUN));
}
