// The Server panel (stores, queues, runs, node state) and the model files in
// the Files dialog, in Debian's chromium against a real `codefy serve` (see
// playwright.config.ts). Screenshots land in e2e-results/.
import { readFileSync } from 'node:fs';
import { expect, test, type Page } from '@playwright/test';
import { openExample, points, setParam, shot } from './helpers';

async function token(page: Page): Promise<string> {
  const res = await page.request.get('/api/auth/bootstrap');
  return ((await res.json()) as { token: string }).token;
}

/** The newest run's id in the panel's list (rows are newest first). */
async function newestRun(page: Page): Promise<string> {
  const id = await page.locator('[data-testid^="run-row-"]').first().getAttribute('data-testid');
  return id!.replace('run-row-', '');
}

test('the Server panel: stores and queue; a run shows as running, queues another, and Stop ends both', async ({ page }) => {
  await openExample(page, 'toy-mlp');
  await page.getByTestId('server-panel-toggle').click();
  const panel = page.getByTestId('server-panel');
  await expect(panel).toBeVisible();
  for (const store of ['execution_cache', 'node_state_store', 'run_output_store'])
    await expect(page.getByTestId(`store-${store}`)).toBeVisible();
  expect(Number(await page.getByTestId('store-node_state_store').getAttribute('data-cap'))).toBeGreaterThan(0);
  expect(Number(await page.getByTestId('store-run_output_store').getAttribute('data-cap'))).toBeGreaterThan(0);
  // Used of cap, in binary units (other tests on this server may have filled it a little).
  await expect(page.getByTestId('store-run_output_store')).toContainText(/\d+(\.\d)? (B|KiB|MiB) of 2\.0 GiB/);
  const cpu = page.getByTestId('queue-cpu');
  await expect(cpu).toHaveAttribute('data-running', '');
  await expect(cpu).toContainText('idle · 0 queued');
  // The canvas stays usable beside the drawer.
  await expect(page.getByTestId('node-train')).toBeVisible();

  // A long training run from the editor.
  await setParam(page, 'train', 'early_stopping_patience', '0');
  await setParam(page, 'train', 'epochs', '5000');
  await page.getByTestId('run').click();
  await expect.poll(() => points(page)).toBeGreaterThan(2);
  await expect(cpu).not.toHaveAttribute('data-running', ''); // the panel asks every 2 s: on a busy machine, a few asks
  const editorRun = (await cpu.getAttribute('data-running'))!;
  const editorRow = page.getByTestId(`run-row-${editorRun}`);
  await expect(editorRow).toHaveAttribute('data-status', 'running');
  await expect(editorRow).toContainText('Toy MLP (this editor)');

  // A headless run of a saved graph waits behind it on the CPU's queue.
  const graph = JSON.parse(readFileSync('../examples/toy-mlp/graph.json', 'utf8')) as Record<string, unknown>;
  const headers = { 'X-CodefyUI-Token': await token(page) };
  const saved = await page.request.post('/api/graph/save', { headers, data: { ...graph, name: 'queued toy' } });
  expect(saved.ok()).toBe(true);
  const headless = page.request.post('/api/graph/run/queued_toy', { headers, data: {}, timeout: 60_000 });
  // Queued, or else what the server answered instead (a refusal, an early end), said in the failure.
  const answeredFirst = headless.then(
    async (r) => `answered before it showed as queued: ${r.status()} ${await r.text()}`,
    (e: unknown) => `failed before it showed as queued: ${String(e)}`,
  );
  const queued = expect(cpu).toHaveAttribute('data-queued', '1').then(() => 'queued');
  expect(await Promise.race([queued, answeredFirst])).toBe('queued');
  const queuedRun = await newestRun(page);
  expect(queuedRun).not.toBe(editorRun);
  const queuedRow = page.getByTestId(`run-row-${queuedRun}`);
  await expect(queuedRow).toHaveAttribute('data-status', 'queued');
  await expect(queuedRow).toContainText('queued_toy');
  await expect(cpu).toContainText(`running ${editorRun} · 1 queued`);
  await shot(page, 'server-01-panel-with-runs');

  // Stop from the panel: the queued one never starts, the running one ends.
  await page.getByTestId(`run-stop-${queuedRun}`).click();
  await expect(queuedRow).toHaveAttribute('data-status', 'stopped');
  await expect(page.getByTestId(`run-stop-${queuedRun}`)).toHaveCount(0);
  // Its caller hears that it was stopped.
  const answer = await headless;
  expect(answer.status()).toBe(200);
  expect(((await answer.json()) as { status: string }).status).toBe('stopped');
  await expect(editorRow).toHaveAttribute('data-status', 'running');
  await page.getByTestId(`run-stop-${editorRun}`).click();
  await expect(editorRow).toHaveAttribute('data-status', 'stopped', { timeout: 5_000 });
  await expect(page.getByTestId('node-train')).not.toHaveAttribute('data-status', 'running');
  await expect(page.getByTestId('run')).toBeEnabled();
  await expect(cpu).toHaveAttribute('data-running', '');
  await expect(cpu).toHaveAttribute('data-queued', '0');
  await expect(editorRow).toContainText(/\d s$/); // its running time, once finished
  await shot(page, 'server-02-runs-stopped');

  // Closed, it asks nothing more.
  await page.getByTestId('server-panel-toggle').click();
  await expect(panel).toHaveCount(0);
  let asked = 0;
  page.on('request', (r) => {
    if (r.url().includes('/api/health')) ++asked;
  });
  await page.waitForTimeout(4_500);
  expect(asked).toBe(0);
});

