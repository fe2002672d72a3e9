// The shared vectors replayed through the wasm build in headless Chromium: a page imports the
// package by URL (native ES modules, the .wasm fetched and compiled by the browser) and runs the
// same replay module as node-vectors.test.mjs, then the message scenario (lib/message-scenario.mjs:
// StreamReader reading a message made of parts, cut and resumed). Every case must pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { launch, runPage } from './lib/browser.mjs';
import { VECTOR_FILES } from './lib/replay.mjs';

test('vectors through the wasm build in Chromium', async (t) => {
  const server = await startServer();
  const browser = await launch();
  t.after(async () => {
    await browser.close();
    await server.close();
  });
  const out = await runPage(browser, `${server.origin}/pages/vectors.html`);
  assert.equal(out.error, undefined, out.error);
  assert.equal(out.backend, 'wasm');
  for (const name of VECTOR_FILES) {
    const mine = out.results.filter((r) => r.file === name);
    assert.ok(mine.length > 0, `no case from ${name}.json ran`);
    await t.test(`${name}.json: ${mine.length} cases`, () => {
      const failed = mine.filter((r) => !r.ok);
      assert.deepEqual(failed, [], failed.map((r) => `${r.name}: ${r.detail}`).join('\n'));
    });
  }
  await t.test(`message scenario: ${out.scenario.length} checks`, () => {
    assert.ok(out.scenario.length >= 6);
    const failed = out.scenario.filter((r) => !r.ok);
    assert.deepEqual(failed, [], failed.map((r) => `${r.name}: ${r.detail}`).join('\n'));
  });
  assert.deepEqual(browser.errors, []);
  console.log(`chromium: ${out.results.length} vector cases and ${out.scenario.length} scenario checks passed`);
});
