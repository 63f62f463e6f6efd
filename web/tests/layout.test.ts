import { beforeEach, describe, expect, it } from 'vitest';
import { anyOverlap, estimateSize } from '../src/graph/geometry';
import { needsMeasuredLayout, nodeShape } from '../src/graph/placement';
import { useCatalogue } from '../src/store/catalogue';
import { useDocument } from '../src/store/document';
import { openGraph, resetEditorForTests } from '../src/store/editor';
import { defsByName, exampleGraphs, nodeDefs } from './helpers';

const store = () => useDocument.getState();
const box = (id: string, x: number, y: number) => ({ id, x, y, width: 100, height: 100 });

beforeEach(() => {
  resetEditorForTests();
  useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
});

describe('laying out again at the measured sizes', () => {
  it('redoes an auto layout always, and keeps saved positions unless they overlap as drawn', () => {
    const apart = [box('a', 0, 0), box('b', 104, 0)];
    expect(needsMeasuredLayout('laidOut', apart)).toBe(true);
    expect(needsMeasuredLayout('check', apart)).toBe(false);
    expect(needsMeasuredLayout('check', [box('a', 0, 0), box('b', 50, 50)])).toBe(true);
  });

  it.each(exampleGraphs().map(([p, json]) => [p, json] as const))(
    '%s: no two nodes overlap once laid out with their drawn sizes',
    async (path, json) => {
      expect(await openGraph(json, { kind: 'example', path })).toBe(true);
      expect(store().measureCheck).not.toBeNull();
      // Draw every node taller than estimated (the TrainingLoop much taller), as the browser may.
      const s = store();
      const measured = s.nodes.map((n) => {
        const est = estimateSize(nodeShape({ defs: defsByName, edges: s.edges }, n));
        const extra = n.data.nodeType === 'TrainingLoop' ? 160 : 24;
        return { ...n, measured: { width: est.width + 10, height: est.height + extra } };
      });
      useDocument.setState({ nodes: measured });
      const fit = store().fitRequest;
      await store().relayoutMeasured();
      expect(store().measureCheck).toBeNull();
      const boxes = store().nodes.map((n) => ({ id: n.id, ...n.position, width: n.measured!.width!, height: n.measured!.height! }));
      expect(anyOverlap(boxes, 0)).toBe(false);
      if (fit !== store().fitRequest) expect(store().fitRequest).toBe(fit + 1);
    },
  );

  it('waits until every node is measured', async () => {
    const [path, json] = exampleGraphs()[0]!;
    await openGraph(json, { kind: 'example', path });
    const mode = store().measureCheck;
    await store().relayoutMeasured();
    expect(store().measureCheck).toBe(mode);
  });
});