test('the state store: a run keeps its model; Reset (confirmed) forgets it', async ({ page }) => {
  await openExample(page, 'toy-mlp');
  await setParam(page, 'train', 'epochs', '1');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('node-print_acc')).toHaveAttribute('data-status', 'completed', { timeout: 60_000 });
  await page.getByTestId('server-panel-toggle').click();
  const kept = page.getByTestId('state-graph');
  await expect(kept).toHaveAttribute('data-count', '1');
  await expect(kept).toContainText('mlp');
  // Other tests on this server may keep modules of their own graphs: this graph's one is counted among them.
  const entriesBefore = Number(await page.getByTestId('store-node_state_store').getAttribute('data-entries'));
  const usedBefore = Number(await page.getByTestId('store-node_state_store').getAttribute('data-used'));
  expect(entriesBefore).toBeGreaterThanOrEqual(1);
  expect(usedBefore).toBeGreaterThan(0);
  const totalBefore = Number(await page.getByTestId('state-total').getAttribute('data-count'));

  // Refused at the question: nothing is forgotten.
  page.once('dialog', (d) => void d.dismiss());
  await page.getByTestId('state-reset').click();
  await page.waitForTimeout(2_500);
  await expect(kept).toHaveAttribute('data-count', '1');

  page.once('dialog', (d) => {
    expect(d.message()).toContain('Toy MLP');
    void d.accept();
  });
  await page.getByTestId('state-reset').click();
  await expect(kept).toHaveAttribute('data-count', '0');
  await expect(page.getByTestId('state-total')).toHaveAttribute('data-count', String(totalBefore - 1));
  await expect(page.getByTestId('store-node_state_store')).toHaveAttribute('data-entries', String(entriesBefore - 1));
  await expect
    .poll(async () => Number(await page.getByTestId('store-node_state_store').getAttribute('data-used')))
    .toBeLessThan(usedBefore);
  await expect(page.getByTestId('server-notice')).toContainText('1 module(s) of “Toy MLP” forgotten');
  await shot(page, 'server-03-state-reset');
});

