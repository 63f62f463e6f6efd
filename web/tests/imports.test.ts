// The editor's folders are layers (DESIGN.md): dependencies point one way.
// graph/ is pure model code (no translation, no store); the stores are read
// by the views (charts/, inspector/, nodes/, panels/, canvas/) and import none
// of them; i18n/ knows nothing of the stores. This reads every import under
// src/ (static, re-exports, dynamic and type-only alike) and fails when a
// folder cycle comes back, naming the files that make it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** The folder under src/ that `path` (a file, or a folder imported through its index) is in; '.' for src/ itself. */
function folderOf(path: string): string {
  const parts = relative(src, path).split('/');
  return parts.length > 1 || (existsSync(path) && statSync(path).isDirectory()) ? parts[0]! : '.';
}

/** Every relative module a file names: `import … from`, `export … from`, `import '…'` and `import('…')`. */
function importsOf(text: string): string[] {
  const found: string[] = [];
  const pattern = /(?:import|export)\s[^'";]*?from\s*['"]([^'"]+)['"]|import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const m of text.matchAll(pattern)) {
    const spec = m[1] ?? m[2] ?? m[3]!;
    if (spec.startsWith('.')) found.push(spec);
  }
  return found;
}

/** For each folder, the folders it imports from, with the files (relative to src/) that do. */
function folderImports(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of sourceFiles(src)) {
    const from = folderOf(file);
    for (const spec of importsOf(readFileSync(file, 'utf8'))) {
      const to = folderOf(resolve(dirname(file), spec));
      if (to === from) continue;
      const targets = graph.get(from) ?? new Map<string, string[]>();
      graph.set(from, targets);
      const files = targets.get(to) ?? [];
      targets.set(to, files);
      const name = relative(src, file);
      if (!files.includes(name)) files.push(name);
    }
  }
  return graph;
}

const graph = folderImports();
/** Files in `from` that import something in `to` (relative to src/). */
const importers = (from: string, to: string): string[] => graph.get(from)?.get(to) ?? [];

describe('the folders of src/ import one way', () => {
  it('reads imports of every form', () => {
    const text = [
      "import { a } from '../store/a';",
      "import type {\n  B,\n} from '../i18n';",
      "export * from './c';",
      "import './d.css';",
      "const { e } = await import('../graph/layout');",
      "import { useMemo } from 'react';",
    ].join('\n');
    expect(importsOf(text)).toEqual(['../store/a', '../i18n', './c', './d.css', '../graph/layout']);
    // and it sees the imports the editor has (so an empty graph cannot pass the checks below)
    expect(importers('store', 'graph').length).toBeGreaterThan(0);
    expect(importers('panels', 'store').length).toBeGreaterThan(0);
  });

  it('graph/ is pure: it imports neither the UI strings nor a store', () => {
    expect(importers('graph', 'i18n')).toEqual([]);
    expect(importers('graph', 'store')).toEqual([]);
  });

  it.each(['i18n', 'charts', 'inspector'])('store/ and %s/ do not import each other both ways', (other) => {
    const there = importers('store', other);
    const back = importers(other, 'store');
    // On failure: the files on both sides of the cycle.
    expect(there.length > 0 && back.length > 0 ? { [`store → ${other}`]: there, [`${other} → store`]: back } : {}).toEqual({});
  });

  it('no folder imports, through others, a folder that imports it', () => {
    const cycles = new Set<string>();
    const visit = (folder: string, path: string[]) => {
      for (const next of graph.get(folder)?.keys() ?? []) {
        const at = path.indexOf(next);
        if (at >= 0) cycles.add([...path.slice(at), next].join(' → '));
        else visit(next, [...path, next]);
      }
    };
    for (const folder of graph.keys()) visit(folder, [folder]);
    expect([...cycles]).toEqual([]);
  });
});
