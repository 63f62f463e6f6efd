// The Runs panel (issue #30) in Debian's chromium against a real `codefy
// serve` (see playwright.config.ts): the toy MLP run twice from the editor
// with different learning rates shows in the panel (the current run while it
// runs), the two compared (curves, the lr row of the settings that differ,
// metrics; in Traditional Chinese and the light theme too), one deleted; a
// run of the command line, kept in the server's run history, opened in a tab
// of its own and run again there. Screenshots land in e2e-results/.
import { execFileSync } from 'node:child_process';
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { chooseLanguage, openExample, setParam, shot } from './helpers';

async function token(request: APIRequestContext): Promise<string> {
  return ((await (await request.get('/api/auth/bootstrap')).json()) as { token: string }).token;
}

/** Forgets a graph's kept modules: the next run of it trains from fresh weights. */
async function resetState(request: APIRequestContext, graph: string) {
  const reset = await request.post('/api/execution/state/reset', { headers: { 'x-codefyui-token': await token(request) }, data: { graph_id: graph } });
  expect(reset.ok()).toBe(true);
}

// The server keeps the toy graph's trained modules for its next run; the files after this one see a first run again.
test.afterEach(async ({ request }) => {
  await resetState(request, 'Toy MLP');
});

const rows = (page: Page) => page.locator('[data-testid^="runs-row-"]');
const idOf = async (row: ReturnType<typeof rows>) => (await row.getAttribute('data-testid'))!.replace('runs-row-', '');

/** Runs the shown graph from the toolbar and waits until its training ended. */
async function runToEnd(page: Page) {
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-train')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });
  await expect(page.getByTestId('run')).toBeEnabled();
}

test('two runs with different learning rates: listed live, compared, one deleted', async ({ page, request }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message)); // a chart that throws while drawing fails the test

  await openExample(page, 'toy-mlp');
  await setParam(page, 'train', 'early_stopping_patience', '0');
  await setParam(page, 'train', 'epochs', '8');
  await setParam(page, 'optimizer', 'lr', '0.05');

  // The panel open while the first run runs: it shows there as it runs (the panel asks every 2 s meanwhile).
  await page.getByTestId('runs-panel-toggle').click();
  const panel = page.getByTestId('runs-panel');
  await expect(panel).toBeVisible();
  await expect(panel).toHaveAttribute('data-loading', 'false');
  const before = await rows(page).count(); // other files' runs of this graph, when the whole suite runs
  await page.getByTestId('run').click();
  await expect(rows(page)).toHaveCount(before + 1, { timeout: 30_000 });
  const first = await idOf(rows(page).first());
  const firstRow = page.getByTestId(`runs-row-${first}`);
  await expect(firstRow).toContainText('Toy MLP');
  await expect(firstRow).toContainText('this editor');
  if ((await firstRow.getAttribute('data-status')) === 'running') await shot(page, 'runs-01-live');
  await expect(page.getByTestId('node-train')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });
  await expect(firstRow).toHaveAttribute('data-status', 'completed', { timeout: 15_000 });
  await expect(page.getByTestId('run')).toBeEnabled();

  // The second run from fresh weights with a smaller learning rate.
  await page.getByTestId('runs-panel-toggle').click();
  await resetState(request, 'Toy MLP');
  await setParam(page, 'optimizer', 'lr', '0.01');
  await runToEnd(page);
  await page.getByTestId('runs-panel-toggle').click();
  await expect(rows(page)).toHaveCount(before + 2);
  const second = await idOf(rows(page).first()); // newest first
  expect(second).not.toBe(first);
  for (const id of [first, second]) {
    const row = page.getByTestId(`runs-row-${id}`);
    await expect(row).toHaveAttribute('data-status', 'completed');
    await expect(row).toContainText('fp32');
    await expect(row).toContainText('%'); // its validation accuracy
  }

  // Sorting by final loss puts the run with the lower one first.
  await page.getByTestId('runs-sort-loss').click();
  await expect(page.getByTestId('runs-sort-loss').locator('..')).toHaveAttribute('aria-sort', 'ascending');
  await page.getByTestId('runs-sort-when').click();

  // Both ticked: their curves, the lr row with both values, the metrics.
  await page.getByTestId(`runs-select-${first}`).check();
  await page.getByTestId(`runs-select-${second}`).check();
  const compare = page.getByTestId('runs-compare');
  await expect(compare).toBeVisible();
  await expect(page.getByTestId(`runs-legend-${first}`)).toContainText('Toy MLP');
  await expect(page.getByTestId(`runs-legend-${second}`)).toContainText(second);
  const colours = await Promise.all([first, second].map((id) => page.getByTestId(`runs-legend-${id}`).getAttribute('data-color')));
  expect(colours[0]).not.toBe(colours[1]);
  for (const kind of ['epochLoss', 'valLoss', 'valAccuracy', 'lr']) {
    const chart = page.getByTestId(`runs-chart-${kind}`);
    await expect(chart).toHaveAttribute('data-series', '2');
    await expect(chart).toHaveAttribute('data-points', '16'); // 8 epochs × 2 runs
    await expect(chart.locator('canvas')).toBeVisible();
  }
  const lrRow = page.getByTestId('runs-diff-optimizer.params.lr');
  await expect(lrRow).toBeVisible();
  await expect(lrRow.getByRole('cell')).toHaveText(['0.05', '0.01']);
  // Only what differs: the epochs and the batch were the same.
  await expect(page.getByTestId('runs-diff-train.params.epochs')).toHaveCount(0);
  await expect(page.getByTestId('runs-metric-train.final_train_loss').getByRole('cell')).toHaveCount(2);
  await expect(page.getByTestId('runs-metric-duration_s')).toBeVisible();
  await shot(page, 'runs-02-compare');
  await page.getByTestId('runs-metrics').scrollIntoViewIfNeeded();
  await shot(page, 'runs-03-compare-tables');

  // The same in Traditional Chinese (the language is chosen in the settings dialog; the panel keeps its ticks).
  await chooseLanguage(page, { label: '繁體中文' });
  await expect(panel).toBeVisible();
  await expect(page.getByTestId('runs-panel-toggle')).toHaveText('執行紀錄');
  await expect(page.getByTestId('runs-compare')).toContainText('比較 2 個執行');
  await expect(page.getByTestId('runs-chart-valAccuracy')).toContainText('驗證準確率');
  await expect(page.getByTestId('runs-metric-train.final_train_loss')).toContainText('最終訓練損失');
  await shot(page, 'runs-04-compare-tables-zh-TW');
  await panel.evaluate((el) => (el.scrollTop = 0));
  await expect(page.getByTestId('runs-sort-loss')).toContainText('最終損失');
  await shot(page, 'runs-04-compare-zh-TW');
  await chooseLanguage(page, { label: 'English' });

  // The run colours on the light theme.
  await page.getByTestId('theme-toggle').click();
  await panel.evaluate((el) => (el.scrollTop = 0));
  await expect(page.getByTestId('runs-chart-lr').locator('canvas')).toBeVisible();
  await shot(page, 'runs-04-compare-light-theme');
  await page.getByTestId('theme-toggle').click();

  // Delete asks first; the run leaves the list and the comparison (one run left: nothing to compare).
  page.once('dialog', (d) => void d.accept());
  await page.getByTestId(`runs-delete-${second}`).click();
  await expect(page.getByTestId('runs-notice')).toHaveText(`Deleted ${second}.`);
  await expect(page.getByTestId(`runs-row-${second}`)).toHaveCount(0);
  await expect(page.getByTestId('runs-compare')).toHaveCount(0);
  await expect(page.getByTestId('runs-selection')).toHaveAttribute('data-count', '1');
  const history = (await (await request.get('/api/runs?history=1&limit=1000')).json()) as { runs: { run_id: string; from_history?: boolean }[] };
  expect(history.runs.filter((r) => r.run_id === second && r.from_history)).toEqual([]);
  await shot(page, 'runs-05-deleted');

  expect(errors).toEqual([]);
});

