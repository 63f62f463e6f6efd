// The editor in Traditional Chinese: switched from the toolbar, kept across a
// reload, and used for a whole run; then the light theme after a run.
// Screenshots land in e2e-results/ for a person to look at.
import { expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { chooseLanguage, setParam, shot } from './helpers';

/** The Chinese text of the pipeline's node types (src/i18n/nodes/zh-TW/pipeline.json). */
const zhNodes: Record<string, { description: string; params?: Record<string, string>; inputs?: Record<string, string> }> =
  JSON.parse(readFileSync(new URL('../src/i18n/nodes/zh-TW/pipeline.json', import.meta.url), 'utf8'));
/** The Chinese text of the layer types' params (src/i18n/nodes/zh-TW/layer-types.json). */
const zhLayers: Record<string, { params: Record<string, string> }> = JSON.parse(
  readFileSync(new URL('../src/i18n/nodes/zh-TW/layer-types.json', import.meta.url), 'utf8'),
);
const containing = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));

test('switching to 繁體中文 turns the toolbar, palette and run messages Chinese, and survives a reload', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByTestId('palette-item-TrainingLoop')).toBeVisible();
  await expect(page.getByTestId('run')).toContainText('Run');
  await expect(page.locator('html')).toHaveAttribute('lang', 'en');

  await chooseLanguage(page, { label: '繁體中文' });
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-TW');
  await expect(page.getByTestId('run')).toContainText('執行');
  await expect(page.getByTestId('stop')).toContainText('停止');
  await expect(page.getByTestId('save')).toHaveText('儲存');
  await expect(page.getByTestId('import')).toHaveText('匯入');
  await expect(page.getByTestId('export')).toHaveText('匯出');
  await expect(page.getByTestId('palette-search')).toHaveAttribute('placeholder', '搜尋節點');
  await expect(page.getByTestId('palette')).toContainText('把節點拖曳到畫布上');
  // The categories too, the pipeline's first.
  await expect(page.locator('.palette-group h3').first()).toHaveText('控制');
  await expect(page.getByTestId('palette')).toContainText('張量運算');
  await expect(page.getByTestId('messages')).toContainText('警告、錯誤與執行紀錄會顯示在這裡。');
  await expect(page.getByText('Drag nodes here from the palette')).toHaveCount(0);
  await shot(page, 'i18n-01-switched');

  await page.reload();
  await expect(page.getByTestId('palette-item-TrainingLoop')).toBeVisible();
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-TW');
  await page.getByTestId('settings').click();
  await expect(page.getByTestId('language-select')).toHaveValue('zh-TW');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('run')).toContainText('執行');
  await expect(page.getByTestId('palette-search')).toHaveAttribute('placeholder', '搜尋節點');

  // A whole run in Chinese: the editor's messages, and the nodes' descriptions, params and ports.
  await page.goto('/?example=toy-mlp');
  await expect(page.getByTestId('node-start')).toBeVisible();
  await expect(page.getByTestId('messages')).toContainText('已開啟「');
  await setParam(page, 'train', 'early_stopping_patience', '0');
  await setParam(page, 'train', 'epochs', '3');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-print_acc')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });
  const messages = page.getByTestId('messages');
  await expect(messages).toContainText('開始執行。');
  await expect(messages).toContainText('第 3/3 輪：損失');
  await expect(messages).toContainText('執行完成。');
  await expect(messages.locator('.message-level').first()).toHaveText('資訊');
  await expect(page.getByTestId('loss-chart')).toContainText('訓練損失');
  await expect(page.getByTestId('node-train')).toContainText('第 3/3 輪');
  await shot(page, 'i18n-02-toy-mlp-run');

  const loop = zhNodes.TrainingLoop!;
  await expect(page.getByTestId('palette-item-TrainingLoop').locator('.palette-desc')).toHaveText(loop.description);
  const train = page.getByTestId('node-train');
  await expect(train.locator('.cnode-title')).toHaveAttribute('title', loop.description);
  await expect(train.locator('.cnode-title')).toHaveText('TrainingLoop'); // names stay as graph files write them
  await expect(train.locator('.port-label.in', { hasText: 'model' })).toHaveAttribute('title', containing(loop.inputs!.model!));
  await train.locator('.cnode-title').click();
  const panel = page.getByTestId('side-panel');
  await expect(panel).toContainText(loop.description);
  await expect(panel.locator('.param', { has: page.getByTestId('panel-param-train-epochs') })).toHaveAttribute(
    'title',
    containing(loop.params!.epochs!),
  );
  await shot(page, 'i18n-02b-node-text');
  // The layer editor: each layer param's hint, and the layer categories.
  await page.getByTestId('node-mlp').locator('.cnode-title').click();
  await page.getByTestId('layer-editor-open').click();
  await expect(page.getByTestId('layer-editor')).toBeVisible();
  await expect(page.locator('label.layer-param', { has: page.getByTestId('layer-param-0-in_features') })).toHaveAttribute(
    'title',
    containing(zhLayers.Linear!.params.in_features!),
  );
  await expect(page.getByTestId('layer-add-type').locator('optgroup[label="線性層"]')).toHaveCount(1);
  await expect(page.getByTestId('layer-total')).toContainText('1×4'); // the shapes are in before the screenshot
  await shot(page, 'i18n-02c-layer-editor');
  await page.getByTestId('layer-editor-close').click();
  await page.keyboard.press('Escape');

  // Back to English without a reload: every visible string follows.
  await chooseLanguage(page, 'en');
  await expect(page.getByTestId('run')).toContainText('Run');
  await expect(page.getByTestId('loss-chart')).toContainText('training loss');
  await expect(page.getByTestId('node-train')).toContainText('epoch 3/3');
});

