// Web pages against the loopback default, in headless Chromium: `twoplane serve` on loopback with
// no secrets at all, so the producer API trusts every loopback peer and reads are open. Every page
// open in a browser on this machine is such a peer; crate::browser is what stops them. Two
// attackers, both on a domain the browser resolves to 127.0.0.1 (`--host-resolver-rules`, which
// is what a DNS rebinding amounts to):
//
// - A cross-site page (http://evil.test:PAGE_PORT, served by this test) posts to
//   http://127.0.0.1:SERVER_PORT with `mode: 'no-cors'` and the content types a page may send
//   without a preflight (text/plain, form-urlencoded, multipart), plus `sendBeacon` and a form
//   submitted into an iframe: open with create, append and a streaming body to the existing
//   stream, flush, fail, close, cancel. It cannot read the answers; Chromium's network events can,
//   and each must be the server's refusal (403).
// - A rebound page: its document came from http://evil.test:SERVER_PORT before the stream server
//   took that port (the attacker's site answered there first; see `before`), so the page and the
//   server are one origin and `Host` is `evil.test:SERVER_PORT`. It sends the same calls as
//   same-origin JSON, and reads: the status route and the SSE endpoint. It can read the answers,
//   and each must be 403 (`foreign_host` on the producer API).
//
// The attacker's name resolves to 127.0.0.1, so Chromium's own check of public pages reaching
// loopback addresses (which other browsers lack, and which a user can wave through) does not step
// in: what is tested is the server's refusal.
//
// After each page, from Node: no stream the page named exists, the existing stream has the seq it
// had, is neither cancelled nor ended, and at the end still takes the next legitimate append at
// that seq. Controls that the pages ran and reached the server: the cross-site page reads its own
// origin, and its harmless read of the SSE endpoint (a read it cannot see) is answered 200; the
// rebound page reads the refusals themselves.
//
// Env: TWOPLANE_BIN (the built binary), CHROMIUM (default /usr/bin/chromium).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer, stopServer } from './serve.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.TWOPLANE_BIN ?? join(ROOT, 'target/debug/twoplane');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const RUN = Date.now().toString(36);
const EVIL = 'evil.test';
/** The stream a producer on this machine opened legitimately, and its text. */
const EXISTING = `xo-existing-${RUN}`;
const LEGIT = 'legit text, é😀';

/**
 * The cross-site attacker's page: `window.attack(o)` sends every call no-cors and resolves with
 * how each settled (the page cannot see more). `o`: `{ target, existing, seq, ids }`. Each request
 * carries `probe=NAME` in its query so that the test can find the server's answer to it.
 */
