// CodefyUI's canvas nodes in the editor with no editor change: the palette
// lists the new families from /api/nodes, and the ResNet-block example runs
// forward, a wire telling the shape it carried. Screenshots land in
// e2e-results/ for a person to look at.
import { expect, test } from '@playwright/test';
import { shot } from './helpers';

test('the ResNet block example runs forward and its wires tell their shapes', async ({ page }) => {
  await page.goto('/?example=resnet-block');
  await expect(page.getByTestId('node-start')).toBeVisible();
  for (const name of ['Conv2d', 'BatchNorm2d', 'TensorCreate', 'MultiHeadAttention', 'KNN'])
    await expect(page.getByTestId(`palette-item-${name}`)).toHaveCount(1);

  await page.getByTestId('record-outputs').check();
  await page.getByTestId('run').click();
  for (const id of ['input', 'conv1', 'bn1', 'relu1', 'conv2', 'bn2', 'skip', 'relu_out'])
    await expect(page.getByTestId(`node-${id}`)).toHaveAttribute('data-status', 'completed', { timeout: 60_000 });

  // The skip connection's output: the input's shape, kept by padding 1 on both convolutions.
  await page.getByTestId('node-relu_out').click();
  const inspector = page.getByTestId('inspector');
  await expect(inspector).toHaveAttribute('data-state', 'ready');
  await inspector.getByTestId('inspect-relu_out-tensor').click();
  await expect(inspector).toContainText('shape [1, 8, 16, 16] · dtype float32');
  await shot(page, 'node-library-01-resnet-block');
});

test('TensorInput’s values (a tensor_grid) are typed as JSON in the side panel and checked as a nested list of numbers', async ({ page }) => {
  await page.goto('/?example=attention-by-hand');
  await expect(page.getByTestId('node-start')).toBeVisible();
  await page.getByTestId('node-q').click();
  const values = page.getByTestId('panel-param-q-values');
  const panel = page.getByTestId('side-panel');
  await values.fill('[[1, 2], [3');
  await expect(panel.getByRole('alert')).toContainText('Expected a nested list of numbers');
  await values.fill('[[1, 2], [3, 4]]');
  await expect(panel.getByRole('alert')).toHaveCount(0);
  await shot(page, 'node-library-02-tensor-grid');

  // The graph keeps the list; with value_mode random (the example's) the run ignores it and completes.
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-show')).toHaveAttribute('data-status', 'completed', { timeout: 60_000 });
});
