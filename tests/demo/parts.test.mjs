// A message made of parts (docs/contract.md §8) end to end with real processes, on one
// `twoplane serve --demo` (SQLite; the producer API open on loopback): issue #23's scenario in
// Node and Chromium.
//
// A Node producer streams the issue's message through `POST /v1/streams/{id}/events`, one line
// every few tens of ms (about ten seconds, many checkpoints): reasoning, a tool call whose input
// JSON arrives in 40 pieces, the tool's output (preliminary, then final), a step boundary, a
// text, a data part replaced once, a transient part, a second text, metadata and the finish
// reason (tests/demo/parts-scenario.mjs). While it streams:
//
// - every ~250 ms a Node reader joins at the durable message `GET /api/messages` shows then (the
//   rows assembled with `assembleDurableMessage`: every checkpoint boundary), alternately over the
//   addon (`twoplane/node`) and the wasm build (`twoplane/wasm`);
// - a Chromium page (`StreamReader` with `durable`, EventSource transport) reloads each time the
//   durable message grows, and joins at the durable message it reads itself then;
// - at chosen points (inside the reasoning, inside the tool input, between the tool input and its
//   output, inside a text, between the data part and its replacement, inside the second text) the
//   producer pauses until the readers below hold exactly what it sent, and then: a Node reader of
//   each build is closed and a new one started from the durable message re-read then; a Node
//   reader of each build has its connection cut, and resumes by itself from the message it holds
//   (`resumeFrom`, `Last-Event-ID`); a Chromium `StreamReader` page (fetch transport) and a
//   React page (`useStreamedMessage` from `twoplane/react`) are reloaded.
//
// Checked: every durable message a reader joined with is the produced message at its length, is
// as long as the row's `seq` says and is what the server assembles from the same rows; after
// every change every reader holds exactly the produced message at its own length; every reader that was not
// closed or reloaded on purpose ends on `end` holding exactly the produced message, none stops
// for another reason; the readers joined at more than three distinct offsets in Node and in
// Chromium, and the reloads and cuts happened at the named kinds of point; the React page shows
// every part's body; the store holds the message (`GET /v1/streams/{id}` `stored.document`, the
// row's document in `/api/messages`, compacted), and it equals this test's own fold of the events
// it sent.
//
// Env: TWOPLANE_BIN (the built binary), CHROMIUM (default /usr/bin/chromium), TWOPLANE_PARTS_SEED
// (replays a run's random choices; every run prints its seed), TWOPLANE_PKG (the package to test,
// default npm/twoplane), TWOPLANE_REACT_DIR (a node_modules holding react and react-dom 18,
// default tests/browser/node_modules).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, normalize } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer, stopServer } from './serve.mjs';
import { CHROMIUM_ARGS } from '../browser/lib/chromium-args.mjs';
import { seeded, issueMessage, layOut, oracle, whereIs } from './parts-scenario.mjs';
import { PAGES } from './parts-pages.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.TWOPLANE_BIN ?? join(ROOT, 'target/debug/twoplane');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PKG = resolve(process.env.TWOPLANE_PKG ?? join(ROOT, 'npm/twoplane'));
const REACT_DIR = resolve(process.env.TWOPLANE_REACT_DIR ?? join(ROOT, 'tests/browser/node_modules'));

const SEED = Number(process.env.TWOPLANE_PARTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`parts e2e seed: ${SEED} (TWOPLANE_PARTS_SEED=${SEED} replays it)`);
const rng = seeded(SEED);

