import { describe, expect, it } from 'vitest';
import { anyOverlap, estimateSize, NODE_WIDTH } from '../src/graph/geometry';
import { graphToFlow } from '../src/graph/graphJson';
import { layoutPositions } from '../src/graph/layout';
import { shapeOf } from '../src/graph/ports';
import { deviceOptionLabel, fileNameFor } from '../src/panels/Toolbar';
import { groupDefinitions } from '../src/panels/Palette';
import { exampleOf, searchFor, sourceFromSearch } from '../src/store/url';
import { defsByName, exampleGraphs, nodeDefs } from './helpers';

describe('layout', () => {
  const sizes = (json: unknown) => {
    const f = graphToFlow(json);
    const ends = f.edges.map((e) => ({ ...e, kind: e.data!.kind }));
    return {
      f,
      nodes: f.nodes.map((n) => ({ id: n.id, size: estimateSize(shapeOf(n.id, n.data.nodeType, defsByName[n.data.nodeType], n.data.params, ends)) })),
    };
  };

  it.each(exampleGraphs().filter(([p]) => !p.includes('/resume/')))(
    '%s opens where it was saved: its positions do not overlap at the drawn size',
    (_p, json) => {
      const { f, nodes } = sizes(json);
      expect(f.unplaced).toEqual([]);
      expect(anyOverlap(f.nodes.map((n, i) => ({ id: n.id, ...n.position, ...nodes[i]!.size })))).toBe(false);
    },
  );

  it.each(exampleGraphs())('%s laid out: no overlaps, every wire runs left to right', (_p, json) => {
    const { f, nodes } = sizes(json);
    const placed = layoutPositions(nodes, f.edges);
    const boxes = nodes.map((n) => ({ id: n.id, ...placed.get(n.id)!, ...n.size }));
    expect(anyOverlap(boxes, 0)).toBe(false);
    for (const e of f.edges) expect(placed.get(e.source)!.x).toBeLessThan(placed.get(e.target)!.x);
  });

  it('sizes grow with ports and params, not with folded advanced ones', () => {
    const train = estimateSize(shapeOf('t', 'TrainingLoop', defsByName.TrainingLoop, {}, []));
    const start = estimateSize(shapeOf('s', 'Start', defsByName.Start, {}, []));
    expect(train.width).toBe(NODE_WIDTH);
    expect(train.height).toBeGreaterThan(start.height + 200);
  });
});


describe('the address', () => {
  it('names an example or a saved graph', () => {
    expect(sourceFromSearch('?example=fashion-mnist')).toEqual({ kind: 'example', path: 'fashion-mnist' });
    expect(sourceFromSearch('?graph=My%20graph')).toEqual({ kind: 'saved', name: 'My graph' });
    expect(sourceFromSearch('')).toEqual({ kind: 'new' });
    expect(searchFor({ kind: 'example', path: 'a/b' }, '?graph=x&debug=1')).toBe('?debug=1&example=a%2Fb');
    expect(sourceFromSearch(searchFor({ kind: 'example', path: 'a/b' }))).toEqual({ kind: 'example', path: 'a/b' });
    expect(searchFor({ kind: 'file', filename: 'g.json' }, '?example=x')).toBe('');
    // A run's snapshot has no address; it runs in its example's folder when it was an example's run.
    expect(searchFor({ kind: 'run', runId: 'run-3', example: 'toy-mlp' }, '?example=x')).toBe('');
    expect(exampleOf({ kind: 'run', runId: 'run-3', example: 'toy-mlp' })).toBe('toy-mlp');
    expect(exampleOf({ kind: 'run', runId: 'run-3' })).toBeUndefined();
    expect(exampleOf({ kind: 'example', path: 'iris-classifier' })).toBe('iris-classifier');
    expect(exampleOf({ kind: 'saved', name: 'a' })).toBeUndefined();
  });
});

describe('palette and toolbar helpers', () => {
  it('groups by category, a pipeline’s first and then the server’s order, and searches names, categories and descriptions', () => {
    const groups = groupDefinitions(nodeDefs, '');
    expect(groups.map(([c]) => c)).toEqual([
      'Control',
      'Data',
      'Training',
      'IO',
      'CNN',
      'Classical',
      'Diffusion',
      'LLM',
      'Normalization',
      'RL',
      'RNN',
      'Tensor Operations',
      'Transformer',
      'Utility',
      'Vision',
    ]);
    expect(groupDefinitions(nodeDefs, 'loader').flatMap(([, l]) => l.map((d) => d.node_name))).toEqual(
      expect.arrayContaining(['DataLoader', 'CheckpointLoader', 'ModelLoader']),
    );
    expect(groupDefinitions(nodeDefs, 'zzz')).toEqual([]);
  });

  it('a device line shows its memory unless its label already does', () => {
    expect(deviceOptionLabel({ device: 'cpu', label: 'CPU', free_bytes: 2 * 1024 ** 3, total_bytes: 8 * 1024 ** 3 })).toBe('CPU · 2.0/8.0 GiB free');
    expect(deviceOptionLabel({ device: 'cuda', label: 'NVIDIA CUDA · 70.1/79.6 GiB', free_bytes: 1, total_bytes: 2 })).toBe('NVIDIA CUDA · 70.1/79.6 GiB');
    expect(deviceOptionLabel({ device: 'mps', label: 'Apple MPS', free_bytes: null, total_bytes: null })).toBe('Apple MPS');
  });

  it('an exported file is named after the graph', () => {
    expect(fileNameFor('Fashion-MNIST CNN')).toBe('Fashion-MNIST_CNN.json');
    expect(fileNameFor('  ')).toBe('graph.json');
    expect(fileNameFor('訓練 圖')).toBe('訓練_圖.json');
  });
});
