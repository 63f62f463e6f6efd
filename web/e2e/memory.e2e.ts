// Memory before Run (issue 29) in Debian's chromium against a real `codefy
// serve` (see playwright.config.ts): Plan memory trains a few steps of the
// toy graph's TrainingLoop on the CPU; its Memory section draws the predicted
// peak against the device's memory in its parts and lists the options; Apply
// sets the batch size, accumulation steps and precision as one undo step; a
// run's measured peak stands beside the prediction; and Run with a fresh plan
// that predicts no fit warns and still runs. Screenshots land in e2e-results/.
import { expect, test, type Page } from '@playwright/test';
import type { PlanResponse } from '../src/api/types';
import { chooseLanguage, openExample, setParam, shot } from './helpers';

// The server keeps the toy graph's trained modules for its next run; forget
// them so the browser tests after this file see a first run again.
test.afterEach(async ({ request }) => {
  const { token } = (await (await request.get('/api/auth/bootstrap')).json()) as { token: string };
  const reset = await request.post('/api/execution/state/reset', { headers: { 'x-codefyui-token': token }, data: { graph_id: 'Toy MLP' } });
  expect(reset.ok()).toBe(true);
});

const num = async (page: Page, testId: string, name: string) => Number((await page.getByTestId(testId).getAttribute(name)) ?? NaN);

/** The side panel's value of a TrainingLoop param folded under Advanced. */
async function advancedValue(page: Page, param: string): Promise<string> {
  const field = page.getByTestId(`panel-param-train-${param}`);
  if (!(await field.isVisible())) await page.getByTestId('panel-advanced-train').click();
  return field.inputValue();
}

/** The side panel with the Memory section scrolled to its top (the section is taller than the panel shows at once). */
async function sectionShot(page: Page, name: string) {
  await page.getByTestId('memory').evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await page.getByTestId('side-panel').screenshot({ path: `e2e-results/${name}.png` });
}

/** Plans from the toolbar and waits for the Memory section to show the plan. */
async function planMemory(page: Page) {
  await page.getByTestId('plan-memory').click();
  const memory = page.getByTestId('memory');
  await expect(memory).toBeVisible();
  await expect(memory).toHaveAttribute('data-state', 'ready', { timeout: 90_000 });
  await expect(page.getByTestId('plan-memory')).toBeEnabled();
}

