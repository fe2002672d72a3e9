// `useChat({ resume: true })` with the `twoplane/ai-sdk` transport in headless Chromium (Debian's
// /usr/bin/chromium through playwright-core), for one major of `ai` and `@ai-sdk/react`
// (TWOPLANE_AI=5|6|7, run with `node --import ./lib/ai-alias.mjs`): browser/page.mjs bundled by
// esbuild, an app server in this process (the route that produces the paced turn into
// `twoplane serve` with `responseOptions`, the chat's resume route as the app's own proxy, and
// `/tp`, a proxy to twoplane on the page's origin), and the built binary.
//
// A page that sends and is never reloaded renders the message the SDK builds from the stream;
// a page reloaded several times mid-answer renders the same message, the server's tool reaches
// `onToolCall` once, and the client-side tool once, or twice when the page that ran it was
// reloaded (it is offered again once: its output would have lived only in that page). A message that goes on (a client tool's
// output or an approval sent back) reloaded mid first turn, between the turns and mid continuation
// is browser-continue.test.mjs.
//
// Env: TWOPLANE_AI (required), TWOPLANE_BIN, CHROMIUM (default /usr/bin/chromium),
// TWOPLANE_AISDK_SEED.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { chromium } from 'playwright-core';
import { loadMajor } from './lib/majors.mjs';
import { bundlePage, proxyTo, servePage } from './lib/page.mjs';
import { lastMessage, asJson } from './lib/read.mjs';
import { pacedTurn } from './lib/turn.mjs';
import { startTwoplane, readUi } from './lib/twoplane.mjs';
import { respond } from './lib/respond.mjs';
import { CHROMIUM_ARGS } from '../browser/lib/chromium-args.mjs';
import { signStreamToken } from '../../npm/twoplane/src/token.js';

