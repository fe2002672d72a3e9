// The producer API of `twoplane serve` (no --demo) end to end, with real processes: producers in
// Node (a fetch request whose body streams, per-delta appends with retries) and in curl
// (`curl -T -`), readers in headless Chromium through the browser package with minted read
// tokens, a reader that reloads mid-stream, a reader's cancel that stops the producer, a reader in
// Python whose token the Python example mints, and the token refusals.
//
// Every reader must end with exactly the produced text (or, after a cancel, exactly the text the
// store holds), and the store must hold it. The page and the package are served to Chromium
// through request interception on the server's own origin, so the readers' requests are the ones
// an application's page would make.
//
// Env: TWOPLANE_BIN (the built binary), CHROMIUM (default /usr/bin/chromium), PYTHON (python3),
// TWOPLANE_PRODUCER_SEED (replays a run's random choices; every run prints its seed),
// TWOPLANE_PRODUCER_PG_URL (run on that PostgreSQL instead of a fresh SQLite file).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
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
const PYTHON = process.env.PYTHON ?? 'python3';
const PKG = join(ROOT, 'npm/twoplane');
const PG_URL = process.env.TWOPLANE_PRODUCER_PG_URL;

// A small seeded generator, so a failing run can be replayed.
const SEED = Number(process.env.TWOPLANE_PRODUCER_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`producer e2e seed: ${SEED} (TWOPLANE_PRODUCER_SEED=${SEED} replays it)${PG_URL ? ' on PostgreSQL' : ''}`);
// Stream ids are unique per run too: a PostgreSQL database outlives runs.
const RUN = `${SEED}-${Date.now().toString(36)}`;
let state = SEED >>> 0 || 1;
function rand() {
  state ^= state << 13;
  state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5;
  state >>>= 0;
  return state / 2 ** 32;
}
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const WORDS = ['the', 'model', 'écrit', 'ответ', '流式', 'token', '😀', 'e\u0301', '🇫🇷', 'x', ' ', '\n', 'ß', '𝄞'];
function answerText(words) {
  let s = '';
  for (let i = 0; i < words; i += 1) s += pick(WORDS) + (rand() < 0.7 ? ' ' : '');
  return s;
}
/** `bytes` cut into pieces at random byte offsets (characters are split on purpose). */
function byteSplit(bytes, maxPiece) {
  const pieces = [];
  for (let at = 0; at < bytes.length; ) {
    const n = 1 + Math.floor(rand() * maxPiece);
    pieces.push(bytes.subarray(at, at + n));
    at += n;
  }
  return pieces;
}

let work;
let server;
let base;
let producerSecret;
let readSecret;
let readSecretFile;
let context;
const problems = [];

const producerHeaders = () => ({ authorization: `Bearer ${producerSecret}` });

async function api(method, path, { body, headers } = {}) {
  const res = await fetch(`${base}${path}`, { method, body, headers: { ...producerHeaders(), ...headers } });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // Not JSON: the caller looks at `text`.
  }
  return { status: res.status, json, text };
}

const enc = (s) => encodeURIComponent(s);
const openStream = (id) => api('POST', `/v1/streams/${enc(id)}/open`, { body: '{"create":true}' });
const stored = async (id) => (await api('GET', `/v1/streams/${enc(id)}`)).json?.stored;
const token = (id, extra = {}) => signStreamToken({ secret: readSecret, streamId: id, ttlSeconds: 600, ...extra });

// ---------------------------------------------------------------- the page

const PAGE = `<!doctype html><meta charset="utf-8"><title>readers</title><script type="module">
import { StreamReader } from '/__test/pkg/src/index.browser.js';
window.__readers = {};
window.read = (key, { id, token, transport, durableText }) => {
  const r = { text: durableText, stop: null, updates: 0 };
  window.__readers[key] = r;
  const options = transport === 'eventsource'
    ? { endpoint: '/api/stream?token=' + encodeURIComponent(token), transport }
    : { endpoint: '/api/stream', transport, headers: { authorization: 'Bearer ' + token } };
  const reader = new StreamReader({
    ...options,
    streamId: id,
    durableText,
    onUpdate() { r.text = reader.text; r.updates += 1; },
    onStop(reason) { r.text = reader.text; r.stop = reason; },
  });
  reader.start();
};
window.cancelStream = async (id, token) => {
  const res = await fetch('/v1/streams/' + encodeURIComponent(id) + '/cancel?token=' + encodeURIComponent(token), { method: 'POST' });
  return res.status;
};
window.ready = true;
</script>`;

