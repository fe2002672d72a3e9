// The benchmark of bench/js/core.mjs in headless Chromium (a newer V8 than Node 20's, the engine
// a chat UI actually runs in), over the installed package's wasm build. Needs tests/browser's
// npm tools and the package installed there: bash scripts/bench-wasm.sh does both.
import { launch } from '../../tests/browser/lib/browser.mjs';
import { startServer } from '../../tests/browser/lib/server.mjs';

const server = await startServer();
const browser = await launch();
try {
  const page = await browser.page();
  page.on('console', (msg) => console.log(msg.text()));
  await page.goto(`${server.origin}/pages/bench.html`);
  await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 600000, polling: 200 });
  const result = await page.evaluate(() => window.__result);
  if (result.error) throw new Error(result.error);
} finally {
  await browser.close();
  await server.close();
}
