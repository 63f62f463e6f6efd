// The layer editor (SequentialModel's layers) in Debian's chromium against a
// real `codefy serve`: each layer's output shape from POST /api/layers/shapes,
// shapes that follow an edit, a layer added from GET /api/layers' types, and
// the edited model trained. Screenshots land in e2e-results/.
import { expect, test, type Page } from '@playwright/test';
import { setParam, shot } from './helpers';

const row = (page: Page, i: number) => page.getByTestId(`layer-row-${i}`);

/** The fashion-mnist CNN's layers and their shapes for one 1×28×28 image. */
const fashionShapes = [
  '1,16,28,28', '1,16,28,28', '1,16,28,28', '1,16,14,14',
  '1,32,14,14', '1,32,14,14', '1,32,14,14', '1,32,7,7',
  '1,1568', '1,128', '1,128', '1,10',
];

test('the layer editor shows each layer’s shape, follows an edit, adds a layer, and the model trains', async ({ page }) => {
  await page.goto('/?example=fashion-mnist');
  await expect(page.getByTestId('node-cnn')).toBeVisible();
  await page.getByTestId('param-cnn-layers').click();  // the layer spec opens the side panel
  await page.getByTestId('layer-editor-open').click();
  const editor = page.getByTestId('layer-editor');
  await expect(editor).toBeVisible();
  await expect(page.getByTestId('layer-input-shape')).toHaveValue('1, 28, 28');  // from the graph's Dataset

  for (const [i, shape] of fashionShapes.entries()) await expect(row(page, i)).toHaveAttribute('data-shape', shape);
  await expect(row(page, 12)).toHaveCount(0);
  await expect(row(page, 0)).toContainText('160 params');
  await expect(page.getByTestId('layer-total')).toContainText('1×10');
  await expect(page.getByTestId('layer-total')).toContainText('207,018 params');
  await shot(page, 'layers-01-fashion-cnn');

  // A wider second convolution: its shape and the pool's after it change; the
  // BatchNorm still built for 32 channels is marked with the server's message.
  await page.getByTestId('layer-param-4-out_channels').fill('64');
  await expect(row(page, 4)).toHaveAttribute('data-shape', '1,64,14,14');
  await expect(row(page, 5)).toHaveAttribute('data-error', 'true');
  await expect(row(page, 5)).toContainText('b2');
  await expect(row(page, 5)).toContainText('[1, 64, 14, 14]');
  await expect(row(page, 7)).toHaveAttribute('data-shape', '');  // nothing after the failing layer
  await expect(page.getByTestId('layer-total')).toContainText('b2');
  await shot(page, 'layers-02-mismatch-marked');

  await page.getByTestId('layer-param-5-num_features').fill('64');
  await expect(row(page, 7)).toHaveAttribute('data-shape', '1,64,7,7');
  await expect(row(page, 8)).toHaveAttribute('data-shape', '1,3136');  // the Flatten doubles
  await expect(row(page, 9)).toHaveAttribute('data-error', 'true');  // l1 still takes 1568
  await page.getByTestId('layer-param-9-in_features').fill('3136');
  await expect(row(page, 9)).toHaveAttribute('data-error', 'false');
  await expect(row(page, 11)).toHaveAttribute('data-shape', '1,10');

  // Add a Dropout after the last ReLU (row 10), from the server's layer types.
  await row(page, 10).locator('.layer-head').click();
  await page.getByTestId('layer-add-type').selectOption('Dropout');
  await page.getByTestId('layer-add').click();
  await expect(row(page, 11)).toHaveAttribute('data-type', 'Dropout');
  await expect(row(page, 11)).toHaveAttribute('data-shape', '1,128');
  await expect(row(page, 12)).toHaveAttribute('data-shape', '1,10');

  // Move it up and back, and remove a layer and undo that by adding it again: the shapes follow.
  await page.getByTestId('layer-up-11').click();
  await expect(row(page, 10)).toHaveAttribute('data-type', 'Dropout');
  await page.getByTestId('layer-down-10').click();
  await expect(row(page, 11)).toHaveAttribute('data-type', 'Dropout');
  await page.getByTestId('layer-remove-11').click();
  await expect(row(page, 11)).toHaveAttribute('data-type', 'Linear');
  await row(page, 10).locator('.layer-head').click();
  await page.getByTestId('layer-add').click();  // the type picked last, after the selected row
  await expect(row(page, 11)).toHaveAttribute('data-type', 'Dropout');
  await expect(page.getByTestId('layer-total')).toContainText('1×10');
  await shot(page, 'layers-03-edited');

  // The raw JSON is the same spec, with the new layer wired in.
  await page.getByTestId('layer-raw-toggle').click();
  const raw = JSON.parse(await page.getByTestId('layer-raw').inputValue()) as { nodes: { id: string; type: string }[]; edges: { source: string; target: string }[] };
  const dropout = raw.nodes.find((n) => n.type === 'Dropout')!;
  expect(raw.edges.filter((e) => e.target === dropout.id).map((e) => e.source)).toEqual(['r3']);
  expect(raw.edges.filter((e) => e.source === dropout.id).map((e) => e.target)).toEqual(['l2']);
  await page.getByTestId('layer-raw-toggle').click();

  // A sample input the model can't take: the first layer is marked.
  await page.getByTestId('layer-input-shape').fill('3, 28, 28');
  await expect(row(page, 0)).toHaveAttribute('data-error', 'true');
  await page.getByTestId('layer-input-shape').fill('1, 28, 28');
  await expect(row(page, 0)).toHaveAttribute('data-error', 'false');
  await page.getByTestId('layer-editor-close').click();

  // Train the edited model briefly.
  await setParam(page, 'train_data', 'max_samples', '512');
  await setParam(page, 'test_data', 'max_samples', '500');
  await setParam(page, 'train', 'epochs', '1');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-print_acc')).toHaveAttribute('data-status', 'completed', { timeout: 90_000 });
  for (const node of ['cnn', 'train', 'evaluate'])
    await expect(page.getByTestId(`node-${node}`)).toHaveAttribute('data-status', 'completed');
  await expect(page.getByTestId('messages')).toContainText('test accuracy');
  await shot(page, 'layers-04-trained');
});
