// What the WebSocket's messages do to a run's state: node statuses, training
// progress, chart series and run facts, errors on nodes, and the lines the
// messages panel shows. Pure, so every message kind is tested without a socket.
import type { ProgressEvent, ServerMessage } from '../api/types';
import { firstLine, issuesFromText, parseField, type NodeIssue } from '../graph/issues';
import { t } from '../i18n';
import { factsFromSummary, reduceFacts, reduceSeries, type RunFacts, type TrainSeries } from './trainSeries';

export type { RunFacts, TrainSeries } from './trainSeries';

export type NodeStatus = 'idle' | 'running' | 'completed' | 'cached' | 'error' | 'skipped';
export const NODE_STATUSES: readonly NodeStatus[] = ['idle', 'running', 'completed', 'cached', 'error', 'skipped'];

export type RunPhase = 'idle' | 'starting' | 'running' | 'stopping';
export type RunOutcome = 'completed' | 'error' | 'stopped' | null;

/** TrainingLoop's latest progress, as its node shows it. */
export interface TrainingProgress {
  epoch: number;
  totalEpochs: number;
  batch: number;
  totalBatches: number;
  step: number;
  samplesPerS: number | null;
  loss: number | null;
  valLoss: number | null;
  lr: number | null;
  /** 0..1 over the whole run (epochs and batches). */
  fraction: number;
}

export interface RunState {
  phase: RunPhase;
  outcome: RunOutcome;
  runId: string | null;
  /** The server's name for the run (/api/runs/{id}), from execution_start. */
  serverRunId?: string;
  statuses: Record<string, NodeStatus>;
  progress: Record<string, TrainingProgress>;
  /** Each TrainingLoop's chart series. */
  series: Record<string, TrainSeries>;
  /** The TrainingLoop that sent the latest progress. */
  seriesNode: string | null;
  /** Each TrainingLoop's precision, batch, speed and memory. */
  facts: Record<string, RunFacts>;
  /** Problems marked on nodes: validation issues, node errors. */
  issues: Record<string, NodeIssue[]>;
}

export type MessageLevel = 'info' | 'warning' | 'error';

export interface NewMessage {
  level: MessageLevel;
  text: string;
  nodeId?: string;
  param?: string;
  /** An out-of-memory report (shown whole, its advice as a list). */
  outOfMemory?: boolean;
}

export const idleRun = (): RunState => ({
  phase: 'idle',
  outcome: null,
  runId: null,
  statuses: {},
  progress: {},
  series: {},
  seriesNode: null,
  facts: {},
  issues: {},
});

