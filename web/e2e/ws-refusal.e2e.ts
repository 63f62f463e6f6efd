// A run connection the server refuses at the handshake (HTTP 403), in the
// real browser against a real `codefy serve`: the editor says it was refused
// (not that the server is down) and does not keep reconnecting.
import { expect, test } from '@playwright/test';

test('a run connection refused at the handshake is reported as refused (not as a lost run), with no reconnect loop', async ({ page }) => {
  // A page holding a token the server does not know (as after a restart), every time it asks.
  await page.route('**/api/auth/bootstrap', (route) => route.fulfill({ json: { token: 'stale' } }));
  const sockets: string[] = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  await page.goto('/?example=toy-mlp');
  await expect(page.getByTestId('node-start')).toBeVisible();
  await page.getByTestId('run').click();
  const messages = page.getByTestId('messages');
  await expect(messages).toContainText('refused the run connection');
  await expect(messages).toContainText('answered 403');
  await expect(messages).toContainText('Could not connect to the server to run');
  const tried = sockets.length;
  expect(tried).toBeGreaterThanOrEqual(1);
  await page.waitForTimeout(3000); // longer than the first reconnect waits
  expect(sockets.length).toBe(tried);
  await expect(page.getByTestId('run')).toBeEnabled();
  await expect(messages).not.toContainText('was lost'); // no run was going: nothing was lost
  await page.screenshot({ path: 'e2e-results/ws-refused-at-handshake.png' });
});
