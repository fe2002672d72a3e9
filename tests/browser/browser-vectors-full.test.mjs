// The shared vectors replayed through the full wasm build (`twoplane/wasm-full`) in headless
// Chromium: a page imports the entry by URL and runs the same replay as node-vectors-full.test.mjs
// (every file, the message codec included, and ui.json through uiIngest and uiResume). Every
// case must pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { launch, runPage } from './lib/browser.mjs';
import { FULL_VECTOR_FILES } from './lib/replay.mjs';

test('vectors through the full wasm build in Chromium', async (t) => {
  const server = await startServer();
  const browser = await launch();
  t.after(async () => {
    await browser.close();
    await server.close();
  });
  const out = await runPage(browser, `${server.origin}/pages/vectors-full.html`);
  assert.equal(out.error, undefined, out.error);
  assert.equal(out.backend, 'wasm');
  assert.equal(out.codec, true, 'the full build must have the message codec');
  for (const name of FULL_VECTOR_FILES) {
    const mine = out.results.filter((r) => r.file === name);
    assert.ok(mine.length > 0, `no case from ${name}.json ran`);
    await t.test(`${name}.json: ${mine.length} cases`, () => {
      const failed = mine.filter((r) => !r.ok);
      assert.deepEqual(failed, [], failed.map((r) => `${r.name}: ${r.detail}`).join('\n'));
    });
  }
  assert.deepEqual(browser.errors, []);
  console.log(`chromium: ${out.results.filter((r) => r.ok).length} of ${out.results.length} vector cases passed over the full build`);
});