/** The state as a new run starts: every node idle, nothing marked, no losses. */
export function startRun(runId: string): RunState {
  return { ...idleRun(), phase: 'starting', runId };
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** A progress frame folded into the node's progress. */
export function reduceProgress(prev: TrainingProgress | undefined, e: ProgressEvent): TrainingProgress {
  const p: TrainingProgress = prev
    ? { ...prev }
    : { epoch: 0, totalEpochs: 0, batch: 0, totalBatches: 0, step: 0, samplesPerS: null, loss: null, valLoss: null, lr: null, fraction: 0 };
  if (e.event === 'config') {
    const c = e.config ?? {};
    p.totalEpochs = num(c.epochs) ?? p.totalEpochs;
    p.totalBatches = num(c.batches_per_epoch) ?? p.totalBatches;
    p.lr = num(c.lr) ?? p.lr;
  } else if (e.event === 'batch') {
    p.epoch = num(e.epoch) ?? p.epoch;
    p.totalEpochs = num(e.total_epochs) ?? p.totalEpochs;
    p.batch = num(e.batch) ?? p.batch;
    p.totalBatches = num(e.total_batches) ?? p.totalBatches;
    p.step = num(e.step) ?? p.step;
    p.loss = num(e.loss) ?? p.loss;
    p.lr = num(e.lr) ?? p.lr;
    p.samplesPerS = num(e.samples_per_s) ?? p.samplesPerS;
  } else if (e.event === 'epoch') {
    p.epoch = num(e.epoch) ?? p.epoch;
    p.totalEpochs = num(e.total_epochs) ?? p.totalEpochs;
    p.batch = p.totalBatches || p.batch;
    p.step = num(e.step) ?? p.step;
    p.loss = num(e.loss) ?? p.loss;
    p.valLoss = num(e.val_loss) ?? p.valLoss;
    p.lr = num(e.lr) ?? p.lr;
  }
  if (p.totalEpochs > 0) {
    const inEpoch = p.totalBatches > 0 ? Math.min(p.batch / p.totalBatches, 1) : e.event === 'epoch' ? 1 : 0;
    const done = e.event === 'epoch' ? p.epoch : Math.max(p.epoch - 1, 0) + inEpoch;
    p.fraction = Math.max(0, Math.min(1, done / p.totalEpochs));
  }
  return p;
}

function addIssue(issues: Record<string, NodeIssue[]>, issue: NodeIssue): Record<string, NodeIssue[]> {
  const list = issues[issue.nodeId] ?? [];
  const same = list.findIndex((i) => i.message === issue.message || (issue.param && !i.param && issue.message.endsWith(i.message)));
  if (same >= 0) {
    // A later, fuller report of the same problem (it names the param): keep the fuller one.
    const merged = { ...list[same]!, ...issue };
    return { ...issues, [issue.nodeId]: list.map((x, k) => (k === same ? merged : x)) };
  }
  return { ...issues, [issue.nodeId]: [...list, issue] };
}

/** Marks validation issues on their nodes (and params), replacing earlier marks. */
export function markIssues(state: RunState, found: readonly NodeIssue[]): RunState {
  let issues: Record<string, NodeIssue[]> = {};
  for (const i of found) issues = addIssue(issues, i);
  return { ...state, issues };
}

const STOPPED = 'stopped';

/** A training progress frame (node_status "progress", or node_progress for batches) applied to its node. */
function reduceProgressMessage(state: RunState, id: string, e: ProgressEvent | undefined): { state: RunState; messages: NewMessage[] } {
  if (!e) return { state, messages: [] };
  const series = reduceSeries(state.series[id], e);
  const facts = reduceFacts(state.facts[id], e);
  const next: RunState = {
    ...state,
    progress: { ...state.progress, [id]: reduceProgress(state.progress[id], e) },
  };
  if (series !== state.series[id] && series) {
    next.series = { ...state.series, [id]: series };
    next.seriesNode = id;
  }
  if (facts !== state.facts[id] && facts) next.facts = { ...state.facts, [id]: facts };
  const messages: NewMessage[] = [];
  if (e.event === 'epoch')
    messages.push({
      level: 'info',
      nodeId: id,
      text:
        t('run.epochLine', {
          epoch: e.epoch ?? '?',
          total: e.total_epochs ?? '?',
          loss: num(e.loss)?.toPrecision(4) ?? '?',
          val: num(e.val_loss) !== null ? t('run.valPart', { val: num(e.val_loss)!.toPrecision(4) }) : '',
        }) + (num(e.val_accuracy) !== null ? t('run.accPart', { acc: (num(e.val_accuracy)! * 100).toFixed(1) }) : ''),
    });
  return { state: next, messages };
}

/** One server message applied: the next state and the messages it adds to the panel. */
export function reduceRun(state: RunState, msg: ServerMessage): { state: RunState; messages: NewMessage[] } {
  switch (msg.type) {
    case 'execution_start':
      return {
        state: {
          ...state,
          phase: 'running',
          runId: msg.run_id ?? state.runId,
          ...(msg.server_run_id ? { serverRunId: msg.server_run_id } : {}),
        },
        messages: [{ level: 'info', text: t('run.started') }],
      };
    case 'node_progress':
      return reduceProgressMessage(state, msg.node_id, msg.progress);
    case 'node_status': {
      const id = msg.node_id;
      if (msg.status === 'progress') return reduceProgressMessage(state, id, msg.progress);
      // What the node printed: on its closing message (CodefyUI's `log`), or
      // as a message of its own from older servers; said once either way.
      const printed: NewMessage[] = msg.log ? [{ level: 'info', nodeId: id, text: msg.log }] : [];
      if (msg.status === 'log') return { state, messages: printed };
      // Codefy says what an error is (stopped, out of memory, the param or
      // port it blames); a server that does not is read from the text.
      const structured = msg.stopped !== undefined || msg.out_of_memory !== undefined || msg.field !== undefined;
      const stopped =
        msg.status === 'interrupted' || (msg.status === 'error' && (structured ? msg.stopped === true : msg.error === STOPPED));
      if (stopped)
        // The node Stop interrupted: not a failure of the node.
        return {
          state: { ...state, statuses: { ...state.statuses, [id]: 'skipped' } },
          messages: [...printed, { level: 'info', nodeId: id, text: t('run.nodeStopped', { node: id }) }],
        };
      if (msg.status === 'error') {
        const text = msg.error ?? '';
        const named = structured ? undefined : issuesFromText(text).find((i) => i.nodeId === id);
        const outOfMemory = structured ? msg.out_of_memory === true : named !== undefined && firstLine(text).includes('ran out of memory');
        const blamed = structured ? parseField(msg.field) : { ...(named?.param ? { param: named.param } : {}) };
        const issue: NodeIssue = {
          nodeId: id,
          message: text,
          ...(blamed.param ? { param: blamed.param } : {}),
          ...(blamed.port ? { port: blamed.port } : {}),
          ...(outOfMemory ? { outOfMemory: true } : {}),
        };
        return {
          state: { ...state, statuses: { ...state.statuses, [id]: 'error' }, issues: addIssue(state.issues, issue) },
          messages: [
            ...printed,
            { level: 'error', nodeId: id, text, ...(issue.param ? { param: issue.param } : {}), ...(outOfMemory ? { outOfMemory: true } : {}) },
          ],
        };
      }
      if (msg.status === 'completed') {
        const facts = factsFromSummary(state.facts[id], msg.output_summary);
        return {
          state: {
            ...state,
            statuses: { ...state.statuses, [id]: 'completed' },
            ...(facts && facts !== state.facts[id] ? { facts: { ...state.facts, [id]: facts } } : {}),
          },
          messages: printed,
        };
      }
      if (msg.status === 'running' || msg.status === 'cached' || msg.status === 'skipped')
        return { state: { ...state, statuses: { ...state.statuses, [id]: msg.status } }, messages: printed };
      return { state, messages: printed };
    }
    case 'warning':
      return {
        state,
        messages: [{ level: 'warning', text: msg.message, ...(msg.node_id ? { nodeId: msg.node_id } : {}) }],
      };
    case 'execution_complete':
      return {
        state: { ...state, phase: 'idle', outcome: 'completed', statuses: settleRunning(state.statuses) },
        messages: [{ level: 'info', text: t('run.completed') }],
      };
    case 'execution_stopped':
      return {
        state: { ...state, phase: 'idle', outcome: 'stopped', statuses: settleRunning(state.statuses) },
        messages: [{ level: 'info', text: t('run.stopped') }],
      };
    case 'execution_error': {
      const text = msg.error ?? '';
      let issues = state.issues;
      const named = issuesFromText(text);
      for (const i of named) issues = addIssue(issues, i);
      const statuses = { ...settleRunning(state.statuses) };
      for (const i of named) if (statuses[i.nodeId] !== 'error') statuses[i.nodeId] = 'error';
      // A node's own error already said this in full: the run's line only says the run failed.
      const said = (nodeId: string, message: string) => state.issues[nodeId]?.some((i) => i.message === message) ?? false;
      const alreadySaid =
        named.length > 0
          ? named.every((n) => said(n.nodeId, n.message))
          : Object.values(state.issues).some((list) => list.some((i) => i.message === text));
      const first = named[0];
      const messages: NewMessage[] = alreadySaid
        ? [{ level: 'error', text: t('run.failed') }]
        : [
            {
              level: 'error',
              text,
              ...(named.length === 1 && first ? { nodeId: first.nodeId, ...(first.param ? { param: first.param } : {}) } : {}),
            },
          ];
      return { state: { ...state, phase: 'idle', outcome: 'error', statuses, issues }, messages };
    }
    case 'error':
      return { state, messages: [{ level: 'error', text: msg.error }] };
    default:
      return { state, messages: [] };
  }
}

/** Nodes still marked running when a run ends went no further. */
/** Nodes still running when a run ends without saying how they ended are shown as skipped. */
export function settleRunning(statuses: Record<string, NodeStatus>): Record<string, NodeStatus> {
  const out: Record<string, NodeStatus> = {};
  for (const [id, s] of Object.entries(statuses)) out[id] = s === 'running' ? 'skipped' : s;
  return out;
}

/** A short line for a node's error badge. */
export function issueHeadline(issues: readonly NodeIssue[] | undefined): string | null {
  const first = issues?.[0];
  return first ? firstLine(first.message) : null;
}