// The package's two Node builds, each through its own entry.
const BUILDS = {
  addon: await import(pathToFileURL(join(PKG, 'src/node.js')).href),
  wasm: await import(pathToFileURL(join(PKG, 'src/wasm.js')).href),
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves with `promise`'s value, or rejects naming `what` after `ms`. */
function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Polls `check` (async, truthy when done) every `every` ms for at most `ms`. */
async function until(ms, what, check, every = 20) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${ms} ms`);
    await sleep(every);
  }
}

let work;
let server;
let base;
let context;
const problems = [];

const VENDOR = {
  'vendor/react.js': join(REACT_DIR, 'react/umd/react.production.min.js'),
  'vendor/react-dom.js': join(REACT_DIR, 'react-dom/umd/react-dom.production.min.js'),
};
const TYPES = { '.js': 'text/javascript; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json' };

before(async () => {
  for (const file of Object.values(VENDOR)) readFileSync(file); // a missing React fails here, by name
  work = mkdtempSync(join(tmpdir(), 'twoplane-parts-'));
  const started = await startServer(BIN, ['--demo', '--listen', '127.0.0.1:0', '--db', join(work, 'parts.db')]);
  server = started.child;
  base = `http://${started.addr}`;
  context = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  // The pages, React and the package, on the server's own origin.
  await context.route(`${base}/__test/**`, async (route) => {
    const path = new URL(route.request().url()).pathname.slice('/__test/'.length);
    if (PAGES[path]) return route.fulfill({ status: 200, contentType: PAGES[path][0], body: PAGES[path][1] });
    let file = VENDOR[path];
    if (!file && path.startsWith('pkg/')) {
      const rel = normalize(decodeURIComponent(path.slice('pkg/'.length)));
      if (!rel.startsWith('..')) file = join(PKG, rel);
    }
    try {
      return route.fulfill({ status: 200, contentType: TYPES[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream', body: readFileSync(file) });
    } catch {
      return route.fulfill({ status: 404, body: '' });
    }
  });
});

after(async () => {
  await context?.close().catch(() => {});
  await stopServer(server);
  if (work) rmSync(work, { recursive: true, force: true });
});

// ---------------------------------------------------------------- the store, as the app reads it

const enc = encodeURIComponent;

/** The message's entry in the demo's view of the tables (`GET /api/messages`). */
async function viewOf(id) {
  const res = await fetch(`${base}/api/messages`, { cache: 'no-store' });
  assert.equal(res.status, 200, 'GET /api/messages');
  const m = (await res.json()).messages.find((x) => x.id === id);
  assert.ok(m, `the view lists ${id}`);
  return m;
}

/** The durable message of a view entry, assembled by `build`: its rows, or its body while it is
 *  one text. */
function assemble(build, m) {
  return m.rows ? build.assembleDurableMessage(m.rows, m.rows.chunks) : build.assembleDurableMessage({ body: m.body }, []);
}

// ---------------------------------------------------------------- the scenario

test("issue #23: readers in Node and Chromium join at every checkpoint and reload mid-part; each ends with exactly the produced message, and the store holds it", { timeout: 180_000 }, async () => {
  const id = `parts-${SEED}-${Date.now().toString(36)}`;
  const { events, marks } = issueMessage(rng);
  const layout = layOut(events);
  const produced = oracle(layout);
  const finalJson = produced.json(layout.len);
  const kindAt = (d) => whereIs(layout, d);
  // What went wrong, at most three lines per reader (its name comes before the first colon).
  const failures = [];
  const perReader = new Map();
  const fail = (msg) => {
    const who = msg.slice(0, msg.indexOf(':'));
    perReader.set(who, (perReader.get(who) ?? 0) + 1);
    if (perReader.get(who) <= 3) failures.push(msg);
  };

  /** Checks `[len, json]`, a message held at `len`, against the produced message there. */
  const checkHeld = (who, len, json) => {
    const want = produced.json(len);
    if (want === null) return fail(`${who}: holds ${len} units, the message has ${layout.len}`);
    if (json !== want) fail(`${who}: at ${len} (${kindAt(len)}) holds a message that is not the produced one there: ${difference(json, want)}`);
  };

  const opened = await fetch(`${base}/v1/streams/${enc(id)}/open`, {
    method: 'POST', body: '{"create":true}', headers: { 'content-type': 'application/json' },
  });
  assert.equal(opened.status, 200, await opened.text());

  // ---- Node readers

  /** Every Node reader started: `{ name, build, joinAt, joinKind, reader, done, stop, closed,
   *  drops, cut }`. */
  const nodeReaders = [];

  /** A fetch whose current response body the test can break off, as a network would. */
  function cuttableFetch() {
    let current = null;
    const f = async (url, init) => {
      const abort = new AbortController();
      init?.signal?.addEventListener('abort', () => abort.abort());
      const res = await fetch(url, { ...init, signal: abort.signal });
      const source = res.body.getReader();
      let controller;
      let cut = false;
      const body = new ReadableStream({
        start(c) {
          controller = c;
        },
        async pull(c) {
          const { value, done } = await source.read().catch(() => ({ done: true }));
          if (cut) return;
          if (done) c.close();
          else c.enqueue(value);
        },
        cancel() {
          source.cancel().catch(() => {});
        },
      });
      current = () => {
        cut = true;
        controller.error(new TypeError('the test cut the connection'));
        abort.abort();
      };
      return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    };
    return { fetch: f, cut: () => current?.() };
  }

  /** Checks a durable message assembled from a view's rows against what the server says of the
   *  same rows: the row's `seq` (the durable length, docs/contract.md §6) and, for a message with
   *  parts, the server's own assembly (`document`); and against the produced message. */
  const checkDurable = (who, len, json, view) => {
    if (len !== view.seq) fail(`${who}: assembled ${len} units from rows whose seq is ${view.seq}`);
    if (view.document !== null && json !== JSON.stringify(JSON.parse(view.document))) {
      fail(`${who}: the server assembles the same rows differently: ${difference(json, JSON.stringify(JSON.parse(view.document)))}`);
    }
    checkHeld(`${who} (its durable message)`, len, json);
  };

  /** Start a Node reader over `buildName` joined at `durable` (a DurableMessage of that build,
   *  assembled from `view`). */
  function startNodeReader(name, buildName, durable, view, { cuttable = false } = {}) {
    const build = BUILDS[buildName];
    const rec = { name, build: buildName, joinAt: durable.len, joinKind: kindAt(durable.len), stop: null, closed: false, drops: 0 };
    checkDurable(name, durable.len, JSON.stringify(durable.message), { seq: view.seq, document: view.document ?? null });
    const cutter = cuttable ? cuttableFetch() : null;
    let settle;
    rec.done = new Promise((r) => {
      settle = r;
    });
    rec.reader = new build.StreamReader({
      endpoint: `${base}/api/stream`,
      streamId: id,
      durable,
      ...(cutter ? { fetch: cutter.fetch, backoff: { initialMs: 50, maxMs: 200 } } : {}),
      onUpdate() {
        checkHeld(name, rec.reader.resumeFrom, JSON.stringify(rec.reader.message));
      },
      onStop(reason) {
        rec.stop = reason;
        settle();
      },
    });
    rec.cut = cutter ? cutter.cut : null;
    nodeReaders.push(rec);
    rec.reader.start();
    return rec;
  }

  async function nodeJoin(name, buildName, opts) {
    const view = await viewOf(id);
    return startNodeReader(name, buildName, assemble(BUILDS[buildName], view), view, opts);
  }

  // The Node readers the marks act on: one of each build reloaded (closed, then a new one from
  // the durable message re-read), one of each build cut off (it resumes by itself).
  const reloading = { addon: await nodeJoin('addon reloaded #0', 'addon'), wasm: await nodeJoin('wasm reloaded #0', 'wasm') };
  const cutOff = {
    addon: await nodeJoin('addon cut off', 'addon', { cuttable: true }),
    wasm: await nodeJoin('wasm cut off', 'wasm', { cuttable: true }),
  };

  // ---- Chromium pages

  /** A page and every incarnation it had (one per load): `{ name, incarnations: [state] }`. */
  const pages = {};
  async function openPage(name, url) {
    const page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`${name}: page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`${name}: console error: ${msg.text()}`);
    });
    page.on('response', (res) => {
      if (res.status() >= 400) problems.push(`${name}: HTTP ${res.status()} for ${res.url()}`);
    });
    const p = { name, page, incarnations: [], busy: Promise.resolve() };
    pages[name] = p;
    await loadPage(p, () => page.goto(url));
    return p;
  }
  async function loadPage(p, navigate) {
    await navigate();
    await p.page.waitForFunction(() => window.ready === true, null, { timeout: 20_000 });
    const s = await p.page.evaluate(() => window.state);
    if (s.error) throw new Error(`${p.name}: ${s.error}`);
  }
  const pageState = (p) => p.page.evaluate(() => window.state);
  /** Record the page's current incarnation (`why` it ends: reload, or the end of the test). */
  async function record(p, why) {
    const s = await pageState(p);
    p.incarnations.push({ ...s, why });
    return s;
  }
  async function reloadPage(p) {
    await loadPage(p, () => p.page.reload());
  }

  const walker = await openPage('chromium walk (eventsource)', `${base}/__test/reader.html?id=${enc(id)}&transport=eventsource`);
  const target = await openPage('chromium reloaded (fetch)', `${base}/__test/reader.html?id=${enc(id)}&transport=fetch`);
  const react = await openPage('react page', `${base}/__test/react.html?id=${enc(id)}`);

  // ---- the marks: pause, let the readers catch up, then reload or cut them

  const reloads = []; // { who, heldAt, kind }
  const markAfter = new Map(Object.entries(marks).map(([name, i]) => [i, { name, seq: layout.spans[i].seq }]));
  // The reloaded Node reader of each build, once its reload is done.
  const reloaded = { addon: Promise.resolve(reloading.addon), wasm: Promise.resolve(reloading.wasm) };

  /** Once every reader holds what was sent up to `mark`, reload or cut each of them; resolves
   *  when all are caught up, with `{ done }`, the promise of the reloads (they complete while the
   *  producer goes on). */
  async function actAtMark(mark) {
    const at = mark.seq;
    const acts = [];
    for (const build of ['addon', 'wasm']) {
      const who = `node ${build} reload`;
      // A reader closed and a new one started from the durable message re-read now.
      acts.push((async () => {
        const old = await reloaded[build];
        await until(10_000, `${old.name} reaching ${at}`, () => old.reader.resumeFrom >= at);
        const heldAt = old.reader.resumeFrom;
        old.closed = true;
        old.reader.close();
        reloads.push({ who, heldAt, kind: kindAt(heldAt) });
        return () => {
          const n = reloads.filter((r) => r.who === who).length;
          reloaded[build] = nodeJoin(`${build} reloaded #${n} (at ${mark.name})`, build);
          return reloaded[build];
        };
      })());
      // A reader whose connection breaks; it resumes by itself from what it holds.
      acts.push((async () => {
        const r = cutOff[build];
        await until(10_000, `${r.name} reaching ${at}`, () => r.reader.resumeFrom >= at);
        reloads.push({ who: `node ${build} cut`, heldAt: r.reader.resumeFrom, kind: kindAt(r.reader.resumeFrom) });
        r.drops += 1;
        r.cut();
        return null;
      })());
    }
    for (const p of [target, react]) {
      acts.push((async () => {
        await p.busy;
        await until(10_000, `${p.name} reaching ${at}`, async () => (await pageState(p)).pos >= at);
        // The React page renders once per animation frame: give it the time to render `at` (a
        // render that is not the produced message fails the checks of its renders below).
        const want = produced.json(at);
        const rendered = async () => {
          const st = await pageState(p);
          return !st.renders || st.renders[st.renders.length - 1] === want ? st : null;
        };
        const s = await until(2_000, 'the render', rendered).catch(() => pageState(p));
        p.incarnations.push({ ...s, why: 'reload' });
        reloads.push({ who: p.name, heldAt: s.pos, kind: kindAt(s.pos) });
        return () => {
          p.busy = reloadPage(p);
          return p.busy;
        };
      })());
    }
    const thens = await within(30_000, `the readers at ${mark.name}`, Promise.all(acts));
    return { done: Promise.all(thens.filter(Boolean).map((then) => then())) };
  }

  // ---- the poller: a Node reader at every durable message shown, the walking page reloaded on
  // every new one

  let producing = true;
  const durableSeen = new Set();
  let walking = Promise.resolve();
  let walkerReloads = 0;
  const poller = (async () => {
    let k = 0;
    while (producing) {
      await sleep(250);
      const m = await viewOf(id);
      if (m.status !== 'streaming') break;
      const buildName = k % 2 === 0 ? 'addon' : 'wasm';
      k += 1;
      const durable = assemble(BUILDS[buildName], m);
      startNodeReader(`${buildName} joined at poll ${k} (${durable.len})`, buildName, durable, m);
      if (!durableSeen.has(durable.len)) {
        durableSeen.add(durable.len);
        // The walking page reloads at each new durable message (one reload at a time).
        walking = walking.then(async () => {
          await record(walker, 'reload');
          walkerReloads += 1;
          await reloadPage(walker);
        });
      }
    }
  })();

  // ---- the producer

  const lines = events.map((e) => `${JSON.stringify(e)}\n`);
  let sent = 0;
  const followUps = [];
  let markError = null;
  const body = new ReadableStream({
    async pull(controller) {
      if (sent === lines.length) return controller.close();
      const mark = markAfter.get(sent - 1);
      if (mark) {
        try {
          followUps.push((await actAtMark(mark)).done);
        } catch (err) {
          markError ??= err;
        }
      }
      // A tool runs for a while between its input and its output.
      const e = events[sent];
      const gap = e.type === 'set' && e.value.state === 'output-available' ? 900 : rng.int(15, 55);
      await sleep(gap);
      controller.enqueue(new TextEncoder().encode(lines[sent]));
      sent += 1;
    },
  });
  const res = await within(120_000, 'the event stream', fetch(`${base}/v1/streams/${enc(id)}/events?offset=0`, {
    method: 'POST', body, duplex: 'half', headers: { 'content-type': 'application/x-ndjson' },
  }));
  const answer = await res.json();
  assert.equal(res.status, 200, JSON.stringify(answer));
  assert.equal(answer.seq, layout.len, 'seq counts the message: body units plus one per structural event');
  assert.equal(answer.events, events.length);
  const closed = await fetch(`${base}/v1/streams/${enc(id)}/close`, { method: 'POST' });
  assert.deepEqual(await closed.json(), { status: 'complete', seq: layout.len, durableSeq: layout.len });
  producing = false;
  if (markError) fail(`the marks: ${markError.message}`);
  await within(30_000, 'the reloads', Promise.all(followUps));
  await within(20_000, 'the poller', poller);
  await within(30_000, 'the walking page', walking);
  await within(30_000, 'the reloaded Node readers', Promise.all(nodeReaders.filter((r) => !r.closed).map((r) => r.done)));

  // ---- every reader's end

  for (const r of nodeReaders) {
    if (r.closed) {
      if (r.stop !== null) fail(`${r.name}: stopped on ${r.stop} before it was closed`);
      continue;
    }
    if (r.stop !== 'end') fail(`${r.name}: stopped on ${r.stop}, want end`);
    const json = JSON.stringify(r.reader.message);
    if (json !== finalJson) fail(`${r.name} (joined at ${r.joinAt}): ended with another message: ${difference(json, finalJson)}`);
    else assert.deepEqual(r.reader.message, JSON.parse(finalJson));
  }
  for (const build of ['addon', 'wasm']) {
    const r = cutOff[build];
    if (r.reader.connections < 1 + r.drops) fail(`${r.name}: ${r.reader.connections} connections after ${r.drops} cuts`);
  }
  for (const p of [walker, target, react]) {
    await until(30_000, `${p.name} ending`, async () => (await pageState(p)).stop !== null, 50);
    await record(p, 'end');
    for (const [i, s] of p.incarnations.entries()) {
      const who = `${p.name} #${i} (joined at ${s.joinAt}, ${s.why})`;
      // A page reloaded while live never stopped; one that stopped (the last, or one the walk
      // reloaded just after the end) stopped on `end`, holding the produced message.
      if (s.stop === null && s.why === 'end') fail(`${who}: still live at the end`);
      if (s.stop !== null && s.stop !== 'end') fail(`${who}: stopped on ${s.stop}, want end`);
      if (s.stop === 'end' && s.message !== finalJson) fail(`${who}: ended with another message: ${difference(s.message, finalJson)}`);
      if (s.log) {
        checkDurable(who, s.log[0][0], s.log[0][1], s.view);
        for (const [len, json] of s.log.slice(1)) checkHeld(who, len, json);
      } else {
        checkDurable(who, s.joinAt, s.joined, s.view);
        // Every render shows the produced message at some length, and never goes back.
        let last = -1;
        for (const json of s.renders) {
          const at = produced.positionOf(json);
          if (at < 0) fail(`${who}: rendered a message that is the produced one at no length: ${difference(json, finalJson)}`);
          else if (at < last) fail(`${who}: a render went back from ${last} to ${at}`);
          last = Math.max(last, at);
        }
      }
    }
  }
  // The React page shows every part's body.
  const shown = await react.page.$$eval('#answer > section', (els) => els.map((el) => [el.dataset.type, el.textContent]));
  const finalDoc = JSON.parse(finalJson);
  assert.deepEqual(shown, finalDoc.parts.map((p) => [p.type, p.text ?? p.inputText ?? '']), 'the React page shows the message');

  // ---- the store holds it

  const status = await (await fetch(`${base}/v1/streams/${enc(id)}`)).json();
  assert.equal(status.stored?.status, 'complete', JSON.stringify(status));
  assert.equal(status.stored.seq, layout.len);
  assert.deepEqual(JSON.parse(status.stored.document), finalDoc, 'the stored document is the fold of the events sent');
  assert.equal(JSON.stringify(JSON.parse(status.stored.document)), finalJson, 'with its members in the same order');
  const view = await viewOf(id);
  assert.equal(view.status, 'complete');
  // The row holds the document, and after it the order the message was made in (`spans`,
  // docs/contract.md §8), which the server's own views leave out.
  const { spans, ...row } = JSON.parse(view.rows.document);
  assert.equal(JSON.stringify(row), status.stored.document, 'the row holds the document');
  assert.equal(spans.reduce((n, s) => n + (Array.isArray(s) ? s[1] : 1), 0), layout.len, 'its spans cover the message');
  assert.deepEqual(view.rows.chunks, [], 'the seal folded the chunk rows into the document');
  for (const [name, build] of Object.entries(BUILDS)) {
    assert.equal(JSON.stringify(assemble(build, view).message), finalJson, `the stored rows assembled by the ${name} build`);
  }

  // ---- what happened

  const nodeJoins = new Set(nodeReaders.map((r) => r.joinAt));
  const pageJoins = new Set(Object.values(pages).flatMap((p) => p.incarnations.map((s) => s.joinAt)));
  const joinKinds = [...nodeReaders.map((r) => r.joinKind), ...Object.values(pages).flatMap((p) => p.incarnations.map((s) => kindAt(s.joinAt)))];
  console.log(`parts e2e: ${layout.len} units in ${events.length} events; ${nodeReaders.length} Node readers `
    + `(${nodeJoins.size} join offsets), ${Object.values(pages).reduce((n, p) => n + p.incarnations.length, 0)} page loads `
    + `(${pageJoins.size} join offsets; the walking page reloaded ${walkerReloads} times); durable offsets seen: ${[...durableSeen].join(' ')}`);
  console.log(`parts e2e: joins by kind of point: ${JSON.stringify(tally(joinKinds))}`);
  console.log(`parts e2e: reloads and cuts: ${reloads.map((r) => `${r.who} at ${r.heldAt} (${r.kind})`).join('; ')}`);
  assert.deepEqual(failures, []);
  assert.deepEqual(problems, []);
  assert.ok(nodeJoins.size > 3, `Node readers joined at ${nodeJoins.size} distinct offsets: ${[...nodeJoins]}`);
  assert.ok(pageJoins.size > 3, `Chromium readers joined at ${pageJoins.size} distinct offsets: ${[...pageJoins]}`);
  assert.ok(joinKinds.some((k) => k.startsWith('inside ')), 'some reader joined inside a part');
  const required = ['inside reasoning', 'inside tool-search', 'between tool-search input and output', 'inside text'];
  for (const who of new Set(reloads.map((r) => r.who))) {
    const kinds = new Set(reloads.filter((r) => r.who === who).map((r) => r.kind));
    for (const k of required) assert.ok(kinds.has(k), `${who}: no reload ${k} (had: ${[...kinds].join(', ')})`);
  }
  assert.equal(new Set(reloads.map((r) => r.who)).size, 6, 'four Node readers and two pages reloaded');
});

/** Where JSON texts `got` and `want` first differ, with some context around it. */
function difference(got, want) {
  let i = 0;
  while (i < got.length && got[i] === want[i]) i += 1;
  const around = (t) => t.slice(Math.max(0, i - 60), i + 60);
  return `from character ${i} of ${got.length} (want ${want.length}):\n    got  ...${around(got)}...\n    want ...${around(want)}...`;
}

function tally(xs) {
  const out = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