test.describe('light theme', () => {
test.use({ deviceScaleFactor: 2 }); // sharp close-ups of small node text

test('the light theme after a run (screenshots for contrast)', async ({ page }) => {
  await page.goto('/?example=toy-mlp');
  await expect(page.getByTestId('node-start')).toBeVisible();
  await setParam(page, 'train', 'early_stopping_patience', '0');
  await setParam(page, 'train', 'epochs', '4');
  await page.getByTestId('theme-toggle').click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-print_acc')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });
  await page.getByTestId('node-train').click();
  await shot(page, 'i18n-03-light-after-run');
  // Close-ups: a trained node with its progress line, and the chart with its legend.
  await page.getByTestId('node-train').screenshot({ path: 'e2e-results/i18n-03a-light-node.png' });
  await page.locator('.bottom-panel').screenshot({ path: 'e2e-results/i18n-03b-light-bottom.png' });
  const drawn = Number(await page.getByTestId('loss-chart').getAttribute('data-drawn'));
  expect(drawn).toBeGreaterThan(0);
  // The legend lists the series with values, and only those (a 4-epoch run may have no per-update losses).
  const plot = page.getByTestId('loss-chart').locator('.uplot-host');
  const series = (await plot.getAttribute('data-series'))!;
  expect(series).toMatch(/^[01]{3}$/);
  const rows = plot.locator('.u-legend .u-series');
  await expect(rows.filter({ visible: true })).toHaveCount(series.replaceAll('0', '').length);
  for (const [i, label] of ['training loss', 'epoch loss', 'validation loss'].entries())
    if (series[i] === '1') await expect(rows.filter({ hasText: label })).toBeVisible();
    else await expect(rows.filter({ hasText: label })).toBeHidden();
  await chooseLanguage(page, 'zh-TW');
  await expect(page.getByTestId('run')).toContainText('執行');
  // The chart is made again with Chinese labels, and its values drawn again on it (it once stayed empty).
  await expect(page.getByTestId('loss-chart')).toHaveAttribute('data-drawn', String(drawn));
  await shot(page, 'i18n-04-light-after-run-zh');
});
});
