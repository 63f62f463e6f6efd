// Times the loss chart's update with a long series in headless chromium:
// bundles chart_bench.ts (the editor's reducer and chart code, and the code
// they replaced) with esbuild, loads it into a blank page and prints one JSON
// line per case. Usage: node bench/editor/chart_update.mjs <points> <updates>
import { build } from '../../web/node_modules/esbuild/lib/main.js';
import { chromium } from '../../web/node_modules/playwright-core/index.mjs';
import { fileURLToPath } from 'node:url';

const [points = '100000', updates = '200'] = process.argv.slice(2);
const entry = fileURLToPath(new URL('./chart_bench.ts', import.meta.url));
const out = await build({
  entryPoints: [entry],
  bundle: true,
  write: false,
  format: 'iife',
  target: 'es2022',
  minify: true,
  nodePaths: [fileURLToPath(new URL('../../web/node_modules', import.meta.url))],
});
const browser = await chromium.launch({
  executablePath: process.env.CODEFY_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
         '--no-first-run', '--disable-sync'],
});
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
await page.setContent('<!doctype html><html><body></body></html>');
await page.addScriptTag({ content: out.outputFiles[0].text });
const results = await page.evaluate(([n, u]) => window.runBench(n, u), [Number(points), Number(updates)]);
for (const r of results) console.log(JSON.stringify(r));
await browser.close();