const CROSS_SITE_PAGE = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>a page elsewhere</title>
<iframe name="sink"></iframe><script>
window.attack = async ({ target, existing, seq, ids }) => {
  const s = (id) => target + '/v1/streams/' + encodeURIComponent(id);
  const form = new FormData();
  form.append('create', 'true');
  const calls = [
    ['open-text', s(ids.text) + '/open?', '{"create":true}'],
    ['open-form', s(ids.form) + '/open?', new URLSearchParams({ create: 'true' })],
    ['open-multipart', s(ids.multipart) + '/open?', form],
    ['open-blob', s(ids.blob) + '/open?', new Blob(['{"create":true}'], { type: 'text/plain' })],
    ['append', s(existing) + '/append?offset=' + seq + '&', 'X'],
    ['append-form', s(existing) + '/append?offset=' + seq + '&', new URLSearchParams({ x: 'y' })],
    ['body', s(existing) + '/body?offset=' + seq + '&', 'Y'],
    ['flush', s(existing) + '/flush?', ''],
    ['fail', s(existing) + '/fail?', '{"message":"from a page"}'],
    ['close', s(existing) + '/close?', ''],
    ['cancel', s(existing) + '/cancel?', ''],
  ];
  const settled = {};
  await Promise.all(calls.map(([name, url, body]) =>
    fetch(url + 'probe=' + name, { method: 'POST', mode: 'no-cors', body })
      .then((r) => { settled[name] = r.type; }, (e) => { settled[name] = 'rejected: ' + e.message; })));
  // Without fetch: a beacon (a text/plain POST) and a form posted into the iframe.
  settled.beacon = String(navigator.sendBeacon(s(existing) + '/append?offset=' + seq + '&probe=beacon', 'B'));
  const f = document.createElement('form');
  f.method = 'POST';
  f.enctype = 'text/plain';
  f.target = 'sink';
  f.action = s(existing) + '/cancel?probe=form-cancel';
  document.body.append(f);
  f.submit();
  settled['form-cancel'] = 'submitted';
  // The control reads: this page's own origin (readable), and the stream server's SSE endpoint
  // for a stream that does not exist (a harmless read, which it cannot see).
  settled.own = await fetch('/ping').then((r) => r.text(), (e) => 'rejected: ' + e.message);
  settled.read = await fetch(target + '/api/stream?streamId=xo-nothing&from=0&probe=read', { mode: 'no-cors' })
    .then((r) => r.type, (e) => 'rejected: ' + e.message);
  return settled;
};
window.ready = true;
</script>`;

/**
 * The rebound page: same-origin with the server (as after a DNS rebinding), so it sends JSON
 * without asking and reads every answer: `{ status, kind }` per call.
 */
const REBOUND_PAGE = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>a rebound page</title><script>
window.attack = async ({ existing, seq, ids }) => {
  const s = (id) => '/v1/streams/' + encodeURIComponent(id);
  const json = { 'content-type': 'application/json' };
  const calls = [
    ['open', s(ids.rebound) + '/open', 'POST', '{"create":true}', json],
    ['append', s(existing) + '/append?offset=' + seq, 'POST', 'R', { 'content-type': 'text/plain; charset=utf-8' }],
    ['body', s(existing) + '/body?offset=' + seq, 'POST', 'R', {}],
    ['flush', s(existing) + '/flush', 'POST', '', {}],
    ['fail', s(existing) + '/fail', 'POST', '{"message":"rebound"}', json],
    ['close', s(existing) + '/close', 'POST', '', {}],
    ['cancel', s(existing) + '/cancel', 'POST', '', {}],
    ['status', s(existing), 'GET', undefined, {}],
    ['sse', '/api/stream?streamId=' + encodeURIComponent(existing) + '&from=0', 'GET', undefined, {}],
  ];
  const out = {};
  await Promise.all(calls.map(async ([name, url, method, body, headers]) => {
    const abort = new AbortController();
    try {
      const r = await fetch(url, { method, body, headers, signal: abort.signal });
      // An SSE answer to an open stream never ends: the head is enough.
      const text = r.headers.get('content-type')?.startsWith('text/event-stream') ? '(sse)' : await r.text();
      abort.abort();
      let kind = null;
      try { kind = JSON.parse(text).kind ?? null; } catch {}
      out[name] = { status: r.status, kind, text: text.slice(0, 200) };
    } catch (e) {
      out[name] = { status: 'rejected: ' + e.message };
    }
  }));
  return out;
};
window.ready = true;
</script>`;

let work;
let pages;
let pagePort;
let server;
let serverPort;
let base;
let context;
let existingSeq;
/** The rebound page, loaded before the server started (see `before`). */
let rebound;

const enc = (s) => encodeURIComponent(s);

/** A call from Node, a program on this machine: trusted without secrets. */
async function api(method, path, body, headers = {}) {
  const res = await fetch(`${base}${path}`, { method, body, headers });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, json, text };
}

/** The attacker's own site: the cross-site page and a `/ping` for its control read. */
function serveAttacker() {
  return http.createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/attack.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(CROSS_SITE_PAGE);
    }
    if (path === '/ping') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end('pong');
    }
    res.writeHead(404);
    return res.end();
  });
}

