// A message that goes on, through `useChat({ resume: true })` in headless Chromium (Debian's
// /usr/bin/chromium through playwright-core), for one major of `ai` and `@ai-sdk/react`
// (TWOPLANE_AI=5|6|7, run with `node --import ./lib/ai-alias.mjs`): browser/continue-page.mjs
// bundled by esbuild as browser.test.mjs bundles its page, the app of lib/continuation.mjs (the
// same paced mock model behind a route without twoplane and a route producing into `twoplane
// serve`, the server saving each chat's messages, which a loaded page starts from) with the page,
// `/tp` (a proxy to twoplane on the page's origin), `/tool-ran` and `/approved` added, and the built
// binary.
//
// For the client-side tool (every major) and the tool approval (ai 6 and 7): a page through
// `DefaultChatTransport` and the plain route, never reloaded, gives the reference. A page through
// `TwoplaneChatTransport` is reloaded mid first turn (part of its text shown), between the turns
// (client tool: as soon as the continuation, the tool's output in it, reaches the app, which holds
// it until the reloaded page is up, so that the page resumes a stream that has not gone on yet;
// approval: once the approval is asked for, the reloaded page giving it) and mid continuation (part of its
// text shown). Its final messages deep-equal the reference's (ai 6: but the approval's
// `approved`, which no ai 6 chunk carries, see continue-reload.test.mjs); over all its loads
// `onToolCall` ran once, the approval was given once, `deploy` ran once, and the app got the
// first turn and one continuation.
//
// Env: TWOPLANE_AI (required), TWOPLANE_BIN, CHROMIUM (default /usr/bin/chromium).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { loadMajor } from './lib/majors.mjs';
import { bundlePage, servePage } from './lib/page.mjs';
import { startTwoplane } from './lib/twoplane.mjs';
import { startContinuationApp, comparable, CONTINUATION_TEXT } from './lib/continuation.mjs';
import { CHROMIUM_ARGS } from '../browser/lib/chromium-args.mjs';

const major = process.env.TWOPLANE_AI;
const M = await loadMajor(major);
const { createTwoplaneProducer } = await import('../../npm/twoplane/src/ai-sdk.node.js');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const DELAY = 60; // ms between the model's chunks: a turn takes about half a second
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let tp;
let producer;
let app;
let browser;
let chats = 0;
const reports = { toolRuns: new Map(), approvals: new Map() };


/** The routes the page needs beside the app's: the page, its bundle, /tp, /tool-ran, /approved. */
function pageRoutes(js) {
  const pageRoute = servePage(js, () => tp.url);
  const note = (map, chatId, value) => map.set(chatId, [...(map.get(chatId) ?? []), value]);
  return async (req, res, url) => {
    if (pageRoute(req, res, url)) {
      // the page, its bundle, or twoplane through the app's origin
    } else if (req.method === 'POST' && (url.pathname === '/tool-ran' || url.pathname === '/approved')) {
      let body = '';
      for await (const c of req) body += c;
      const r = JSON.parse(body);
      if (url.pathname === '/tool-ran') note(reports.toolRuns, r.chatId, r.toolCallId);
      else note(reports.approvals, r.chatId, r.approvalId);
      res.writeHead(204).end();
    } else {
      return false;
    }
    return true;
  };
}

before(async () => {
  tp = await startTwoplane();
  producer = createTwoplaneProducer({ url: tp.url, producerToken: tp.producerToken, readTokenSecret: tp.readSecret });
  const js = await bundlePage('browser/continue-page.mjs', major);
  app = await startContinuationApp(M, { producer: () => producer, tp, delayMs: DELAY, extra: pageRoutes(js) });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
});
after(async () => {
  await browser?.close();
  app?.close();
  await tp?.stop();
});

/** The page's status and messages. */
const look = (page) =>
  page.evaluate(() => ({
    status: document.getElementById('status')?.textContent ?? '',
    messages: JSON.parse(document.getElementById('messages')?.textContent || '[]'),
    loads: window.__loads,
  }));
