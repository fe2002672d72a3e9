// Cross-origin readers (`twoplane serve --allow-origin`) in headless Chromium. The page is served
// by this test from its own origin (http://127.0.0.1:PAGE_PORT); the server runs on another port,
// so every read is cross-origin, as for an application whose pages and stream server live apart.
//
// - A page on the allowed origin reads a stream to the end over EventSource (token in the query)
//   and over fetch (token in a header, so the browser first sends a preflight), and cancels a
//   stream; the answers are readable to it.
// - A page on an origin that is not listed (http://localhost:PAGE_PORT, same server, another
//   origin) is blocked by the browser before it sees anything; the same request from the allowed
//   page succeeds, so the origin is the only difference.
//
// Env: TWOPLANE_BIN (the built binary), CHROMIUM (default /usr/bin/chromium).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer, stopServer } from './serve.mjs';
import { signStreamToken } from '../../npm/twoplane/src/token.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.TWOPLANE_BIN ?? join(ROOT, 'target/debug/twoplane');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PKG = join(ROOT, 'npm/twoplane');
const RUN = Date.now().toString(36);

const PAGE = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>cross-origin readers</title><script type="module">
import { StreamReader } from '/pkg/src/index.browser.js';
window.__readers = {};
window.read = (key, { base, id, token, transport }) => {
  const r = { text: '', stop: null };
  window.__readers[key] = r;
  const options = transport === 'eventsource'
    ? { endpoint: base + '/api/stream?token=' + encodeURIComponent(token), transport }
    : { endpoint: base + '/api/stream', transport, headers: { authorization: 'Bearer ' + token } };
  const reader = new StreamReader({
    ...options,
    streamId: id,
    durableText: '',
    onUpdate() { r.text = reader.text; },
    onStop(reason) { r.text = reader.text; r.stop = reason; },
  });
  reader.start();
};
window.ready = true;
</script>`;

const TYPES = { '.js': 'text/javascript; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json' };

let work;
let pages;
let pagePort;
let server;
let base;
let producerSecret;
let readSecret;
let browser;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const enc = (s) => encodeURIComponent(s);
const token = (id) => signStreamToken({ secret: readSecret, streamId: id, ttlSeconds: 600 });

async function api(method, path, body) {
  const res = await fetch(`${base}${path}`, { method, body, headers: { authorization: `Bearer ${producerSecret}` } });
  return { status: res.status, json: await res.json().catch(() => null) };
}

/** The page and the browser package, on this test's own origin. */
function servePages() {
  return http.createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/reader.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(PAGE);
    }
    const rel = normalize(decodeURIComponent(path.slice('/pkg/'.length)));
    if (!path.startsWith('/pkg/') || rel.startsWith('..')) {
      res.writeHead(404);
      return res.end();
    }
    try {
      const file = join(PKG, rel);
      const body = readFileSync(file);
      res.writeHead(200, { 'content-type': TYPES[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream' });
      return res.end(body);
    } catch {
      res.writeHead(404);
      return res.end();
    }
  });
}

/** A page loaded from `origin`; its console errors go to `problems` when given. */
async function pageOn(origin, problems) {
  const page = await browser.newPage();
  page.on('pageerror', (err) => problems?.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems?.push(`console error: ${msg.text()}`);
  });
  await page.goto(`${origin}/reader.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20_000 });
  return page;
}

async function readerResult(page, key) {
  await page.waitForFunction((k) => window.__readers[k]?.stop !== null, key, { timeout: 30_000 });
  return page.evaluate((k) => window.__readers[k], key);
}

