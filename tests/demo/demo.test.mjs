// The demo page in headless Chromium: live tokens, and a reload in the middle of an answer that
// ends with the full answer exactly once.
//
// Starts `twoplane serve --demo` on a free loopback port with a fresh SQLite file, drives the page
// with playwright-core over Debian's chromium (never a downloaded browser), and compares what the
// page shows with what the store holds at the end. Every rendering of the answer after the reload
// is recorded, and each one must be a prefix of the final text: a duplicated or missing span
// would show up there even if a later render papered over it.
//
// Env: TWOPLANE_BIN (the built binary), CHROMIUM (default /usr/bin/chromium).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer, stopServer } from './serve.mjs';
import { CHROMIUM_ARGS } from '../browser/lib/chromium-args.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.TWOPLANE_BIN ?? join(ROOT, 'target/debug/twoplane');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

let server;
let base;
let work;
let context;
let page;
const problems = [];
async function storedMessages() {
  const res = await fetch(`${base}/api/messages`);
  assert.equal(res.status, 200);
  return (await res.json()).messages;
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'twoplane-demo-'));
  const started = await startServer(BIN, ['--demo', '--listen', '127.0.0.1:0', '--db', join(work, 'demo.db')]);
  server = started.child;
  base = `http://${started.addr}`;
  context = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('response', (res) => {
    if (res.status() >= 400) problems.push(`HTTP ${res.status()} for ${res.url()}`);
  });
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
});

after(async () => {
  await context?.close().catch(() => {});
  await stopServer(server);
  if (work) rmSync(work, { recursive: true, force: true });
});

async function ready() {
  await page.waitForSelector('#status[data-ready="true"]', { timeout: 20_000 });
}

test('a reload in the middle of an answer ends with the full answer, once', async () => {
  await page.goto(`${base}/`);
  await ready();
  await page.fill('#prompt', 'What happens when I reload mid-answer? 🤔');
  await page.click('#send');

  // Live tokens: the answer grows on screen while the store still says `streaming`.
  const answer = page.locator('article.msg.assistant').last();
  await answer.waitFor();
  const id = await answer.getAttribute('data-id');
  assert.ok(id, 'the assistant message has an id');
  await page.waitForFunction(
    (mid) => {
      const el = document.querySelector(`article[data-id="${mid}"]`);
      return el && el.dataset.live === 'true' && el.querySelector('.body').textContent.length >= 60;
    },
    id,
    { timeout: 20_000 },
  );
  const before = (await storedMessages()).find((m) => m.id === id);
  assert.equal(before.status, 'streaming', 'the reload must happen mid-answer');

  await page.reload();
  await ready();
  const reloaded = page.locator(`article[data-id="${id}"]`);
  assert.equal(await reloaded.count(), 1);
  // Record every rendering of the answer from here on.
  await page.evaluate((mid) => {
    const el = document.querySelector(`article[data-id="${mid}"]`);
    const body = el.querySelector('.body');
    window.__renders = [body.textContent];
    new MutationObserver(() => window.__renders.push(body.textContent)).observe(body, {
      childList: true,
      characterData: true,
      subtree: true,
    });
  }, id);
  // It goes live again after the reload (not only through the store) ...
  const stillStreaming = (await storedMessages()).find((m) => m.id === id).status === 'streaming';
  if (stillStreaming) {
    await page.waitForFunction(
      (mid) => document.querySelector(`article[data-id="${mid}"]`)?.dataset.live === 'true',
      id,
      { timeout: 20_000 },
    );
  }
  // ... and ends sealed.
  await page.waitForSelector(`article[data-id="${id}"][data-status="complete"]`, { timeout: 60_000 });

  const final = (await storedMessages()).find((m) => m.id === id);
  assert.equal(final.status, 'complete');
  assert.ok(final.body.length > before.body.length);
  const shown = await reloaded.locator('.body').textContent();
  assert.equal(shown, final.body, 'the page shows exactly the stored answer');
  const renders = await page.evaluate(() => window.__renders);
  assert.ok(renders.length > 3, `the answer kept growing after the reload (${renders.length} renders)`);
  for (const [i, r] of renders.entries()) {
    assert.ok(final.body.startsWith(r), `render ${i} is not a prefix of the final answer: ${JSON.stringify(r.slice(-40))}`);
  }
  // Exactly once on the whole page.
  const all = await page.locator('main').textContent();
  assert.equal(all.split(final.body).length - 1, 1, 'the answer appears once');
  assert.equal(await page.locator('article.msg.assistant').count(), 1);
  if (process.env.DEMO_SCREENSHOT) await page.screenshot({ path: process.env.DEMO_SCREENSHOT, fullPage: true });
  assert.deepEqual(problems, []);
});

test('a second question streams live and both answers stay intact', async () => {
  await page.fill('#prompt', '日本語でも大丈夫？');
  await page.click('#send');
  const answers = page.locator('article.msg.assistant');
  await page.waitForFunction(() => document.querySelectorAll('article.msg.assistant').length === 2);
  const id = await answers.nth(1).getAttribute('data-id');
  await page.waitForSelector(`article[data-id="${id}"][data-status="complete"]`, { timeout: 60_000 });
  const stored = await storedMessages();
  const shown = await answers.locator('.body').allTextContents();
  assert.deepEqual(shown, stored.filter((m) => m.role === 'assistant').map((m) => m.body));
  assert.deepEqual(problems, []);
});