test('Plan memory draws the prediction and the options; Apply is one undo step; a run’s peak stands beside it', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await openExample(page, 'toy-mlp');
  await page.getByTestId('device-select').selectOption('cpu');
  // A short run, so that the plan made next is fresh for it.
  await setParam(page, 'train', 'epochs', '3');
  await setParam(page, 'train', 'early_stopping_patience', '0');

  // Planning: the toolbar's action and the TrainingLoop's section say so while the server measures
  // (the request waits for the screenshot before it goes to the server: the toy plan takes about a second).
  let send = () => {};
  const sent = new Promise<void>((resolve) => (send = resolve));
  await page.route('**/api/graph/plan', async (route) => {
    await sent;
    await route.continue();
  });
  await page.getByTestId('plan-memory').click();
  const memory = page.getByTestId('memory');
  await expect(page.getByTestId('plan-memory')).toBeDisabled();
  await expect(page.getByTestId('plan-memory')).toHaveText('Planning…');
  await expect(memory).toHaveAttribute('data-state', 'planning');
  await expect(memory.getByRole('status')).toHaveText('Planning: training a few steps on cpu…');
  await shot(page, 'memory-01-planning');
  send();
  await expect(memory).toHaveAttribute('data-state', 'ready', { timeout: 90_000 });
  await shot(page, 'memory-02-plan');

  // The bar: a real prediction against the CPU's memory, in its parts.
  const predicted = await num(page, 'memory-bar', 'data-predicted');
  const available = await num(page, 'memory-bar', 'data-available');
  expect(predicted).toBeGreaterThan(0);
  expect(available).toBeGreaterThan(0);
  for (const part of ['weights', 'activations'])
    expect(await num(page, `memory-seg-${part}`, 'data-bytes'), part).toBeGreaterThan(0);
  await expect(page.getByTestId('memory-verdict')).toHaveText(/^predicted peak [\d.]+ (B|KiB|MiB|GiB) of [\d.]+ (B|KiB|MiB|GiB) · (fits|does not fit)$/);
  await expect(memory).toContainText('now: fp32, micro-batch 32 × 1 steps = 32');
  // The toy model's peak is a sliver of the 1 GiB budget (playwright.config.ts): its parts are drawn once more on their own.
  if (predicted < available / 10) await expect(page.getByTestId('memory-zoom')).toBeVisible();
  await sectionShot(page, 'memory-03-section');

  // The options: each with real numbers and a mark; the graph's own way is the current row.
  const rows = page.getByTestId('memory-options').locator('tbody tr');
  const count = await rows.count();
  expect(count).toBeGreaterThan(1);
  for (let i = 0; i < count; i++) {
    const cells = await rows.nth(i).locator('td').allTextContents();
    expect(cells[0]).toMatch(/^(fp32|bf16|fp16)$/);
    expect(Number(cells[1]) * Number(cells[2])).toBe(Number(cells[3]));
    expect(cells[4]).toMatch(/^[\d.]+ (B|KiB|MiB|GiB)$/);
    expect(cells[5]).toMatch(/^[✓✗]$/);
  }

  // Apply a row that changes the graph: the suggested one when it does, else the first that does.
  const enabled = page.locator('[data-testid^="memory-option-"][data-current="false"]');
  expect(await enabled.count()).toBeGreaterThan(0);
  const best = page.locator('[data-testid^="memory-option-"].best[data-current="false"]');
  const row = (await best.count()) > 0 ? best.first() : enabled.first();
  const [precision, micro, steps] = await row.locator('td').allTextContents();
  await row.getByRole('button', { name: 'Apply' }).click();
  await expect(page.getByTestId('param-loader-batch_size')).toHaveValue(micro!);
  expect(await advancedValue(page, 'accumulate_steps')).toBe(steps);
  expect(await advancedValue(page, 'precision')).toBe(precision);
  await expect(memory).toHaveAttribute('data-state', 'stale');
  await expect(page.getByTestId('toasts')).toContainText(`Applied the memory plan to train: ${precision}, micro-batch ${micro} × ${steps} steps.`);
  await shot(page, 'memory-04-applied');

  // One undo takes all three back.
  await page.getByTestId('undo').click();
  await expect(page.getByTestId('param-loader-batch_size')).toHaveValue('32');
  expect(await advancedValue(page, 'accumulate_steps')).toBe('1');
  expect(await advancedValue(page, 'precision')).toBe('fp32');
  await expect(memory).toHaveAttribute('data-state', 'ready');

  // A run: its measured peak stands beside the prediction.
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-train')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });
  const measured = page.getByTestId('memory-measured');
  await expect(measured).toHaveText(/^measured [\d.]+ (B|KiB|MiB|GiB) beside predicted [\d.]+ (B|KiB|MiB|GiB)$/);
  expect(await num(page, 'memory-measured', 'data-measured')).toBeGreaterThan(0);
  await expect(page.getByTestId('memory-measured-mark')).toBeVisible();
  await shot(page, 'memory-05-measured');
  await sectionShot(page, 'memory-06-measured-section');

  // The same in Traditional Chinese, in the light theme.
  await chooseLanguage(page, { label: '繁體中文' });
  await page.getByTestId('theme-toggle').click();
  await expect(memory.locator('h3')).toHaveText('記憶體');
  await expect(measured).toContainText('實測');
  await shot(page, 'memory-07-zh-TW-light');
  await sectionShot(page, 'memory-08-zh-TW-light-section');
  expect(errors).toEqual([]);
});

test('Run with a fresh plan that predicts no fit warns with the suggestion and still runs', async ({ page }) => {
  await openExample(page, 'toy-mlp');
  await page.getByTestId('device-select').selectOption('cpu');
  await setParam(page, 'train', 'epochs', '2');
  await setParam(page, 'train', 'early_stopping_patience', '0');
  // The toy graph fits any machine: the server's real plan is told that how the graph trains now
  // does not (its numbers and other options stay the server's).
  await page.route('**/api/graph/plan', async (route) => {
    const res = await route.fetch();
    const body = (await res.json()) as PlanResponse;
    for (const p of body.plans) {
      p.fits = false;
      for (const o of p.options)
        if (o.precision === p.precision && o.micro_batch === p.micro_batch && o.accumulate_steps === p.accumulate_steps) o.fits = false;
    }
    body.fits = false;
    await route.fulfill({ response: res, json: body });
  });
  await planMemory(page);
  await expect(page.getByTestId('memory-verdict')).toContainText('does not fit');
  await page.getByTestId('run').click();
  const warning = page.getByTestId('toast').filter({ hasText: 'may not fit in memory' });
  await expect(warning).toBeVisible();
  // The suggestion is another way to train: not fp32 with micro-batch 32 in 1 step, which the plan now says does not fit.
  await expect(warning).toContainText(/Suggestion: (fp32|bf16), micro-batch \d+ × \d+ steps/);
  await expect(warning).not.toContainText('Suggestion: fp32, micro-batch 32 × 1 steps');
  await expect(page.getByTestId('messages')).toContainText('The run starts anyway.');
  await shot(page, 'memory-09-no-fit-warning');
  // A warning, not a refusal: the run goes on to the end.
  await expect(page.getByTestId('node-train')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });
});
