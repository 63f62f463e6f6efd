// What the browser tests do the same way in every file.
import { expect, type Page } from '@playwright/test';

/** A screenshot of the page as it is now, in e2e-results/ for a person to look at. */
export const shot = (page: Page, name: string) => page.screenshot({ path: `e2e-results/${name}.png` });

/** Opens an example by its address and waits until its graph is drawn. */
export async function openExample(page: Page, path: string) {
  await page.goto(`/?example=${path}`);
  await expect(page.getByTestId('node-start')).toBeVisible();
}

/** Sets a node's param on the node itself (unfolding Advanced when it is folded there). */
export async function setParam(page: Page, node: string, param: string, value: string) {
  const field = page.getByTestId(`param-${node}-${param}`);
  if (!(await field.isVisible())) await page.getByTestId(`advanced-${node}`).click();
  if ((await field.evaluate((el) => el.tagName)) === 'SELECT') await field.selectOption(value);
  else {
    await field.fill(value);
    await field.press('Tab');
  }
}

/** Picks a language in the settings dialog (where the language menu lives) and closes it. */
export async function chooseLanguage(page: Page, option: string | { label: string }) {
  await page.getByTestId('settings').click();
  await page.getByTestId('language-select').selectOption(option);
  await page.keyboard.press('Escape');
}

/** The values the loss chart holds. */
export const points = async (page: Page) => Number((await page.getByTestId('loss-chart').getAttribute('data-points')) ?? 0);
