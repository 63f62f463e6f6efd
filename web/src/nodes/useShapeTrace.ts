// The layer editor's shape trace: the sample's sizes from the text a person
// types, and the server's answer for the spec and sample, asked a moment
// after either stops changing.
import { useEffect, useMemo, useState } from 'react';
import type { ShapeTraceResponse } from '../api/layers';
import { parseShapeText, type Parsed } from '../graph/layerSpec';
import { useLayerStore } from '../store/layerStore';

/** How long the spec must stay unchanged before its shapes are asked for. */
const TRACE_DELAY_MS = 300;

/** The sample's sizes (null when the text is not a shape): the same array while the sizes stay the same. */
export function useInputShape(shapeText: string): number[] | null {
  const shapeKey = parseShapeText(shapeText)?.join(',') ?? '';
  return useMemo(() => (shapeKey ? shapeKey.split(',').map(Number) : null), [shapeKey]);
}

export interface ShapeTrace {
  trace: ShapeTraceResponse | null;
  /** Why the last trace could not be asked for (the server's or the network's message). */
  problem: string | null;
  /** True while the shown trace does not answer the current spec and sample. */
  computing: boolean;
}

/** The trace of `parsed` for `inputShape`; an older answer never wins. */
export function useShapeTrace(parsed: Parsed, inputShape: number[] | null): ShapeTrace {
  const [trace, setTrace] = useState<ShapeTraceResponse | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  /** The spec and sample the shown trace (or its problem) answers. */
  const [answered, setAnswered] = useState<{ spec: Parsed; shape: number[] } | null>(null);
  const computing = parsed.ok && inputShape !== null && (answered?.spec !== parsed || answered.shape !== inputShape);

  useEffect(() => {
    if (!parsed.ok || !inputShape) return;
    const abort = new AbortController();
    const timer = window.setTimeout(() => {
      useLayerStore
        .getState()
        .traceShapes(parsed.spec, inputShape, abort.signal)
        .then((r) => {
          setTrace(r);
          setProblem(null);
        })
        .catch((e: unknown) => {
          if (abort.signal.aborted) return;
          setTrace(null);
          setProblem(e instanceof Error ? e.message : String(e));
        })
        .finally(() => {
          if (!abort.signal.aborted) setAnswered({ spec: parsed, shape: inputShape });
        });
    }, TRACE_DELAY_MS);
    return () => {
      window.clearTimeout(timer);
      abort.abort();
    };
  }, [parsed, inputShape]);

  return { trace, problem, computing };
}
