// The inspector against a real `codefy serve`: a run with "Record outputs"
// on, then a wire's tooltip (shape and dtype) and a port's values in the side
// panel. Screenshots land in e2e-results/ for a person to look at.
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { chooseLanguage, setParam, shot } from './helpers';

/** Puts the mouse on a visible point of wire `id` (one no node covers), so that the wire is hovered. */
async function hoverEdge(page: Page, id: string) {
  const point = await page.evaluate((edgeId) => {
    const wrap = document.querySelector(`[data-testid="rf__edge-${edgeId}"]`);
    const path = wrap?.querySelector('path.react-flow__edge-path') as SVGPathElement | null;
    if (!wrap || !path) return null;
    const length = path.getTotalLength();
    const m = path.getScreenCTM()!;
    for (const f of [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8]) {
      const p = path.getPointAtLength(length * f);
      const x = p.x * m.a + p.y * m.c + m.e;
      const y = p.x * m.b + p.y * m.d + m.f;
      if (wrap.contains(document.elementFromPoint(x, y))) return { x, y };
    }
    return null;
  }, id);
  expect(point, `a visible point on wire ${id}`).not.toBeNull();
  await page.mouse.move(point!.x - 3, point!.y - 3);
  await page.mouse.move(point!.x, point!.y, { steps: 3 });
}

async function trainBriefly(page: Page, epochs: string) {
  await setParam(page, 'train', 'early_stopping_patience', '0');
  await setParam(page, 'train', 'epochs', epochs);
}

test('after a recorded run, a wire tells what it carried and the side panel shows a tensor port’s values', async ({ page }) => {
  await page.goto('/?example=toy-mlp');
  await expect(page.getByTestId('node-start')).toBeVisible();
  await expect(page.getByTestId('record-outputs')).not.toBeChecked(); // off by default
  await trainBriefly(page, '3');

  // Before any recorded run: no tooltip, and the side panel says how to get values.
  await hoverEdge(page, 'e4');
  await expect(page.getByTestId('edge-tooltip')).toHaveCount(0);
  await page.getByTestId('node-train').click();
  await expect(page.getByTestId('inspector')).toHaveAttribute('data-state', 'off');
  await page.getByTestId('side-panel').getByRole('button', { name: /Close/ }).click();

  await page.getByTestId('record-outputs').check();
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-print_acc')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });

  // mlp.model → train.model carries a model: its summary.
  await hoverEdge(page, 'e4');
  const tip = page.getByTestId('edge-tooltip');
  await expect(tip).toContainText('model · MODEL');
  await expect(tip).toContainText('class SequentialModel');
  await expect(tip).toContainText(/params \d+/);
  await shot(page, 'inspector-01-model-wire');
  await page.mouse.move(5, 400);
  await expect(tip).toHaveCount(0);

  // The TrainingLoop's losses: a tensor of one loss per epoch.
  await page.getByTestId('node-train').click();
  const inspector = page.getByTestId('inspector');
  await expect(inspector).toHaveAttribute('data-state', 'ready');
  await inspector.getByTestId('inspect-train-losses').click();
  await expect(inspector).toContainText('shape [3] · dtype float32');
  await expect(inspector).toContainText('Statistics of all 3 values');
  for (const stat of ['min', 'max', 'mean'])
    await expect(inspector.locator(`[data-stat="${stat}"] dd`)).toHaveText(/^\d+(\.\d+)?(e-?\d+)?$/);
  const table = page.getByTestId('inspector-table');
  await expect(table.locator('tbody tr')).toHaveCount(3);
  const losses = (await table.locator('tbody td').allTextContents()).map(Number);
  expect(losses.every((x) => x > 0 && Number.isFinite(x))).toBe(true);
  // min and max are the table's own smallest and largest loss.
  expect(Number(await inspector.locator('[data-stat="min"] dd').textContent())).toBeCloseTo(Math.min(...losses), 4);
  expect(Number(await inspector.locator('[data-stat="max"] dd').textContent())).toBeCloseTo(Math.max(...losses), 4);
  await page.getByTestId('side-panel').evaluate((el) => (el.scrollTop = el.scrollHeight));
  await shot(page, 'inspector-02-losses-table');

  // A non-tensor output shows its summary.
  await inspector.getByTestId('inspect-train-metrics').click();
  await expect(page.getByTestId('inspector-summary')).toContainText('final_train_loss');

  // The toggle is remembered.
  await page.reload();
  await expect(page.getByTestId('node-start')).toBeVisible();
  await expect(page.getByTestId('record-outputs')).toBeChecked();
});

/** toy-mlp with a Print fed by the TrainingLoop's losses, so that one wire carries a TENSOR. */
async function saveTensorGraph(request: APIRequestContext, name: string) {
  const graph = await (await request.get('/api/examples/load?path=toy-mlp')).json();
  graph.name = name;
  graph.nodes.push({ id: 'print_losses', type: 'Print', position: { x: 1100, y: 420 }, data: { params: { label: 'losses' } } });
  graph.edges.push({ id: 'e_losses', source: 'train', sourceHandle: 'losses', target: 'print_losses', targetHandle: 'value', type: 'data' });
  const { token } = await (await request.get('/api/auth/bootstrap')).json();
  const res = await request.post('/api/graph/save', { data: graph, headers: { 'X-CodefyUI-Token': token } });
  expect(res.ok(), await res.text()).toBe(true);
}

test('hovering a wire that carries a tensor shows its shape and dtype', async ({ page, request }) => {
  await saveTensorGraph(request, 'inspector-tensor-wire');
  await page.goto('/?graph=inspector-tensor-wire');
  await expect(page.getByTestId('node-print_losses')).toBeVisible();
  await trainBriefly(page, '4');
  await page.getByTestId('record-outputs').check();
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-print_losses')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });

  await hoverEdge(page, 'e_losses');
  const tip = page.getByTestId('edge-tooltip');
  await expect(tip).toContainText('losses · TENSOR');
  await expect(tip).toContainText('shape [4] · dtype float32');
  await shot(page, 'inspector-03-tensor-wire');

  // The same port from the side panel, in Traditional Chinese.
  await chooseLanguage(page, 'zh-TW');
  await page.getByTestId('node-train').click();
  await page.getByTestId('inspect-train-losses').click();
  await expect(page.getByTestId('inspector')).toContainText('形狀 [4] · 資料型別 float32');
  await expect(page.getByTestId('inspector-table').locator('tbody tr')).toHaveCount(4);
  await page.getByTestId('side-panel').evaluate((el) => (el.scrollTop = el.scrollHeight));
  await shot(page, 'inspector-04-losses-zh');
});
