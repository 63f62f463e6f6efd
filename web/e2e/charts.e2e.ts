// The run's charts and facts in Debian's chromium against a real `codefy
// serve` (see playwright.config.ts): a toy classification run with
// validation fills the loss, validation accuracy, learning rate and gradient
// norm charts, and the facts beside them say the precision asked and used
// and the effective batch. Screenshots land in e2e-results/.
import { expect, test, type Page } from '@playwright/test';
import { setParam, shot } from './helpers';

// The server keeps the toy graph's trained modules for its next run; forget
// them so the browser tests after this file see a first run again.
test.afterEach(async ({ request }) => {
  const { token } = (await (await request.get('/api/auth/bootstrap')).json()) as { token: string };
  const reset = await request.post('/api/execution/state/reset', { headers: { 'x-codefyui-token': token }, data: { graph_id: 'Toy MLP' } });
  expect(reset.ok()).toBe(true);
});

const attr = async (page: Page, testId: string, name: string) => Number((await page.getByTestId(testId).getAttribute(name)) ?? 0);

test('a run fills the accuracy, learning-rate and gradient-norm charts and shows its facts', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message)); // a chart that throws while drawing fails the test
  await page.goto('/?example=toy-mlp');
  await expect(page.getByTestId('node-start')).toBeVisible();
  await setParam(page, 'train', 'early_stopping_patience', '0');
  await setParam(page, 'train', 'epochs', '6');
  // fp16 on the CPU falls back to fp32 with a reason; two micro-batches of 32 per update.
  await setParam(page, 'train', 'precision', 'fp16');
  await setParam(page, 'train', 'accumulate_steps', '2');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-train')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });

  // The loss chart (shown first) drew its values.
  const loss = page.getByTestId('loss-chart');
  await expect.poll(() => attr(page, 'loss-chart', 'data-drawn')).toBeGreaterThan(6);
  await expect(loss).toHaveAttribute('data-node', 'train');
  await shot(page, 'charts-01-loss');

  // One validation accuracy per epoch, drawn when its tab is shown.
  expect(await attr(page, 'chart-val-accuracy', 'data-points')).toBe(6);
  await page.getByTestId('chart-tab-accuracy').click();
  await expect(page.getByTestId('chart-val-accuracy')).toBeVisible();
  await expect(loss).toBeHidden();
  await expect.poll(() => attr(page, 'chart-val-accuracy', 'data-drawn')).toBe(6);
  await expect(page.getByTestId('chart-tab-accuracy')).toContainText('%');
  await shot(page, 'charts-02-accuracy');

  // Learning rate and gradient norm: at least one point per epoch each (StepLR keeps lr at 0.05 here).
  for (const [tab, id] of [
    ['lr', 'chart-lr'],
    ['gradNorm', 'chart-grad-norm'],
  ] as const) {
    expect(await attr(page, id, 'data-points')).toBeGreaterThanOrEqual(6);
    await page.getByTestId(`chart-tab-${tab}`).click();
    await expect.poll(() => attr(page, id, 'data-drawn')).toBeGreaterThanOrEqual(6);
  }
  await shot(page, 'charts-03-grad-norm');

  // The facts: precision asked and used with the reason, effective batch = micro-batch × steps, memory.
  const facts = page.getByTestId('run-facts');
  await expect(facts.getByTestId('fact-precision')).toContainText('fp32 (asked fp16)');
  await expect(facts.getByTestId('fact-precision')).toContainText('not available');
  await expect(facts.getByTestId('fact-batch')).toHaveText('64 = 32 × 2');
  await expect(facts.getByTestId('fact-speed')).toHaveText(/^[\d,]+$/);
  await expect(facts.getByTestId('fact-memory')).toContainText(/cpu [\d.]+ (KiB|MiB|GiB)/);
  // The epoch lines say the accuracy too.
  await expect(page.getByTestId('messages')).toContainText('validation accuracy');
  await page.getByTestId('chart-tab-lr').click();
  await shot(page, 'charts-04-lr-and-facts');
  expect(errors).toEqual([]);
});