/**
 * A new page whose requests to the stream server are recorded: `answers[probe or path]` is
 * `{ status, host }` as the network saw it (for no-cors requests too, whose answer the page cannot
 * read; their bodies are withheld from the test as well).
 */
async function recordedPage() {
  const page = await context.newPage();
  const answers = {};
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('response', async (response) => {
    const url = new URL(response.url());
    if (url.port !== String(serverPort)) return;
    const key = url.searchParams.get('probe') ?? `${response.request().method()} ${url.pathname}`;
    answers[key] = { status: response.status(), host: url.host };
  });
  return { page, answers, problems };
}

/** Wait until `answers` holds every key in `keys` (the network events arrive after the page's promises). */
async function waitForAnswers(answers, keys) {
  const deadline = Date.now() + 15_000;
  while (!keys.every((k) => answers[k]) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(keys.filter((k) => !answers[k]), [], `answers seen: ${JSON.stringify(answers)}`);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'twoplane-xorigin-'));
  pages = serveAttacker();
  await new Promise((r) => pages.listen(0, '127.0.0.1', r));
  pagePort = pages.address().port;
  context = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', `--host-resolver-rules=MAP ${EVIL} 127.0.0.1`],
  });

  // The rebinding: the attacker's site answers on a port of this machine under its own name and
  // hands out the rebound page; then it goes away and the stream server listens on that port. The
  // page stays, same-origin with the server now (a DNS rebinding re-points the name instead; to
  // the page and the server it is the same, and the document came from a loopback address as
  // well, so Chromium's own check of pages reaching more private addresses does not step in).
  const site = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
    res.end(REBOUND_PAGE);
  });
  await new Promise((r) => site.listen(0, '127.0.0.1', r));
  serverPort = site.address().port;
  rebound = await recordedPage();
  await rebound.page.goto(`http://${EVIL}:${serverPort}/rebound.html`);
  await rebound.page.waitForFunction(() => window.ready === true, null, { timeout: 20_000 });
  site.closeAllConnections();
  await new Promise((r) => site.close(r));

  // No --producer-token-file, no --read-token-secret-file: the loopback default.
  const started = await startServer(BIN, ['--listen', `127.0.0.1:${serverPort}`, '--db', join(work, 'x.db')]);
  server = started.child;
  base = `http://${started.addr}`;
  assert.equal(Number(new URL(base).port), serverPort);
  // The stream a producer opened, with text, still open.
  assert.equal((await api('POST', `/v1/streams/${enc(EXISTING)}/open`, '{"create":true}',
    { 'content-type': 'application/json' })).status, 200);
  const appended = await api('POST', `/v1/streams/${enc(EXISTING)}/append?offset=0`, LEGIT);
  assert.equal(appended.status, 200, appended.text);
  existingSeq = appended.json.seq;
  assert.equal(existingSeq, LEGIT.length);
});