const TYPES = { '.js': 'text/javascript; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json' };

async function newPage() {
  const page = await context.newPage();
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  await page.route(`${base}/__test/**`, async (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/__test/reader.html') {
      return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: PAGE });
    }
    const rel = normalize(decodeURIComponent(path.slice('/__test/pkg/'.length)));
    if (!path.startsWith('/__test/pkg/') || rel.startsWith('..')) return route.fulfill({ status: 404, body: '' });
    try {
      const file = join(PKG, rel);
      const ext = file.slice(file.lastIndexOf('.'));
      return route.fulfill({ status: 200, contentType: TYPES[ext] ?? 'application/octet-stream', body: readFileSync(file) });
    } catch {
      return route.fulfill({ status: 404, body: '' });
    }
  });
  await loadPage(page);
  return page;
}

async function loadPage(page) {
  await page.goto(`${base}/__test/reader.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 20_000 });
}

const startReader = (page, key, options) => page.evaluate(([k, o]) => window.read(k, o), [key, options]);

async function readerResult(page, key, timeout = 30_000) {
  await page.waitForFunction((k) => window.__readers[k]?.stop !== null, key, { timeout });
  return page.evaluate((k) => window.__readers[k], key);
}

async function waitForText(page, key, minLength) {
  await page.waitForFunction(([k, n]) => (window.__readers[k]?.text.length ?? 0) >= n, [key, minLength], { timeout: 20_000 });
}

// ---------------------------------------------------------------- setup

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'twoplane-producer-'));
  producerSecret = randomBytes(24).toString('hex');
  readSecret = randomBytes(24).toString('base64url');
  const producerFile = join(work, 'producer-token');
  readSecretFile = join(work, 'read-secret');
  // A final newline, as an editor writes it: not part of the secret.
  writeFileSync(producerFile, `${producerSecret}\n`);
  writeFileSync(readSecretFile, `${readSecret}\n`);
  const started = await startServer(BIN, [
    '--listen', '127.0.0.1:0', ...(PG_URL ? ['--pg', PG_URL] : ['--db', join(work, 'p.db')]),
    '--producer-token-file', producerFile, '--read-token-secret-file', readSecretFile,
  ]);
  server = started.child;
  base = `http://${started.addr}`;
  context = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await context?.close().catch(() => {});
  await stopServer(server);
  if (work) rmSync(work, { recursive: true, force: true });
});

// ---------------------------------------------------------------- tests

test('a Node producer streams a fetch body; Chromium readers (one reloads mid-stream) end with exactly the text', async () => {
  const id = `node-${RUN}`;
  const text = answerText(400);
  const opened = await openStream(id);
  assert.equal(opened.status, 200, opened.text);
  assert.equal((await openStream(id)).json.kind, 'already_open', 'a second open of a live stream is refused');

  const [pageA, pageB] = [await newPage(), await newPage()];
  const tok = token(id, { userId: 'reader-1' });
  await startReader(pageA, 'a', { id, token: tok, transport: 'eventsource', durableText: '' });
  await startReader(pageB, 'b', { id, token: tok, transport: 'fetch', durableText: '' });

  const pieces = byteSplit(Buffer.from(text, 'utf8'), 12);
  let sent = 0;
  const reloadAt = Math.floor(pieces.length * 0.4);
  let reloaded = null;
  const body = new ReadableStream({
    async pull(controller) {
      if (sent === pieces.length) return controller.close();
      await sleep(8);
      controller.enqueue(pieces[sent]);
      sent += 1;
      if (sent === reloadAt) {
        // Reload reader B while the body is still streaming; it rejoins at the durable text the
        // application's database shows now.
        reloaded = (async () => {
          // Mid-stream and past the first checkpoint, so the rejoin starts inside the text.
          for (let i = 0; i < 100 && (await stored(id)).text === ''; i += 1) await sleep(50);
          await loadPage(pageB);
          const durable = (await stored(id)).text;
          assert.ok(text.startsWith(durable), 'the store holds a prefix of the text');
          await startReader(pageB, 'b2', { id, token: tok, transport: 'fetch', durableText: durable });
          return durable.length;
        })();
      }
    },
  });
  const res = await fetch(`${base}/v1/streams/${enc(id)}/body`, {
    method: 'POST', body, duplex: 'half', headers: { ...producerHeaders(), 'content-type': 'text/plain; charset=utf-8' },
  });
  const answer = await res.json();
  assert.equal(res.status, 200, JSON.stringify(answer));
  assert.equal(answer.seq, text.length, 'seq counts UTF-16 code units');
  const joinedAt = await reloaded;
  const closed = await api('POST', `/v1/streams/${enc(id)}/close`);
  assert.deepEqual(closed.json, { status: 'complete', seq: text.length, durableSeq: text.length });

  for (const [page, key] of [[pageA, 'a'], [pageB, 'b2']]) {
    const r = await readerResult(page, key);
    assert.equal(r.stop, 'end', key);
    assert.equal(r.text, text, `reader ${key} ends with exactly the produced text`);
  }
  assert.ok(joinedAt > 0 && joinedAt < text.length, `the reload rejoined mid-stream (at ${joinedAt} of ${text.length})`);
  const row = await stored(id);
  assert.equal(row.status, 'complete');
  assert.equal(row.text, text, 'the store holds the text');
  await pageA.close();
  await pageB.close();
});