const major = process.env.TWOPLANE_AI;
const M = await loadMajor(major);
const { createTwoplaneProducer } = await import('../../npm/twoplane/src/ai-sdk.node.js');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const SEED = Number(process.env.TWOPLANE_AISDK_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`ai ${M.version} in Chromium: seed ${SEED} (TWOPLANE_AISDK_SEED=${SEED} replays it)`);
let rng = SEED >>> 0 || 1;
function rand() {
  rng ^= rng << 13;
  rng >>>= 0;
  rng ^= rng >>> 17;
  rng ^= rng << 5;
  rng >>>= 0;
  return rng / 2 ** 32;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const DELAY = 25; // ms between the model's chunks: the answer takes about two seconds

let tp;
let producer;
let app;
let browser;
let profile;
let chats = 0;


/** The app: page, bundle, the chat route, the chat's resume route (a proxy), /tp (a proxy), /tool-ran. */
async function startApp(js) {
  const state = { chats: new Map(), runs: new Map(), toolRuns: [] };
  const pageRoute = servePage(js, () => tp.url);
  const proxy = proxyTo(() => tp.url);
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://app');
    if (pageRoute(req, res, url)) {
      // the page, its bundle, or twoplane through the app's origin
    } else if (req.method === 'POST' && url.pathname === '/tool-ran') {
      let body = '';
      for await (const c of req) body += c;
      const [call, load] = body.split(' ');
      state.toolRuns.push({ call, load: Number(load) });
      res.writeHead(204).end();
    } else if (req.method === 'POST' && url.pathname === '/api/chat') {
      let body = '';
      for await (const c of req) body += c;
      const { id: chatId } = JSON.parse(body);
      const streamId = `page-m${major}-${SEED}-${state.runs.size + 1}`;
      state.chats.set(chatId, streamId);
      const options = await producer.responseOptions(streamId);
      state.runs.set(streamId, options.done);
      const stream = pacedTurn(M, { streamId, delayMs: DELAY, abortSignal: producer.signal(streamId) });
      const response = M.ai.createUIMessageStreamResponse({ stream, ...options });
      await respond(res, response);
    } else if (req.method === 'GET' && /^\/api\/chat\/[^/]+\/stream$/.test(url.pathname)) {
      // The chat's resume route, as an app would write it: the chat's current stream, from twoplane.
      const chatId = decodeURIComponent(url.pathname.split('/')[3]);
      const streamId = state.chats.get(chatId);
      if (!streamId) {
        res.writeHead(204).end();
        return;
      }
      req.headers.authorization = `Bearer ${signStreamToken({ secret: tp.readSecret, streamId, ttlSeconds: 60 })}`;
      proxy(req, res, `/v1/streams/${encodeURIComponent(streamId)}/ui-message-stream${url.search}`);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, server, state };
}

before(async () => {
  tp = await startTwoplane();
  producer = createTwoplaneProducer({ url: tp.url, producerToken: tp.producerToken, readTokenSecret: tp.readSecret });
  const js = await bundlePage('browser/page.mjs', major);
  assert.ok(!js.includes('node:crypto'), 'the page bundle does not carry the Node token minting');
  app = await startApp(js);
  profile = mkdtempSync(join(tmpdir(), 'twoplane-aisdk-chromium-'));
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
});
after(async () => {
  await browser?.close();
  app?.server.close();
  await tp?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** The page's state: status, rendered message, the held record. */
const look = (page, chatId) =>
  page.evaluate((chatId) => ({
    status: document.getElementById('status')?.textContent ?? '',
    message: document.getElementById('message')?.textContent ?? '',
    count: document.getElementById('count')?.textContent ?? '',
    held: sessionStorage.getItem(`twoplane:held:${chatId}`),
    loads: window.__loads,
  }), chatId);

/** Wait (bounded) until the page is ready and shows an answer that ended with the client tool's call. */
async function answered(page, chatId, ms = 30_000) {
  const t0 = Date.now();
  for (;;) {
    const s = await look(page, chatId);
    if (s.status === 'ready' && s.message) {
      const m = JSON.parse(s.message);
      if (m.parts.some((p) => p.type === 'tool-confirm' && p.state === 'input-available')) return { ...s, rendered: m };
    }
    assert.ok(Date.now() - t0 < ms, `the page did not finish the answer: ${JSON.stringify(s)}`);
    await sleep(50);
  }
}

async function builtFromStream(streamId) {
  const token = signStreamToken({ secret: tp.readSecret, streamId });
  const r = await readUi(tp, token, streamId);
  return asJson((await lastMessage(M, r.events.filter((e) => !e.done).map((e) => e.chunk))).message);
}

async function run(reloads) {
  const context = await browser.newContext();
  const errors = [];
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  app.state.toolRuns.length = 0;
  const chatId = `chat-${++chats}`;
  try {
    await page.goto(`${app.url}/?chat=${chatId}`);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready', null, { timeout: 15_000 });
    await page.click('#send');
    for (let i = 0; i < reloads; i += 1) {
      await sleep(150 + Math.floor(rand() * 350));
      await page.reload();
    }
    const done = await answered(page, chatId);
    const streamId = JSON.parse(done.held).streamId;
    await app.state.runs.get(streamId);
    // the onToolCall reports of the last page may still be on their way
    const t0 = Date.now();
    while (app.state.toolRuns.length < 2 && Date.now() - t0 < 5000) await sleep(20);
    await sleep(100);
    return { ...done, streamId, toolRuns: app.state.toolRuns.map((t) => t.call), toolLoads: app.state.toolRuns.map((t) => t.load), errors };
  } finally {
    await context.close();
  }
}

test('a page never reloaded renders the message the SDK builds from the stream', async () => {
  const r = await run(0);
  assert.equal(r.loads, 1);
  assert.deepEqual(r.rendered, await builtFromStream(r.streamId));
  assert.equal(r.rendered.id, r.streamId);
  assert.deepEqual(r.toolRuns.sort(), ['call-1', 'call-2'], 'onToolCall ran once per call');
  assert.deepEqual(r.errors, []);
});

test('a page reloaded mid-answer several times renders the same message, and its client-side tool ran once (and once more after the page that ran it went away)', async () => {
  const plain = await run(0);
  const { id: _a, ...plainRest } = plain.rendered;
  for (let round = 0; round < 2; round += 1) {
    const reloads = 3 + Math.floor(rand() * 3);
    const r = await run(reloads);
    assert.equal(r.loads, reloads + 1, `the page was loaded ${reloads + 1} times`);
    assert.deepEqual(r.rendered, await builtFromStream(r.streamId), `round ${round}: the rendered message is the stream's`);
    const { id: _b, ...rest } = r.rendered;
    assert.deepEqual(rest, plainRest, `round ${round}: the same message as the page never reloaded`);
    assert.equal(r.count, '2', 'one user and one assistant message');
    // The client-side tool (no page gives its output here): once, and once more on a later page
    // when the page that ran it was reloaded (its output would have lived only in that page).
    const loads = r.toolLoads.filter((_, i) => r.toolRuns[i] === 'call-2');
    const expected = loads[0] === r.loads ? 1 : 2;
    assert.equal(loads.length, expected, `round ${round}: the client-side tool ran on loads ${loads} of ${r.loads}`);
    assert.ok(loads.length < 2 || loads[1] > loads[0], `round ${round}: offered again on a later page (loads ${loads})`);
    assert.ok(r.toolRuns.filter((t) => t === 'call-1').length === 1, `round ${round}: onToolCall once for the server's tool too (${r.toolRuns})`);
    assert.deepEqual(r.errors, []);
  }
});