after(async () => {
  await context?.close().catch(() => {});
  await stopServer(server);
  await new Promise((r) => (pages ? pages.close(r) : r()));
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Where the existing stream stands, and whether each of `ids` exists. */
async function assertNothingChanged(ids, what) {
  for (const id of ids) {
    const got = await api('GET', `/v1/streams/${enc(id)}`);
    assert.deepEqual([got.status, got.json?.kind], [404, 'unknown_stream'], `${what}: ${id} exists: ${got.text}`);
  }
  const got = await api('GET', `/v1/streams/${enc(EXISTING)}`);
  assert.equal(got.status, 200, got.text);
  assert.deepEqual(
    { seq: got.json.live?.seq, cancelled: got.json.live?.cancelled, ended: got.json.live?.ended },
    { seq: existingSeq, cancelled: false, ended: null },
    `${what}: the existing stream changed: ${got.text}`,
  );
  assert.equal(got.json.stored.status, 'streaming', `${what}: ${got.text}`);
}

test('a cross-site page posting no-cors to the loopback server changes nothing', { timeout: 60_000 }, async () => {
  const ids = { text: `xo-text-${RUN}`, form: `xo-form-${RUN}`, multipart: `xo-multipart-${RUN}`, blob: `xo-blob-${RUN}` };
  const { page, answers, problems } = await recordedPage();
  await page.goto(`http://${EVIL}:${pagePort}/attack.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20_000 });
  assert.equal(new URL(page.url()).host, `${EVIL}:${pagePort}`);
  const settled = await page.evaluate((o) => window.attack(o), { target: base, existing: EXISTING, seq: existingSeq, ids });

  // The page ran: every fetch settled as an opaque answer (the server answered; the page may not
  // look), and its own origin answered it.
  const posts = ['open-text', 'open-form', 'open-multipart', 'open-blob', 'append', 'append-form', 'body', 'flush',
    'fail', 'close', 'cancel'];
  for (const name of posts) assert.equal(settled[name], 'opaque', `${name}: ${JSON.stringify(settled)}`);
  assert.equal(settled.beacon, 'true', 'the beacon was queued');
  assert.equal(settled.own, 'pong');
  assert.equal(settled.read, 'opaque');

  // What the server answered, as the network saw it: nothing changed, and a refusal for every
  // call that would have changed something.
  await waitForAnswers(answers, [...posts, 'beacon', 'form-cancel', 'read']);
  await assertNothingChanged(Object.values(ids), 'after the cross-site page');
  // (403 is `cross_site` here: the peer is on loopback and `Host` is 127.0.0.1; with the guard
  // gone the opens would answer 200 and the cancels 202.)
  for (const name of [...posts, 'beacon', 'form-cancel']) {
    assert.equal(answers[name].status, 403, `${name}: ${JSON.stringify(answers[name])}`);
  }
  // The harmless read was answered, not refused: the refusals above are the guard's, not a dead server.
  assert.equal(answers.read.status, 200, JSON.stringify(answers.read));
  assert.deepEqual(problems, []);
  await page.close();
});

test('a rebound page (a foreign Host, same origin as the server) is refused and reads nothing', { timeout: 60_000 }, async () => {
  const ids = { rebound: `xo-rebound-${RUN}` };
  const { page, answers, problems } = rebound;
  assert.equal(new URL(page.url()).host, `${EVIL}:${serverPort}`);
  const out = await page.evaluate((o) => window.attack(o), { existing: EXISTING, seq: existingSeq, ids });
  await assertNothingChanged(Object.values(ids), 'after the rebound page');

  // Every answer is readable to the page, and every one is a refusal.
  const producer = ['open', 'append', 'body', 'flush', 'fail', 'close', 'status'];
  for (const name of producer) {
    assert.deepEqual([out[name]?.status, out[name]?.kind], [403, 'foreign_host'], `${name}: ${JSON.stringify(out[name])}`);
  }
  for (const name of ['cancel', 'sse']) assert.equal(out[name]?.status, 403, `${name}: ${JSON.stringify(out[name])}`);
  assert.ok(!JSON.stringify(out).includes(LEGIT), 'the page read none of the text');
  // They came from the server itself, addressed by the rebound name.
  await waitForAnswers(answers, [`GET /v1/streams/${enc(EXISTING)}`]);
  assert.equal(answers[`GET /v1/streams/${enc(EXISTING)}`].host, `${EVIL}:${serverPort}`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('after both pages the producer carries on from where it was', async () => {
  // The legitimate follow-up: the next delta at the seq the stream had before the attacks.
  const next = await api('POST', `/v1/streams/${enc(EXISTING)}/append?offset=${existingSeq}`, ' and more');
  assert.equal(next.status, 200, next.text);
  const closed = await api('POST', `/v1/streams/${enc(EXISTING)}/close`);
  assert.deepEqual([closed.status, closed.json?.status], [200, 'complete'], closed.text);
  const got = await api('GET', `/v1/streams/${enc(EXISTING)}`);
  assert.equal(got.json.stored.text, `${LEGIT} and more`);
});
