// Reading the server's error texts: which node (and param or port) a
// message is about, and how a several-line report (the out-of-memory one)
// splits into paragraphs and lists so it reads as the list it is.
import type { ValidationIssue } from '../api/types';

export interface NodeIssue {
  nodeId: string;
  nodeType?: string;
  /** The param it names, when it names one. */
  param?: string;
  /** The port it names (`input "model"`), when it names one. */
  port?: string;
  message: string;
  /** An out-of-memory report: the message is the whole report (advice as a list). */
  outOfMemory?: boolean;
}

/** `param "epochs"` -> {param: "epochs"}; `input "model"` -> {port: "model"}. */
export function parseField(field: string | undefined): { param?: string; port?: string } {
  if (!field) return {};
  const m = /^(param|input|output)\s+"([^"]*)"/.exec(field.trim());
  if (!m) return {};
  return m[1] === 'param' ? { param: m[2] } : { port: m[2] };
}

/** POST /api/graph/validate's issues, those that name a node. */
export function issuesFromValidation(issues: readonly ValidationIssue[]): NodeIssue[] {
  return issues
    .filter((i) => i.node_id)
    .map((i) => ({ nodeId: i.node_id, nodeType: i.node_type, ...parseField(i.field), message: i.message }));
}

// `graph "G": node n7 (TrainingLoop), param "epochs": message` (Issue::to_string, NodeError::what).
const NODE_LINE = /node (\S+) \(([^)]*)\)(?:, ((?:param|input|output) "[^"]*"|edge \S+))?: (.*)$/;
// `Node TrainingLoop (train) ran out of memory on cpu.` (engine/oom.cpp)
const OOM_HEAD = /^Node (\S+) \(([^)]+)\) ran out of memory/;

/**
 * The nodes an error text names: one per `node <id> (<type>)` line of a
 * validation or node error, or the node of an out-of-memory report.
 */
export function issuesFromText(text: string): NodeIssue[] {
  const oom = OOM_HEAD.exec(text);
  if (oom) return [{ nodeId: oom[2]!, nodeType: oom[1], message: text }];
  const lines = text.split('\n');
  const first = NODE_LINE.exec(lines[0] ?? '');
  const rest = lines.slice(1);
  if (first && !rest.some((l) => NODE_LINE.test(l)))
    // One node's error whose text goes on over more lines: they are its message too.
    return [{ nodeId: first[1]!, nodeType: first[2], ...parseField(first[3]), message: [first[4]!, ...rest].join('\n') }];
  const out: NodeIssue[] = [];
  for (const line of lines) {
    const m = NODE_LINE.exec(line);
    if (m) out.push({ nodeId: m[1]!, nodeType: m[2], ...parseField(m[3]), message: m[4]! });
  }
  return out;
}

export type Block =
  | { kind: 'p'; text: string }
  | { kind: 'ul'; items: string[] }
  | { kind: 'ol'; items: string[] }
  /** A C++ backtrace (LibTorch's `frame #N: ...` lines), shown folded. */
  | { kind: 'trace'; lines: string[] };

const BULLET = /^\s*[-*•]\s+(.*)$/;
const NUMBERED = /^\s*\d+[.)]\s+(.*)$/;
const TRACE = /^(Exception raised from .*\(most recent call first\):|frame #\d+: )/;
const FRAME = /^frame #\d+: /;

/**
 * A message's text as blocks: runs of `- item` lines become a bulleted
 * list, runs of `1. item` lines a numbered one, other lines paragraphs (a
 * blank line ends one). An item's indented continuation lines join it.
 */
export function textBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  let para: string[] = [];
  let list: { kind: 'ul' | 'ol'; items: string[] } | null = null;
  const flushPara = () => {
    if (para.length) blocks.push({ kind: 'p', text: para.join('\n') });
    para = [];
  };
  const flushList = () => {
    if (list) blocks.push(list);
    list = null;
  };
  let trace: string[] | null = null;
  for (const line of text.replace(/\r\n/g, '\n').split('\n')) {
    if (TRACE.test(line) || (trace && FRAME.test(line))) {
      flushPara();
      flushList();
      (trace ??= []).push(line);
      continue;
    }
    if (trace) {
      blocks.push({ kind: 'trace', lines: trace });
      trace = null;
    }
    const bullet = BULLET.exec(line);
    const numbered = bullet ? null : NUMBERED.exec(line);
    const item = bullet ?? numbered;
    if (item) {
      const kind = bullet ? 'ul' : 'ol';
      flushPara();
      if (!list || list.kind !== kind) {
        flushList();
        list = { kind, items: [] };
      }
      list.items.push(item[1]!.trim());
      continue;
    }
    if (line.trim() === '') {
      flushPara();
      flushList();
      continue;
    }
    const current = list as { kind: 'ul' | 'ol'; items: string[] } | null;
    if (current && /^\s{2,}\S/.test(line) && current.items.length) {
      current.items[current.items.length - 1] += ' ' + line.trim();
      continue;
    }
    flushList();
    para.push(line);
  }
  flushPara();
  flushList();
  if (trace) blocks.push({ kind: 'trace', lines: trace });
  return blocks;
}

/** The first line of a message, for places with room for one. */
export function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? '';
  return line.trim();
}
