// The bundler check: a tiny app (vite-app/) imports `twoplane` and `twoplane/react` from the
// installed package, is built by Vite (which must find and emit the .wasm from the glue's
// `new URL(…, import.meta.url)`), and runs in headless Chromium against the fixture stream with
// two drops. The React hook and the plain reader must both end with exactly the produced text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'vite';
import { BROWSER_DIR, scenario, startServer } from './lib/server.mjs';
import { launch, runPage } from './lib/browser.mjs';

const APP = path.join(BROWSER_DIR, 'vite-app');

test('a Vite build of an app importing twoplane runs in Chromium', async (t) => {
  await build({ configFile: path.join(APP, 'vite.config.js') });
  const assets = readdirSync(path.join(APP, 'dist/assets'));
  assert.ok(assets.some((f) => f.endsWith('.wasm')), `Vite emitted no .wasm: ${assets.join(', ')}`);
  const js = assets.filter((f) => f.endsWith('.js')).map((f) => readFileSync(path.join(APP, 'dist/assets', f), 'utf8')).join('\n');
  assert.ok(!js.includes('backend-napi') && !js.includes('loadAddon'), 'the browser bundle must not carry the Node addon loader');

  const server = await startServer({ staticRoots: { '/app/': path.join(APP, 'dist') } });
  const browser = await launch();
  t.after(async () => {
    await browser.close();
    await server.close();
  });
  const sc = scenario({ seed: 7, drops: 2, units: 3000, join: 64 });
  server.play(sc);
  const out = await runPage(browser, `${server.origin}/app/index.html`, 60000);
  assert.equal(out.hook.stopped, 'end');
  assert.equal(out.hook.text === sc.text, true, 'the hook renders the produced text');
  assert.equal(out.plain.stopped, 'end');
  assert.equal(out.plain.text === sc.text, true, 'the plain reader renders the produced text');
  assert.equal(out.status, 'streaming');
  assert.equal(out.splice, 'abz');
  assert.deepEqual(browser.errors.filter((e) => !/Failed to load resource|net::/.test(e)), []);
});
