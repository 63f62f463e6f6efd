// The page's address names the open graph: /?example=<path> or /?graph=<name>.

export type GraphSource =
  | { kind: 'example'; path: string }
  | { kind: 'saved'; name: string }
  | { kind: 'file'; filename: string }
  /** A run's graph snapshot from the run history; `example`: the example it was a run of (its files resolve there). */
  | { kind: 'run'; runId: string; example?: string }
  | { kind: 'new' };

/** The example whose folder a graph's relative file paths resolve in, if any (the execute message's and the planner's `example`). */
export function exampleOf(source: GraphSource): string | undefined {
  if (source.kind === 'example') return source.path;
  if (source.kind === 'run') return source.example;
  return undefined;
}

/** What the address asks to open; `new` when it names nothing. */
export function sourceFromSearch(search: string): GraphSource {
  const q = new URLSearchParams(search);
  const example = q.get('example');
  if (example) return { kind: 'example', path: example };
  const graph = q.get('graph');
  if (graph) return { kind: 'saved', name: graph };
  return { kind: 'new' };
}

/** The search part that names `source` (other query keys kept); '' for a graph with no address. */
export function searchFor(source: GraphSource, current = ''): string {
  const q = new URLSearchParams(current);
  q.delete('example');
  q.delete('graph');
  if (source.kind === 'example') q.set('example', source.path);
  if (source.kind === 'saved') q.set('graph', source.name);
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Puts `source` into the page's address (without a new history entry); nothing outside a browser. */
export function showInAddress(source: GraphSource): void {
  if (typeof window === 'undefined' || !window.history) return;
  const search = searchFor(source, window.location.search);
  if (search !== window.location.search) window.history.replaceState(null, '', `${window.location.pathname}${search}`);
}
