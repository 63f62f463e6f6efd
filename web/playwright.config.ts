// Browser tests of the editor against a real `codefy serve`, in Debian's
// chromium (never a browser Playwright downloads). Run by scripts/test.sh
// after the C++ tests: `npm run e2e` in web/.
import { defineConfig } from '@playwright/test';

const port = Number(process.env.CODEFY_E2E_PORT ?? 18731);
const chromium = process.env.CODEFY_CHROMIUM ?? '/usr/bin/chromium';
/** NAME:TOTAL_MIB:FREE_MIB of the fake cards the second server shows. */
export const cards = { a100: 'NVIDIA A100-SXM4-80GB:81920:61440', rtx: 'NVIDIA GeForce RTX 4090:24564:20480' };
export const cardsPort = port + 1;

export default defineConfig({
  testDir: 'e2e',
  testMatch: '**/*.e2e.ts',
  outputDir: 'e2e-results/artifacts',
  timeout: 120_000,
  expect: { timeout: 15_000 },
  workers: 1,
  // One retry: the charts test has thrown a RangeError ("Invalid array length") from a chart while
  // drawing in 1 of 2 clean-clone runs; until its cause is found a second failure still fails.
  retries: 1,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    viewport: { width: 1440, height: 900 },
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: chromium,
      args: [
        '--headless=new',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: [
    {
      // A fresh data folder each run; the CPU memory budget is what the
      // out-of-memory test exceeds on purpose (graphs below it train as usual).
      command:
        `rm -rf e2e-results/data && ../build/codefy serve --port ${port} --data-dir e2e-results/data ` +
        `--examples-dir ../examples --web-dir dist --device-budget-mb cpu=1024`,
      url: `http://127.0.0.1:${port}/api/health`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: 'ignore',
      stderr: 'pipe',
    },
    {
      // The same server presenting two CUDA cards that are not there (a
      // test-only switch of the device probe): for the device menus.
      command:
        `rm -rf e2e-results/data-cards && ../build/codefy serve --port ${port + 1} ` +
        `--data-dir e2e-results/data-cards --examples-dir ../examples --web-dir dist`,
      env: { CODEFY_FAKE_CUDA_CARDS: `${cards.a100};${cards.rtx}` },
      url: `http://127.0.0.1:${port + 1}/api/health`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: 'ignore',
      stderr: 'pipe',
    },
  ],
});
