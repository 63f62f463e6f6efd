// Editing habits in a real browser: quick add at the cursor, undo/redo,
// copy/paste through the clipboard events, tabs, and the shortcuts sheet.
import { expect, test, type Page } from '@playwright/test';
import { cardsPort } from '../playwright.config';
import { openExample, shot } from './helpers';

/** A spot on the canvas's background with nothing on it for 120 px around (found by asking the page). */
async function emptySpot(page: Page) {
  const spot = await page.evaluate(() => {
    const canvas = document.querySelector('[data-testid="canvas"]')!.getBoundingClientRect();
    const bare = (x: number, y: number) => document.elementFromPoint(x, y)?.classList.contains('react-flow__pane') ?? false;
    for (let y = canvas.bottom - 60; y > canvas.top + 60; y -= 20)
      for (let x = canvas.left + 120; x < canvas.right - 420; x += 20)
        if ([0, 60, 120].every((dx) => [0, 60, 120].every((dy) => bare(x + dx - 60, y + dy - 60)))) return { x, y };
    return null;
  });
  expect(spot, 'an empty spot on the canvas').not.toBeNull();
  return spot!;
}

test('double-clicking the background opens a search that adds the node there; undo and redo take it back and forth', async ({ page }) => {
  await openExample(page, 'toy-mlp');
  const spot = await emptySpot(page);
  await page.mouse.dblclick(spot.x, spot.y);
  await expect(page.getByTestId('quick-add')).toBeVisible();
  await expect(page.getByTestId('quick-add-input')).toBeFocused();
  await page.keyboard.type('dataload');
  await expect(page.getByTestId('quick-add-item-DataLoader')).toHaveAttribute('aria-selected', 'true');
  await shot(page, '20-quick-add');
  await page.keyboard.press('Enter');
  const added = page.getByTestId('node-dataloader_1');
  await expect(added).toBeVisible();
  await expect(page.getByTestId('quick-add')).toBeHidden();
  const box = (await added.boundingBox())!;
  expect(Math.abs(box.x - spot.x)).toBeLessThan(40);
  expect(Math.abs(box.y - spot.y)).toBeLessThan(40);

  await page.getByTestId('canvas').click({ position: { x: 20, y: 20 } }); // focus leaves the node's fields
  await page.keyboard.press('Control+z');
  await expect(added).toHaveCount(0);
  await page.keyboard.press('Control+Shift+z');
  await expect(added).toBeVisible();
  await page.getByTestId('undo').click();
  await expect(added).toHaveCount(0);
  await page.getByTestId('redo').click();
  await expect(added).toBeVisible();
});

test('nodes copied with Ctrl+C paste with Ctrl+V at the pointer, wired among themselves, with fresh ids', async ({ page }) => {
  await openExample(page, 'toy-mlp');
  await page.getByTestId('node-train_data').click({ position: { x: 30, y: 10 } });
  await page.getByTestId('node-loader').click({ position: { x: 30, y: 10 }, modifiers: ['Shift'] });
  await page.keyboard.press('Control+c');
  const spot = await emptySpot(page);
  await page.mouse.move(spot.x, spot.y);
  await page.keyboard.press('Control+v');
  await expect(page.getByTestId('node-toydataset_1')).toBeVisible();
  await expect(page.getByTestId('node-dataloader_1')).toBeVisible();
  await expect(page.getByTestId('messages')).toContainText('Pasted 2 nodes');
  // The wire between the two originals was copied with them.
  await expect(page.locator('.react-flow__edge[data-id^="e_toydataset_1_"]')).toHaveCount(1);
  await shot(page, '21-pasted');
  await page.keyboard.press('Control+z');
  await expect(page.getByTestId('node-toydataset_1')).toHaveCount(0);
});

test('graphs open in tabs that keep their own edits; the shortcuts sheet lists the keys', async ({ page }) => {
  await openExample(page, 'toy-mlp');
  const epochs = page.getByTestId('param-train-epochs');
  await epochs.fill('7');
  await epochs.press('Tab');
  await page.getByTestId('files').click();
  await page.getByTestId('example-csv-mlp').click();
  await expect(page.getByTestId('tab-bar').getByRole('tab')).toHaveCount(2);
  await expect(page).toHaveURL(/example=csv-mlp/);
  await expect(page.getByTestId('param-train-epochs')).not.toHaveValue('7');
  await shot(page, '22-two-tabs');
  await page.getByTestId('tab-bar').getByRole('tab').first().click();
  await expect(page).toHaveURL(/example=toy-mlp/);
  await expect(page.getByTestId('param-train-epochs')).toHaveValue('7');

  await page.getByTestId('canvas').click({ position: { x: 20, y: 20 } });
  await page.keyboard.press('?');
  const sheet = page.getByTestId('help-sheet');
  await expect(sheet).toBeVisible();
  await expect(sheet.getByTestId('shortcut-undo')).toContainText('Ctrl+Z');
  await expect(sheet.getByTestId('shortcut-paste')).toContainText('Ctrl+V');
  await shot(page, '23-shortcuts');
  await page.keyboard.press('Escape');
  await expect(sheet).toBeHidden();
});

test('the settings’ default device lists each card with its memory; graphs opened later start on it', async ({ page }) => {
  await page.goto(`http://127.0.0.1:${cardsPort}/?example=toy-mlp`);
  await expect(page.getByTestId('node-train')).toBeVisible();
  await expect(page.locator('.react-flow__minimap')).toBeVisible();
  await page.getByTestId('settings').click();
  const select = page.getByTestId('settings-device');
  const options = await select.locator('option').allTextContents();
  expect(options).toContain('NVIDIA CUDA #0 · cuda:0 · NVIDIA A100-SXM4-80GB · 60.0/80.0 GiB');
  expect(options).toContain('NVIDIA CUDA #1 · cuda:1 · NVIDIA GeForce RTX 4090 · 20.0/24.0 GiB');
  await select.selectOption('cuda:1');
  await shot(page, '24-settings');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('device-select')).toHaveValue('cuda:1');
  // The toolbar changes this graph only; a new graph starts at the default again.
  await page.getByTestId('device-select').selectOption('cpu');
  await page.getByTestId('tab-new').click();
  await expect(page.getByTestId('tab-bar').getByRole('tab')).toHaveCount(2);
  await expect(page.getByTestId('device-select')).toHaveValue('cuda:1');
  await page.getByTestId('tab-bar').getByRole('tab').first().click();
  await expect(page.getByTestId('device-select')).toHaveValue('cpu');
  // Remembered by this browser.
  await page.reload();
  await expect(page.getByTestId('device-select')).toHaveValue('cuda:1');
});