test('a curl producer (curl -T -) and readers in Chromium and in Python end with exactly the text', async () => {
  const id = `curl-${RUN}`;
  const text = answerText(250);
  assert.equal((await openStream(id)).status, 200);
  const page = await newPage();
  await startReader(page, 'c', { id, token: token(id), transport: 'eventsource', durableText: '' });
  // The Python reader mints its own token with examples/python/stream_token.py.
  const python = spawn(PYTHON, [join(ROOT, 'tests/python/read_stream.py'), base, readSecretFile, id], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pyOut = collect(python);

  const curl = spawn('curl', ['-sS', '-X', 'POST', '-T', '-', '-H', `authorization: Bearer ${producerSecret}`,
    '-H', 'content-type: text/plain; charset=utf-8', `${base}/v1/streams/${enc(id)}/body`], { stdio: ['pipe', 'pipe', 'pipe'] });
  const curlOut = collect(curl);
  for (const piece of byteSplit(Buffer.from(text, 'utf8'), 20)) {
    curl.stdin.write(piece);
    await sleep(5);
  }
  curl.stdin.end();
  const { code, stdout, stderr } = await curlOut;
  assert.equal(code, 0, stderr);
  assert.equal(JSON.parse(stdout).seq, text.length);
  assert.equal((await api('POST', `/v1/streams/${enc(id)}/close`)).json.status, 'complete');

  const r = await readerResult(page, 'c');
  assert.equal(r.stop, 'end');
  assert.equal(r.text, text);
  const py = await pyOut;
  assert.equal(py.code, 0, py.stderr);
  assert.equal(JSON.parse(py.stdout).text, text, 'the Python reader got the text');
  assert.equal((await stored(id)).text, text);
  await page.close();
});

test("a reader's cancel stops a producer streaming its body, and per-delta appends answer 409 cancelled", async () => {
  const id = `cancel-${RUN}`;
  assert.equal((await openStream(id)).status, 200);
  const page = await newPage();
  const tok = token(id);
  await startReader(page, 'x', { id, token: tok, transport: 'fetch', durableText: '' });
  let produced = '';
  let pulls = 0;
  const body = new ReadableStream({
    async pull(controller) {
      await sleep(10);
      pulls += 1;
      if (pulls > 3000) return controller.close(); // the test fails below if it gets here
      const piece = `${pick(WORDS)} `;
      produced += piece;
      controller.enqueue(new TextEncoder().encode(piece));
    },
  });
  const producing = fetch(`${base}/v1/streams/${enc(id)}/body`, {
    method: 'POST', body, duplex: 'half', headers: producerHeaders(),
  });
  await waitForText(page, 'x', 80);
  // A wrong token cannot cancel; the reader's own can.
  assert.equal(await page.evaluate(([i, t]) => window.cancelStream(i, t), [id, token(`${id}-other`)]), 403);
  assert.equal(await page.evaluate(([i, t]) => window.cancelStream(i, t), [id, tok]), 202);

  const res = await producing;
  const answer = await res.json();
  assert.equal(res.status, 409, JSON.stringify(answer));
  assert.equal(answer.kind, 'cancelled', 'the response ends with the reason');
  assert.ok(pulls < 3000, 'the producer was stopped');
  const r = await readerResult(page, 'x');
  assert.equal(r.stop, 'end');
  const row = await stored(id);
  assert.equal(row.status, 'cancelled');
  assert.equal(row.text.length, answer.seq);
  assert.equal(r.text, row.text, 'the reader ends with exactly what the store holds');
  assert.ok(produced.startsWith(row.text), 'the store holds a prefix of what was sent');

  const late = await api('POST', `/v1/streams/${enc(id)}/append?offset=${answer.seq}`, { body: 'more' });
  assert.equal(late.status, 409);
  assert.equal(late.json.kind, 'cancelled');
  assert.equal(late.json.seq, answer.seq);
  await page.close();
});

/** An append whose response is lost: the request is written in full, then the socket is cut. */
function appendAndDrop(id, offset, delta) {
  return new Promise((resolveDrop) => {
    const req = http.request(`${base}/v1/streams/${enc(id)}/append?offset=${offset}`, {
      method: 'POST', headers: { ...producerHeaders(), 'content-type': 'text/plain; charset=utf-8' }, agent: false,
    });
    req.on('error', () => {});
    req.on('finish', () => setTimeout(() => { req.destroy(); resolveDrop(); }, Math.floor(rand() * 3)));
    req.end(Buffer.from(delta, 'utf8'));
  });
}

test('per-delta appends retried at random (twice, after a dropped response, ahead) store and stream exactly the text', async () => {
  const id = `deltas-${RUN}`;
  assert.equal((await openStream(id)).status, 200);
  const page = await newPage();
  await startReader(page, 'd', { id, token: token(id), transport: 'eventsource', durableText: '' });
  const deltas = Array.from({ length: 150 }, () => answerText(1 + Math.floor(rand() * 3)));
  const text = deltas.join('');
  const counts = { twice: 0, dropped: 0, ahead: 0 };
  let offset = 0;
  for (const delta of deltas) {
    const choice = rand();
    if (choice < 0.15) {
      counts.dropped += 1;
      await appendAndDrop(id, offset, delta);
    } else if (choice < 0.25) {
      counts.ahead += 1;
      const ahead = await api('POST', `/v1/streams/${enc(id)}/append?offset=${offset + 1}`, { body: delta });
      assert.equal(ahead.status, 409);
      assert.deepEqual([ahead.json.kind, ahead.json.seq], ['offset_ahead', offset]);
    }
    // The producer's rule: send with the offset; a 409 offset_behind naming exactly the end of
    // this delta means an earlier try landed.
    const end = offset + delta.length;
    const first = await api('POST', `/v1/streams/${enc(id)}/append?offset=${offset}`, { body: delta });
    if (first.status === 409) {
      assert.deepEqual([first.json.kind, first.json.seq], ['offset_behind', end], first.text);
    } else {
      assert.deepEqual([first.status, first.json.seq], [200, end], first.text);
    }
    if (choice > 0.85) {
      counts.twice += 1;
      const again = await api('POST', `/v1/streams/${enc(id)}/append?offset=${offset}`, { body: delta });
      assert.deepEqual([again.status, again.json.kind, again.json.seq], [409, 'offset_behind', end]);
    }
    offset = end;
  }
  assert.ok(counts.twice > 0 && counts.dropped > 0 && counts.ahead > 0, JSON.stringify(counts));
  const flushed = await api('POST', `/v1/streams/${enc(id)}/flush`);
  assert.deepEqual(flushed.json, { seq: text.length, durableSeq: text.length });
  assert.equal((await api('POST', `/v1/streams/${enc(id)}/close`)).json.status, 'complete');
  const r = await readerResult(page, 'd');
  assert.equal(r.stop, 'end');
  assert.equal(r.text, text, 'the streamed text is exactly the intended text');
  assert.equal((await stored(id)).text, text, 'the stored text is exactly the intended text');
  await page.close();
});

test('bad producer input gets a status and a kind, and loses nothing', async () => {
  const id = `bad-${RUN}`;
  assert.equal((await api('POST', `/v1/streams/${enc(id)}/open`)).json.kind, 'unknown_stream');
  assert.equal((await api('POST', `/v1/streams/${enc(id)}/append?offset=0`, { body: 'x' })).status, 404);
  assert.equal((await openStream(id)).status, 200);
  const ok = await api('POST', `/v1/streams/${enc(id)}/append?offset=0`, { body: 'héllo 😀' });
  assert.equal(ok.json.seq, 8);
  // In memory at once; the store holds at most as much (docs/server.md, the append's answer).
  assert.ok(Number.isInteger(ok.json.durableSeq) && ok.json.durableSeq <= 8, JSON.stringify(ok.json));
  const notUtf8 = await api('POST', `/v1/streams/${enc(id)}/append?offset=8`, { body: Buffer.from([0x61, 0xff]) });
  assert.deepEqual([notUtf8.status, notUtf8.json.kind, notUtf8.json.seq], [400, 'invalid_utf8', 8]);
  const big = await api('POST', `/v1/streams/${enc(id)}/append?offset=8`, { body: 'x'.repeat((1 << 20) + 1) });
  assert.deepEqual([big.status, big.json.kind], [413, 'too_large']);
  const noOffset = await api('POST', `/v1/streams/${enc(id)}/append`, { body: 'x' });
  assert.deepEqual([noOffset.status, noOffset.json.kind], [400, 'missing_offset']);
  // A body whose bytes turn bad mid-way keeps exactly the valid text before the bad byte.
  const bad = Buffer.concat([Buffer.from(' wörld', 'utf8'), Buffer.from([0xe2, 0x82]), Buffer.from('never', 'utf8')]);
  const badBody = await api('POST', `/v1/streams/${enc(id)}/body`, { body: bad });
  assert.deepEqual([badBody.status, badBody.json.kind, badBody.json.seq], [400, 'invalid_utf8', 14]);
  assert.equal((await api('POST', `/v1/streams/${enc(id)}/fail`, { body: '{"message":"the model failed"}' })).json.status, 'error');
  const row = await stored(id);
  assert.deepEqual([row.status, row.text], ['error', 'héllo 😀 wörld']);
  // A stream that exists but is not open on this server.
  const again = await api('POST', `/v1/streams/${enc(`node-${RUN}`)}/append?offset=0`, { body: 'x' });
  assert.ok(['not_open', 'stream_closed'].includes(again.json.kind), again.text);
});

test('read tokens: valid, expired, tampered, wrong stream, missing, and a stream that does not exist', async () => {
  const existing = `node-${RUN}`;
  const missing = `never-${RUN}`;
  const now = Math.floor(Date.now() / 1000);
  const sse = async (id, { query, header } = {}) => {
    const url = `${base}/api/stream?streamId=${enc(id)}&from=0${query === undefined ? '' : `&token=${enc(query)}`}`;
    const controller = new AbortController();
    const res = await fetch(url, { headers: header === undefined ? {} : { authorization: `Bearer ${header}` }, signal: controller.signal });
    const out = { status: res.status, type: res.headers.get('content-type') };
    out.body = res.status === 200 ? '' : await res.text();
    controller.abort();
    return out;
  };
  for (const id of [existing, missing]) {
    const valid = token(id);
    assert.equal((await sse(id, { query: valid })).status, 200, 'a valid token in the query');
    assert.equal((await sse(id, { header: valid })).status, 200, 'a valid token in the header');
  }
  const refusals = [];
  for (const id of [existing, missing]) {
    const valid = token(id);
    const [payload, mac] = valid.split('.');
    const flip = (s, i) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    const cases = {
      expired: token(id, { expiresAt: now - 1, ttlSeconds: undefined }),
      tamperedPayload: `${flip(payload, 5)}.${mac}`,
      tamperedMac: `${payload}.${flip(mac, 3)}`,
      wrongStream: token(id === existing ? missing : existing),
      otherSecret: signStreamToken({ secret: `${readSecret}x`, streamId: id, ttlSeconds: 600 }),
      garbage: 'not-a-token',
      unsigned: payload,
      emptyMac: `${payload}.`,
    };
    refusals.push(await sse(id));
    for (const [name, t] of Object.entries(cases)) {
      for (const carrier of ['query', 'header']) {
        const got = await sse(id, { [carrier]: t });
        assert.equal(got.status, 403, `${name} (${carrier}) for ${id}`);
        refusals.push(got);
      }
    }
    const cancel = await fetch(`${base}/v1/streams/${enc(id)}/cancel?token=${enc(cases.expired)}`, { method: 'POST' });
    refusals.push({ status: cancel.status, type: cancel.headers.get('content-type'), body: await cancel.text() });
  }
  // Every refusal looks the same, whether or not the stream exists.
  for (const r of refusals) assert.deepEqual(r, refusals[0]);
  assert.equal(refusals[0].status, 403);

  // The producer API refuses without the producer secret, the same way for both streams.
  for (const id of [existing, missing]) {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${readSecret}` }]) {
      const res = await fetch(`${base}/v1/streams/${enc(id)}/open`, { method: 'POST', headers });
      assert.equal(res.status, 401);
      assert.equal((await res.json()).kind, 'unauthorized');
    }
  }
  // The cancel test's wrong-token cancel is the one refusal a page saw on purpose.
  assert.deepEqual(problems.filter((p) => !/status of 403/.test(p)), []);
  assert.ok(problems.length <= 1, problems.join('\n'));
});

function collect(child) {
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((r) => child.on('close', (code) => r({ code, stdout, stderr })));
}
