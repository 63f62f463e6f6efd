// Times how long the editor takes to show a large graph, in headless
// chromium against a running `codefy serve`: from the navigation to the
// moment every node is on the canvas. Usage:
//   node bench/editor/open_graph.mjs <base url> <nodes> <reps>
// Prints one JSON line per case: laid out by the file (positions given) and
// by the editor (no positions: dagre), median and spread over reps.
import { chromium } from '../../web/node_modules/playwright-core/index.mjs';

const [base = 'http://127.0.0.1:18810', count = '300', reps = '5'] = process.argv.slice(2);
const n = Number(count);

/** A chain Start -> ToyDataset -> Print x (n-2): n nodes, n-1 edges, a valid CodefyUI graph. */
function chain(withPositions) {
  const nodes = [{ id: 'start', type: 'Start', data: { params: {} } }, { id: 'data', type: 'ToyDataset', data: { params: {} } }];
  const edges = [{ id: 't', source: 'start', target: 'data', type: 'trigger' }];
  let prev = 'data', port = 'dataset';
  for (let i = 0; i < n - 2; i++) {
    const id = `p${i}`;
    nodes.push({ id, type: 'Print', data: { params: { label: `step ${i}` } } });
    edges.push({ id: `e${i}`, source: prev, sourceHandle: port, target: id, targetHandle: 'value', type: 'data' });
    prev = id;
    port = 'value';
  }
  if (withPositions) nodes.forEach((node, i) => (node.position = { x: (i % 20) * 260, y: Math.floor(i / 20) * 220 }));
  return { name: `chain-${n}${withPositions ? '' : '-unplaced'}`, description: 'benchmark', nodes, edges };
}

async function save(graph) {
  const token = (await (await fetch(`${base}/api/auth/bootstrap`)).json()).token;
  const r = await fetch(`${base}/api/graph/save`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-codefyui-token': token },
    body: JSON.stringify({ ...graph, overwrite: true }),
  });
  if (!r.ok) throw new Error(`save: ${r.status} ${await r.text()}`);
  return (await r.json()).file;
}

const browser = await chromium.launch({
  executablePath: process.env.CODEFY_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
         '--no-first-run', '--disable-sync'],
});
for (const withPositions of [true, false]) {
  const file = await save(chain(withPositions));
  const times = [];
  for (let r = 0; r < Number(reps); r++) {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const t0 = Date.now();
    await page.goto(`${base}/?graph=${encodeURIComponent(file)}`);
    await page.waitForFunction((want) => document.querySelectorAll('.react-flow__node').length >= want, n, { timeout: 60000 });
    times.push(Date.now() - t0);
    await page.close();
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ case: withPositions ? 'positions in the file' : 'laid out by the editor', nodes: n,
                               median_ms: times[Math.floor(times.length / 2)], min_ms: times[0], max_ms: times.at(-1) }));
}
await browser.close();