const assistantOf = (s) => s.messages.findLast((m) => m.role === 'assistant');
const textOf = (m) => (m?.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('');
const toolOf = (m) => (m?.parts ?? []).find((p) => p.type === 'tool-confirm' || p.type === 'tool-deploy');

/** Wait (bounded) until the page's state satisfies `ok`; a page that failed stops the wait. */
async function until(page, ok, what, ms = 20_000) {
  const t0 = Date.now();
  for (;;) {
    const s = await look(page).catch(() => null); // null while the page reloads
    if (s && ok(s)) return s;
    if (s && s.status.startsWith('error')) assert.fail(`${what}: the page failed: ${s.status}`);
    assert.ok(Date.now() - t0 < ms, `${what}: not within ${ms} ms (${JSON.stringify(s)})`);
    await sleep(10);
  }
}

/** Ready, and `ok`, for a moment. */
async function settled(page, ok, what) {
  for (;;) {
    await until(page, (s) => s.status === 'ready' && ok(s), what);
    await sleep(150);
    const s = await look(page);
    if (s.status === 'ready' && ok(s)) return s;
  }
}

/** One conversation in a page through `mode`, reloaded at the points of `reloads`. */
async function converse(mode, flow, reloads = []) {
  const chatId = `${mode}-${flow}-${++chats}`;
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const continued = app.continuation(chatId);
  // Between the turns, the continuation reaches the app only once the reloaded page is up: the
  // page resumes a stream that has not gone on yet.
  const release = reloads.includes('between') && flow === 'client' ? app.hold(chatId) : () => {};
  const reload = () => page.reload({ waitUntil: 'commit' });
  try {
    await page.goto(`${app.url}/?mode=${mode}&flow=${flow}&chat=${chatId}`);
    await until(page, (s) => s.status === 'ready', 'the page is ready');
    await page.click('#send');
    if (reloads.includes('first')) {
      const s = await until(page, (s) => textOf(assistantOf(s)).length > 0, 'the first turn shows');
      assert.ok(!toolOf(assistantOf(s)) && !textOf(assistantOf(s)).startsWith('Let me ask.'), 'mid first turn');
      await reload();
    }
    if (flow === 'client') {
      if (reloads.includes('between')) {
        await continued;
        await reload();
        await until(page, (s) => s.loads === (reloads.includes('first') ? 3 : 2), 'the page is loaded again');
        await sleep(300);
        release();
      }
    } else {
      const asked = (s) => toolOf(assistantOf(s))?.state === 'approval-requested';
      await settled(page, asked, 'the approval is asked for');
      if (reloads.includes('between')) {
        await reload();
        await settled(page, asked, 'the reloaded page asks for the approval');
      }
      await page.click('#approve');
    }
    if (reloads.includes('continuation')) {
      const s = await until(page, (s) => textOf(assistantOf(s)).includes('You '), 'the continuation shows');
      assert.ok(!textOf(assistantOf(s)).includes(CONTINUATION_TEXT), 'mid continuation');
      await reload();
    }
    const s = await settled(page, (s) => textOf(assistantOf(s)).includes(CONTINUATION_TEXT), 'the continuation ends');
    // the reports of the last page may still be on their way
    await sleep(200);
    return {
      messages: comparable(s.messages),
      loads: s.loads,
      toolRuns: reports.toolRuns.get(chatId) ?? [],
      approvals: (reports.approvals.get(chatId) ?? []).length,
      executions: app.executions.get(chatId) ?? 0,
      requests: app.requests(chatId),
      errors,
    };
  } finally {
    await context.close();
  }
}

function withoutApproved(messages) {
  const out = structuredClone(messages);
  for (const p of out.flatMap((m) => m.parts)) if (p.approval) delete p.approval.approved;
  return out;
}

for (const flow of major === '5' ? ['client'] : ['client', 'approval']) {
  const name = flow === 'client' ? 'a client-side tool' : 'a tool approval';
  test(`useChat with ${name}, reloaded mid first turn, between the turns and mid continuation: the messages of DefaultChatTransport, each call and approval once`, async () => {
    const plain = await converse('plain', flow);
    assert.equal(plain.messages.length, 2, 'one user and one assistant message without twoplane');
    assert.deepEqual(plain.toolRuns, ['call-1']);
    assert.deepEqual(plain.errors, []);
    const r = await converse('twoplane', flow, ['first', 'between', 'continuation']);
    assert.equal(r.loads, 4, 'the page was loaded four times');
    assert.deepEqual(r.messages, major === '6' && flow === 'approval' ? withoutApproved(plain.messages) : plain.messages, 'the messages of the page through DefaultChatTransport, never reloaded');
    assert.deepEqual(r.toolRuns, ['call-1'], 'onToolCall once over all the loads');
    assert.equal(r.requests, 2, 'the first turn and one continuation were sent, none twice');
    if (flow === 'approval') {
      assert.equal(r.approvals, 1, 'the approval given once');
      assert.equal(r.executions, 1, 'the approved tool ran once');
      assert.equal(plain.approvals, 1);
      assert.equal(plain.executions, 1);
    }
    assert.deepEqual(r.errors, []);
  });
}