/** `fetch(url, init)` from inside `page`: `status N` when the page may read the answer, else `blocked`. */
const fetchFrom = (page, url, init = {}) =>
  page.evaluate(([u, i]) => fetch(u, i).then((r) => `status ${r.status}`, () => 'blocked'), [url, init]);

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'twoplane-cors-'));
  pages = servePages();
  await new Promise((r) => pages.listen(0, '127.0.0.1', r));
  pagePort = pages.address().port;
  producerSecret = randomBytes(24).toString('hex');
  readSecret = randomBytes(24).toString('base64url');
  writeFileSync(join(work, 'producer'), producerSecret);
  writeFileSync(join(work, 'read'), readSecret);
  const started = await startServer(BIN, [
    '--listen', '127.0.0.1:0', '--db', join(work, 'c.db'),
    '--producer-token-file', join(work, 'producer'), '--read-token-secret-file', join(work, 'read'),
    '--allow-origin', `http://127.0.0.1:${pagePort}`,
  ]);
  server = started.child;
  base = `http://${started.addr}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close().catch(() => {});
  await stopServer(server);
  await new Promise((r) => (pages ? pages.close(r) : r()));
  if (work) rmSync(work, { recursive: true, force: true });
});

test('a page on the allowed origin reads over EventSource and over fetch, and cancels', async () => {
  const problems = [];
  const page = await pageOn(`http://127.0.0.1:${pagePort}`, problems);
  for (const transport of ['eventsource', 'fetch']) {
    const id = `cors-${transport}-${RUN}`;
    assert.equal((await api('POST', `/v1/streams/${enc(id)}/open`, '{"create":true}')).status, 200);
    await page.evaluate((o) => window.read(o.transport, o), { base, id, token: token(id), transport });
    let text = '';
    for (const delta of ['cross', '-origin ', 'réponse ', '😀', ' done']) {
      const appended = await api('POST', `/v1/streams/${enc(id)}/append?offset=${text.length}`, delta);
      assert.equal(appended.status, 200, JSON.stringify(appended.json));
      text += delta;
      await sleep(20);
    }
    assert.equal((await api('POST', `/v1/streams/${enc(id)}/close`)).json.status, 'complete');
    const r = await readerResult(page, transport);
    assert.equal(r.stop, 'end', transport);
    assert.equal(r.text, text, `${transport}: the cross-origin reader ends with exactly the text`);
  }

  // The reader's cancel, from the page: its answers, a refusal too, are readable there.
  const id = `cors-cancel-${RUN}`;
  assert.equal((await api('POST', `/v1/streams/${enc(id)}/open`, '{"create":true}')).status, 200);
  const cancel = (tok) => fetchFrom(page, `${base}/v1/streams/${enc(id)}/cancel?token=${enc(tok)}`, { method: 'POST' });
  assert.equal(await cancel(token(`${id}-other`)), 'status 403');
  assert.equal(await cancel(token(id)), 'status 202');
  assert.equal((await api('POST', `/v1/streams/${enc(id)}/close`)).status, 200);
  // The refused cancel is the one console error the page may show (the browser logs a 403).
  assert.deepEqual(problems.filter((p) => !p.includes('403')), []);
  await page.close();
});

test('a page on an origin that is not listed is blocked; the same request from the allowed one is not', async () => {
  const id = `cors-blocked-${RUN}`;
  assert.equal((await api('POST', `/v1/streams/${enc(id)}/open`, '{"create":true}')).status, 200);
  const url = `${base}/api/stream?streamId=${enc(id)}&from=0&token=${enc(token(id))}`;
  const head = `${base}/api/stream?streamId=${enc(id)}&from=0`;
  const allowed = await pageOn(`http://127.0.0.1:${pagePort}`);
  const other = await pageOn(`http://localhost:${pagePort}`);
  // The stream is still open: each request stops at the head (a readable status, or none).
  const statusOf = (page, init) =>
    page.evaluate(([u, i]) => {
      const abort = new AbortController();
      return fetch(u, { ...i, signal: abort.signal }).then((r) => { abort.abort(); return `status ${r.status}`; }, () => 'blocked');
    }, [init.headers ? head : url, init]);
  assert.equal(await statusOf(allowed, {}), 'status 200');
  assert.equal(await statusOf(other, {}), 'blocked');
  // With the token in a header the browser asks first (a preflight), and only the allowed origin passes.
  const withHeader = { headers: { authorization: `Bearer ${token(id)}` } };
  assert.equal(await statusOf(allowed, withHeader), 'status 200');
  assert.equal(await statusOf(other, withHeader), 'blocked');
  assert.equal((await api('POST', `/v1/streams/${enc(id)}/close`)).json.status, 'complete');
  await allowed.close();
  await other.close();
});
