import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NodeDefinition } from '../src/api/types';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = join(here, '..', '..');

/** /api/nodes as this repository's server answers it (`codefy nodes --json`). */
export const nodeDefs: NodeDefinition[] = JSON.parse(readFileSync(join(here, 'fixtures', 'nodes.json'), 'utf8'));
export const defsByName: Record<string, NodeDefinition> = Object.fromEntries(nodeDefs.map((d) => [d.node_name, d]));

export function def(name: string): NodeDefinition {
  const d = defsByName[name];
  if (!d) throw new Error(`no definition ${name}`);
  return d;
}

/** Every .json graph under examples/, as [path relative to the repo, parsed JSON]. */
export function exampleGraphs(): [string, unknown][] {
  const out: [string, unknown][] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.json')) out.push([relative(repoRoot, p), JSON.parse(readFileSync(p, 'utf8'))]);
    }
  };
  walk(join(repoRoot, 'examples'));
  return out;
}
