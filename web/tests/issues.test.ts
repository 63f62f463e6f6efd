import { describe, expect, it } from 'vitest';
import { firstLine, issuesFromText, issuesFromValidation, parseField, textBlocks } from '../src/graph/issues';

const OOM = `Node TrainingLoop (train) ran out of memory on cuda:0.

What to try, cheapest first:
  - reduce batch_size on the DataLoader node loader (now 256)
  - set TrainingLoop's precision to bf16 (roughly halves activation memory on Ampere and newer)
  - raise TrainingLoop's accumulate_steps and lower batch_size by the same factor, which keeps the effective batch identical (e.g. accumulate_steps 2 with batch_size 128)
  - make the model smaller, or shorten the sequence / shrink the image

CUDA memory on cuda:0: 10.2 GiB held by live tensors, 11.0 GiB reserved by the caching allocator, 11.3 GiB peak this process, 11.6 GiB on the card.

Original error: CUDA out of memory. Tried to allocate 2.00 GiB`;

describe('textBlocks', () => {
  it('the out-of-memory report reads as paragraphs around a list', () => {
    expect(textBlocks(OOM)).toEqual([
      { kind: 'p', text: 'Node TrainingLoop (train) ran out of memory on cuda:0.' },
      { kind: 'p', text: 'What to try, cheapest first:' },
      {
        kind: 'ul',
        items: [
          'reduce batch_size on the DataLoader node loader (now 256)',
          "set TrainingLoop's precision to bf16 (roughly halves activation memory on Ampere and newer)",
          "raise TrainingLoop's accumulate_steps and lower batch_size by the same factor, which keeps the effective batch identical (e.g. accumulate_steps 2 with batch_size 128)",
          'make the model smaller, or shorten the sequence / shrink the image',
        ],
      },
      {
        kind: 'p',
        text: 'CUDA memory on cuda:0: 10.2 GiB held by live tensors, 11.0 GiB reserved by the caching allocator, 11.3 GiB peak this process, 11.6 GiB on the card.',
      },
      { kind: 'p', text: 'Original error: CUDA out of memory. Tried to allocate 2.00 GiB' },
    ]);
  });

  it('numbered advice is a numbered list; an indented line continues its item', () => {
    expect(textBlocks('Try:\n1. smaller batches\n   of 16\n2) bf16')).toEqual([
      { kind: 'p', text: 'Try:' },
      { kind: 'ol', items: ['smaller batches of 16', 'bf16'] },
    ]);
  });

  it('a LibTorch backtrace is kept apart, to be folded', () => {
    const blocks = textBlocks('budget exceeded\nException raised from allocate at memory.cpp:63 (most recent call first):\nframe #0: a\nframe #1: b');
    expect(blocks).toEqual([
      { kind: 'p', text: 'budget exceeded' },
      { kind: 'trace', lines: ['Exception raised from allocate at memory.cpp:63 (most recent call first):', 'frame #0: a', 'frame #1: b'] },
    ]);
  });

  it('one line is one paragraph', () => {
    expect(textBlocks('done')).toEqual([{ kind: 'p', text: 'done' }]);
    expect(firstLine('\n  first\nsecond')).toBe('first');
  });
});

describe('which node a message is about', () => {
  it('the out-of-memory report: its node, with the whole report', () => {
    expect(issuesFromText(OOM)).toEqual([{ nodeId: 'train', nodeType: 'TrainingLoop', message: OOM }]);
  });

  it('a node error, its param, and the lines after it', () => {
    expect(issuesFromText('graph "g": node data (CSVDataset), param "path": no such file\nlooked in /x')).toEqual([
      { nodeId: 'data', nodeType: 'CSVDataset', param: 'path', message: 'no such file\nlooked in /x' },
    ]);
  });

  it('a validation list: one issue per line, ports and params told apart', () => {
    expect(
      issuesFromText(
        '3 problems in the graph:\n' +
          '  - graph "g": no Start node: connect a Start node\'s trigger to the first node to run\n' +
          '  - graph "g": node pipe (preset:Training Pipeline), input "model": required input is not connected\n' +
          '  - graph "g": node t (TrainingLoop), edge e9: edge e9 arrives at an input this node does not have',
      ),
    ).toEqual([
      { nodeId: 'pipe', nodeType: 'preset:Training Pipeline', port: 'model', message: 'required input is not connected' },
      { nodeId: 't', nodeType: 'TrainingLoop', message: 'edge e9 arrives at an input this node does not have' },
    ]);
  });

  it('text naming no node names none', () => {
    expect(issuesFromText('malformed JSON')).toEqual([]);
  });

  it('POST /api/graph/validate’s issues', () => {
    expect(
      issuesFromValidation([
        { node_id: '', field: '', message: 'no Start node' },
        { node_id: 'loss', node_type: 'Loss', field: 'param "type"', message: 'not an option' },
      ]),
    ).toEqual([{ nodeId: 'loss', nodeType: 'Loss', param: 'type', message: 'not an option' }]);
    expect(parseField('output "model"')).toEqual({ port: 'model' });
    expect(parseField('edge e3')).toEqual({});
  });
});