test('a run’s graph as it ran opens in a tab of its own and runs again there', async ({ page, request }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await openExample(page, 'toy-mlp');
  await page.getByTestId('runs-panel-toggle').click();
  const panel = page.getByTestId('runs-panel');
  await expect(panel).toHaveAttribute('data-loading', 'false');
  const before = await rows(page).count();

  // A run of the command line, kept in the run history this server keeps (its data folder; see playwright.config.ts).
  execFileSync('../build/codefy', ['run', '../examples/toy-mlp/graph.json', '--data-dir', 'e2e-results/data', '--out', 'e2e-results/cli-out'], {
    timeout: 90_000,
    stdio: 'ignore',
  });
  const listed = (await (await request.get('/api/runs?history=1&source=cli&limit=1')).json()) as { runs: { run_id: string }[] };
  const cli = listed.runs[0]!.run_id;
  const short = cli.slice(-6); // "20261203-181500-3fa2b1": its random tail
  await expect(rows(page)).toHaveCount(before + 1, { timeout: 30_000 }); // the panel asks every 10 s while nothing runs
  await expect(page.getByTestId(`runs-row-${cli}`)).toContainText(short);

  await page.getByTestId(`runs-open-${cli}`).click();
  await expect(panel).toBeHidden();
  await expect(page.locator('[role="tab"][data-active="true"]')).toContainText(`Toy MLP @ ${short}`);
  await expect(page.getByTestId('graph-name')).toHaveValue(`Toy MLP @ ${short}`);
  await expect(page.getByTestId('param-optimizer-lr')).toHaveValue('0.05');
  await expect(page.getByTestId('node-train')).toBeVisible();
  await shot(page, 'runs-07-snapshot-opened');

  // "This graph" is now the snapshot's, which has no runs yet; all graphs list the run again.
  await page.getByTestId('runs-panel-toggle').click();
  await expect(page.getByTestId('runs-empty')).toHaveText(`No runs of “Toy MLP @ ${short}” kept yet.`);
  await page.getByTestId('runs-scope-all').click();
  await expect(page.getByTestId(`runs-row-${cli}`)).toBeVisible();
  const total = await rows(page).count();
  await page.getByTestId(`runs-rerun-${cli}`).click();
  await expect(rows(page)).toHaveCount(total + 1, { timeout: 30_000 });
  const rerun = await idOf(rows(page).first());
  const rerunRow = page.getByTestId(`runs-row-${rerun}`);
  await expect(rerunRow).toContainText(`Toy MLP @ ${short}`);
  await expect(rerunRow).toContainText('this editor');
  await expect(rerunRow).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });
  await expect(page.getByTestId('graph-name')).toHaveValue(`Toy MLP @ ${short}`);
  await expect(page.getByTestId('tab-bar').getByRole('tab')).toHaveCount(3); // the example, the snapshot opened, the one run again
  await shot(page, 'runs-08-run-again');

  await resetState(request, `Toy MLP @ ${short}`);
  expect(errors).toEqual([]);
});