test('a server that stops answering is said so, not shown silently', async ({ page }) => {
  await openExample(page, 'toy-mlp');
  await page.getByTestId('server-panel-toggle').click();
  await expect(page.getByTestId('store-node_state_store')).toBeVisible();
  await page.route('**/api/health', (r) => r.abort('connectionrefused'));
  await expect(page.getByTestId('server-error')).toContainText('Server not answering', { timeout: 6_000 });
  await expect(page.getByTestId('server-panel')).toHaveAttribute('data-stale', 'true');
  await shot(page, 'server-04-not-answering');
  await page.unroute('**/api/health');
  await expect(page.getByTestId('server-error')).toHaveCount(0, { timeout: 6_000 });
});

/** A real safetensors file: one F32 tensor "weight" of shape [2, 2]. */
function safetensors(): Buffer {
  let header = JSON.stringify({ weight: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] } });
  header += ' '.repeat((8 - (header.length % 8)) % 8);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(header.length));
  const data = Buffer.alloc(16);
  [1.5, -2, 0.25, 4].forEach((v, i) => data.writeFloatLE(v, i * 4));
  return Buffer.concat([size, Buffer.from(header), data]);
}

test('model files: upload, listed and offered by a ModelLoader, download the same bytes, delete', async ({ page }) => {
  await openExample(page, 'toy-mlp');
  const file = safetensors();
  await page.getByTestId('files').click();
  const dialog = page.getByTestId('files-dialog');
  await expect(dialog.getByTestId('model-files')).toContainText('No model files');

  // A file type the server refuses: its reason is shown.
  await page.getByTestId('model-upload').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') });
  const result = page.getByTestId('model-files-result');
  await expect(result).toHaveAttribute('data-level', 'error');
  await expect(result).toContainText('Unsupported file type: .txt');

  await page.getByTestId('model-upload').setInputFiles({ name: 'tiny.safetensors', mimeType: 'application/octet-stream', buffer: file });
  await expect(result).toHaveAttribute('data-level', 'info');
  await expect(result).toContainText(`Uploaded tiny.safetensors (${file.length} B)`);
  const row = page.getByTestId('model-row-tiny.safetensors');
  await expect(row).toHaveAttribute('data-size', String(file.length));
  await shot(page, 'server-05-models-list');

  // Downloaded, the bytes are the ones sent.
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByTestId('model-download-tiny.safetensors').click(),
  ]);
  expect(download.suggestedFilename()).toBe('tiny.safetensors');
  expect(readFileSync((await download.path())!)).toEqual(file);

  // A ModelLoader's file menu offers it.
  await page.keyboard.press('Escape');
  await expect(dialog).toHaveCount(0);
  await page.getByTestId('palette-item-ModelLoader').dblclick();
  const loader = page.locator('[data-type="ModelLoader"]');
  await expect(loader).toBeVisible();
  const loaderId = (await loader.getAttribute('data-testid'))!.replace('node-', '');
  const path = page.getByTestId(`param-${loaderId}-path`);
  const listId = (await path.getAttribute('list'))!;
  const offered = () => page.locator(`datalist[id="${listId}"] option`).evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  await expect.poll(offered).toContain('tiny.safetensors');

  // Delete asks first; refused, the file stays.
  await page.getByTestId('files').click();
  page.once('dialog', (d) => void d.dismiss());
  await page.getByTestId('model-delete-tiny.safetensors').click();
  await page.waitForTimeout(500);
  await expect(row).toBeVisible();
  page.once('dialog', (d) => {
    expect(d.message()).toContain('tiny.safetensors');
    void d.accept();
  });
  await page.getByTestId('model-delete-tiny.safetensors').click();
  await expect(row).toHaveCount(0);
  await expect(result).toContainText('Deleted tiny.safetensors.');
  const listed = (await (await page.request.get('/api/models')).json()) as { filename: string }[];
  expect(listed.map((m) => m.filename)).not.toContain('tiny.safetensors');
  await page.keyboard.press('Escape');
  await expect.poll(offered).not.toContain('tiny.safetensors');
});
