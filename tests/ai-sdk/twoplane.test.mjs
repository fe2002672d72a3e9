// `twoplane/ai-sdk` against `twoplane serve`, judged by the SDK's own code, for one major of `ai`
// (TWOPLANE_AI=5|6|7, with `node --import ./lib/ai-alias.mjs`, so the entry's bare `ai` is that
// major; scripts/test-aisdk.sh runs 5 and 7):
//
// - the producer: a paced `streamText` turn (lib/turn.mjs: reasoning, a tool whose input streams,
//   its outputs, two texts, a data part replaced by id, a client-side tool) produced into twoplane;
//   `readUIMessageStream` over `GET .../ui-message-stream` builds the message it builds from the
//   producer's own chunks;
// - resuming by offset: a reader cut mid reasoning, mid tool input, between a tool's input and its
//   output, mid text, after the end, and at random points, resumed with `?from=` each time: what
//   the server replays up to the offset rebuilds exactly what the reader held, and what comes after
//   it continues the held message to the whole one (nothing twice, nothing missing); the cuts of a
//   kind on a server writing every frame as it comes (`--write-interval-ms 0`, one delta per
//   chunk), the random ones on the default server, whose display-rate writes merge the deltas that
//   arrive within an interval, judged against the unmerged stream;
// - the ChatTransport with the SDK's `Chat`: pages that die mid-answer and a new page resuming from
//   the offset the last one persisted; a connection that breaks and is reopened by the transport;
//   a `Chat` resuming after a disconnect. Every chunk the pages' `Chat` processed is counted:
//   `onToolCall` once per call, `onData` once per data chunk, and the fresh deltas add up to the
//   message's bodies exactly; the replayed ones rebuild what the page before held;
// - `stop()` is a cancel: the producer's request ends `409 cancelled`, the model is no longer read,
//   readers get `abort`; a dropped page changes nothing on the server;
// - a producer killed mid-answer: readers get the message up to what the store holds, and an end.
//
// Env: TWOPLANE_AI (required), TWOPLANE_BIN, TWOPLANE_AISDK_SEED (replays a run's random choices).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { loadMajor } from './lib/majors.mjs';
import { lastMessage, asJson, streamOf } from './lib/read.mjs';
import { pacedTurn, interleavedTurn, CONFIRM_INPUT_JSON } from './lib/turn.mjs';
import { REASONING, TEXT_A, TEXT_B, TOOL_INPUT_JSON } from './lib/scenario.mjs';
import { startTwoplane, readUi } from './lib/twoplane.mjs';
import { respond } from './lib/respond.mjs';
import { severingFetch } from './lib/sever.mjs';
import { signStreamToken } from '../../npm/twoplane/src/token.js';
import { compactChunks } from '../../npm/twoplane/src/ai-sdk/follow.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const major = process.env.TWOPLANE_AI;
const M = await loadMajor(major);
const { Chat } = await import(M.reactAlias);
const { createTwoplaneProducer, TwoplaneChatTransport, isReplayedChunk } = await import('../../npm/twoplane/src/ai-sdk.node.js');

const SEED = Number(process.env.TWOPLANE_AISDK_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`ai ${M.version}: seed ${SEED} (TWOPLANE_AISDK_SEED=${SEED} replays it)`);
let rng = SEED >>> 0 || 1;
function rand() {
  rng ^= rng << 13;
  rng >>>= 0;
  rng ^= rng >>> 17;
  rng ^= rng << 5;
  rng >>>= 0;
  return rng / 2 ** 32;
}
const between = (a, b) => a + Math.floor(rand() * (b - a + 1));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const USER = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'How does resuming a stream work?' }] };
const DELAY = 4; // ms between the model's chunks

let tp;
let producer;
let app;
/** A second server that writes every frame as it comes (`--write-interval-ms 0`), and its producer. */
let exact;
let ids = 0;
const newId = (what) => `${what}-m${major}-${SEED}-${++ids}`;

/** The SDK's message from chunks, as a store keeps it (JSON). */
async function build(chunks) {
  return asJson((await lastMessage(M, chunks)).message);
}

/** Produce the turn (`pacedTurn`, or another of lib/turn.mjs) into twoplane: `{ outcome, source }`
 *  (the producer's own chunks). */
async function produceTurn(streamId, pulled = { n: 0 }, through = producer, turn = pacedTurn) {
  await through.open(streamId);
  const [a, b] = turn(M, { streamId, delayMs: DELAY, pulled }).tee();
  const outcome = through.produce(streamId, a);
  const source = (async () => {
    const out = [];
    for await (const c of b) out.push(c);
    return out;
  })();
  return { outcome, source };
}

/** The app's route: POST /api/chat produces a turn into twoplane with the one-line options. */
function startApp() {
  const runs = new Map(); // streamId -> { done, pulled }
  const server = http.createServer(async (req, res) => {
    if (req.method !== 'POST' || req.url !== '/api/chat') {
      res.writeHead(404).end();
      return;
    }
    for await (const _ of req);
    const streamId = newId('chat');
    const pulled = { n: 0 };
    const options = await producer.responseOptions(streamId);
    runs.set(streamId, { done: options.done, pulled });
    const stream = pacedTurn(M, { streamId, delayMs: DELAY, pulled, abortSignal: producer.signal(streamId) });
    const response = M.ai.createUIMessageStreamResponse({ stream, ...options });
    await respond(res, response);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, runs, server }));
  });
}

before(async () => {
  tp = await startTwoplane();
  producer = createTwoplaneProducer({ url: tp.url, producerToken: tp.producerToken, readTokenSecret: tp.readSecret });
  const etp = await startTwoplane(['--write-interval-ms', '0']);
  exact = { tp: etp, producer: createTwoplaneProducer({ url: etp.url, producerToken: etp.producerToken, readTokenSecret: etp.readSecret }) };
  app = await startApp();
});
after(async () => {
  app?.server.close();
  await tp?.stop();
  await exact?.tp.stop();
});

const tokenFor = (id, server = tp) => signStreamToken({ secret: server.readSecret, streamId: id, ttlSeconds: 600 });

test('produced through twoplane, the SDK builds from the GET the message it builds from the producer', async () => {
  const id = newId('whole');
  const { outcome, source } = await produceTurn(id);
  const read = await readUi(tp, tokenFor(id), id);
  const out = await outcome;
  assert.equal(out.status, 'complete', JSON.stringify(out));
  assert.equal(out.readerCancelled, false);
  const src = await source;
  assert.equal(out.chunks, src.length, 'every chunk of the producer was applied');
  const whole = await build(src);
  assert.ok(whole.parts.some((p) => p.type === 'data-status') && whole.parts.some((p) => p.type === 'tool-confirm'), 'the turn has its data part and client tool');
  assert.equal(read.events.at(-1).done, true, 'the GET ends with [DONE]');
  const got = await build(read.events.filter((e) => !e.done).map((e) => e.chunk));
  assert.deepEqual(got, whole);
  assert.equal(got.id, id, 'the message id is the stream id');
  // every event's id is an offset that never goes back
  const offsets = read.events.filter((e) => !e.done).map((e) => e.id);
  assert.ok(offsets.every((o, i) => i === 0 || o >= offsets[i - 1]), 'ids never go back');
});

/** The predicate of a cut of `kind`: the reader holds the event it stops at (a single-chunk frame of the live tail). */
function cutOf(kind) {
  const pick = {
    'mid reasoning': { type: 'reasoning-delta', nth: between(1, REASONING.length - 1) },
    'mid tool input': { type: 'tool-input-delta', nth: between(1, 39) },
    'between tool input and output': { type: 'tool-input-available', nth: 1 },
    'mid text': { type: 'text-delta', nth: between(1, TEXT_A.length + TEXT_B.length - 1), notLastOfPart: true },
    random: { type: null, nth: between(1, 30) },
  }[kind];
  let seen = 0;
  return (from) => (e, events) => {
    if (e.done || e.id <= from) return false;
    const prev = events[events.length - 2];
    if (prev && prev.id === e.id) return false; // inside a batch: not a place a reader can stand
    if (pick.type !== null && e.chunk.type !== pick.type) return false;
    if (pick.type === null && !['text-delta', 'reasoning-delta', 'tool-input-delta', 'tool-input-available', 'tool-output-available'].includes(e.chunk.type)) return false;
    seen += 1;
    return seen >= pick.nth;
  };
}

/**
 * Read the stream of `id` from 0, cutting at each of `cuts` in turn and resuming from the last
 * offset held; returns what a continuing reader applied and the resumes' checks.
 */
async function cutAndResume(id, cuts, server = tp) {
  const token = tokenFor(id, server);
  let from = 0;
  const held = [];
  const resumes = [];
  for (let i = 0; ; i += 1) {
    assert.ok(i < 20, 'the chain ends');
    const cut = cuts[i] ? cuts[i](from) : undefined;
    const r = await readUi(server, token, id, { from, cut });
    const evs = r.events.filter((e) => !e.done);
    const replayed = from > 0 ? evs.filter((e) => e.id <= from) : [];
    const fresh = from > 0 ? evs.filter((e) => e.id > from) : evs;
    if (from > 0) {
      resumes.push({ from, rebuilt: await build(replayed.map((e) => e.chunk)), held: await build(held) });
    }
    held.push(...fresh.map((e) => e.chunk));
    if (!r.cut) {
      assert.equal(r.events.at(-1)?.done, true, 'a read that was not cut ends with [DONE]');
      return { held, resumes };
    }
    from = evs.at(-1).id;
  }
}

const KINDS = ['mid reasoning', 'mid tool input', 'between tool input and output', 'mid text'];

test('cut mid reasoning, mid tool input, between tool input and output, mid text and after the end, resumed by offset', async () => {
  // One delta per chunk, so that every kind of cut has its place.
  const id = newId('cuts');
  const { outcome, source } = await produceTurn(id, { n: 0 }, exact.producer);
  const { held, resumes } = await cutAndResume(id, KINDS.map(cutOf), exact.tp);
  // after the end: the whole message again, all of it replayed
  const last = await readUi(exact.tp, tokenFor(id, exact.tp), id, { from: 0 });
  const end = last.events.filter((e) => !e.done).at(-1).id;
  const again = await readUi(exact.tp, tokenFor(id, exact.tp), id, { from: end });
  const whole = await build(await source);
  assert.equal((await outcome).status, 'complete');
  assert.equal(resumes.length, KINDS.length);
  for (const r of resumes) assert.deepEqual(r.rebuilt, r.held, `the replay up to ${r.from} rebuilds exactly what the reader held`);
  assert.deepEqual(await build(held), whole, 'held chunks and the chunks past each offset build the whole message');
  const afterEnd = again.events.filter((e) => !e.done);
  assert.ok(afterEnd.every((e) => e.id <= end), 'after the end, every chunk is at the offset the reader holds');
  assert.deepEqual(await build(afterEnd.map((e) => e.chunk)), whole, 'after the end, the replay is the whole message');
  assert.equal(again.events.at(-1).done, true);
});

test('cut at random points, several times, resumed by offset', async () => {
  for (let round = 0; round < 3; round += 1) {
    const id = newId('random');
    const { outcome, source } = await produceTurn(id);
    const cuts = Array.from({ length: between(2, 5) }, () => cutOf('random'));
    const { held, resumes } = await cutAndResume(id, cuts);
    const whole = await build(await source);
    assert.equal((await outcome).status, 'complete');
    for (const r of resumes) assert.deepEqual(r.rebuilt, r.held, `round ${round}: the replay up to ${r.from} rebuilds what the reader held`);
    assert.deepEqual(await build(held), whole, `round ${round}: the resumed reader builds the whole message`);
  }
});

test('a merged stream, cut at random group ends and resumed from each last id, builds what the unmerged stream builds', async () => {
  const deltas = (events) => events.filter((e) => !e.done && /-delta$/.test(e.chunk.type)).length;
  // The paced turn's parts follow one another; the interleaved one's stream side by side, so a
  // write holds deltas of several parts and a merge across parts would show.
  const turns = [pacedTurn, pacedTurn, interleavedTurn, interleavedTurn];
  for (const [round, turn] of turns.entries()) {
    const id = newId('merged');
    // The same turn through a server that writes every frame as it comes, read whole.
    const unmerged = await produceTurn(id, { n: 0 }, exact.producer, turn);
    const plain = await readUi(exact.tp, tokenFor(id, exact.tp), id);
    assert.equal((await unmerged.outcome).status, 'complete');
    const want = await build(plain.events.filter((e) => !e.done).map((e) => e.chunk));
    // And through the default server, whose readers' writes merge what arrives within 16 ms.
    const merged = await produceTurn(id, { n: 0 }, producer, turn);
    const live = readUi(tp, tokenFor(id), id);
    const cuts = Array.from({ length: between(2, 5) }, () => cutOf('random'));
    const { held, resumes } = await cutAndResume(id, cuts);
    assert.equal((await merged.outcome).status, 'complete');
    for (const r of resumes) assert.deepEqual(r.rebuilt, r.held, `round ${round} (${turn.name}): the replay up to ${r.from} rebuilds exactly what the reader held`);
    assert.deepEqual(await build(held), want, `round ${round} (${turn.name}): cut ${resumes.length} times, the merged stream builds the unmerged message`);
    const whole = await live;
    assert.deepEqual(await build(whole.events.filter((e) => !e.done).map((e) => e.chunk)), want, `round ${round} (${turn.name}): uncut, too`);
    assert.ok(deltas(whole.events) < deltas(plain.events), `round ${round} (${turn.name}): fewer deltas than the unmerged stream (${deltas(whole.events)} of ${deltas(plain.events)})`);
  }
});

test('an ended stream read from the store (the server restarted) is split where the reader is, as while it was hosted', async () => {
  const id = newId('stored');
  const { outcome, source } = await produceTurn(id);
  assert.equal((await outcome).status, 'complete');
  const whole = await build(await source);
  const hosted = await readUi(tp, tokenFor(id), id, { from: 40 });
  const end = hosted.events.filter((e) => !e.done).at(-1).id;
  assert.ok(hosted.events.some((e) => !e.done && e.id === 40), 'while hosted, the replay is split at the offset');
  await tp.restart();
  producer = createTwoplaneProducer({ url: tp.url, producerToken: tp.producerToken, readTokenSecret: tp.readSecret });
  for (const from of [0, 40, end - 1, end]) {
    const stored = await readUi(tp, tokenFor(id), id, { from });
    const evs = stored.events.filter((e) => !e.done);
    assert.deepEqual(await build(evs.map((e) => e.chunk)), whole, `from ${from}: the stored replay builds the whole message`);
    // The sealed document keeps the order of its parts' events: the store cuts at any offset.
    const ids = [...new Set(evs.map((e) => e.id).filter((i) => i !== undefined))];
    assert.deepEqual(ids, from === end ? [end] : [from, end], `from ${from}: ${ids}`);
  }
  const again = await readUi(tp, tokenFor(id), id, { from: 40 });
  assert.deepEqual(
    again.events.map((e) => [e.id, e.chunk]),
    hosted.events.map((e) => [e.id, e.chunk]),
    'from the store, the same events as from the host',
  );
});

test('a tail resume (?tail=1) sends exactly what follows the offset, hosted and from the store: no start, nothing the reader holds', async () => {
  const id = newId('tail');
  const { outcome } = await produceTurn(id);
  assert.equal((await outcome).status, 'complete');
  const full = await readUi(tp, tokenFor(id), id);
  const end = full.events.filter((e) => !e.done).at(-1).id;
  const check = async (from, where) => {
    const whole = await readUi(tp, tokenFor(id), id, { from });
    const tail = await readUi(tp, tokenFor(id), id, { from, tail: true });
    const after = (r) => r.events.filter((e) => e.done || e.id > from).map((e) => [e.id, e.chunk ?? '[DONE]']);
    assert.ok(!tail.events.some((e) => e.chunk?.type === 'start'), `${where} from ${from}: no start`);
    assert.ok(tail.events.every((e) => e.done || e.id > from), `${where} from ${from}: nothing at or before the offset`);
    assert.deepEqual(after(tail), after(whole), `${where} from ${from}: exactly the events that follow the offset`);
    // What the reader held (the first group of the plain resume) and the tail build the message.
    const held = whole.events.filter((e) => !e.done && e.id === from).map((e) => e.chunk);
    assert.deepEqual(await build([...held, ...tail.events.filter((e) => !e.done).map((e) => e.chunk)]), await build(full.events.filter((e) => !e.done).map((e) => e.chunk)), `${where} from ${from}: held + tail = the message`);
  };
  for (const from of [40, end - 1]) await check(from, 'hosted');
  await tp.restart();
  producer = createTwoplaneProducer({ url: tp.url, producerToken: tp.producerToken, readTokenSecret: tp.readSecret });
  for (const from of [40, end - 1]) await check(from, 'from the store');
});

// ---------------------------------------------------------------------------------------------
// The ChatTransport with the SDK's Chat

/** A map-backed `held` store: what a page persists across reloads. */
function sharedHeld() {
  const map = new Map();
  return { map, get: (k) => (map.has(k) ? structuredClone(map.get(k)) : undefined), set: (k, v) => void map.set(k, structuredClone(v)) };
}

/**
 * One page: a `Chat` of the major's @ai-sdk/react over a TwoplaneChatTransport. `log` gets every
 * chunk the Chat read, as it was read (read-through, no read-ahead: a chunk is logged when the Chat
 * asks for it).
 */
function page({ held, plan = [], attempts = 6, messages = [], chatId = 'chat-1', onToolCall }) {
  const log = [];
  const seen = { toolCalls: [], data: [], values: [], errors: [], finishes: [] };
  const conns = [];
  // A page that is gone (reloaded) writes nothing more to what the browser keeps across reloads.
  let dead = false;
  const pageHeld = { get: (k) => held.get(k), set: (k, v) => (dead ? undefined : held.set(k, v)) };
  const transport = new TwoplaneChatTransport({ api: `${app.url}/api/chat`, endpoint: tp.url, held: pageHeld, fetch: severingFetch(plan, conns), reconnect: { attempts, initialMs: 20, maxMs: 100 } });
  const logged = (stream) =>
    stream &&
    (() => {
      const reader = stream.getReader();
      return new ReadableStream(
        {
          async pull(c) {
            const { value, done } = await reader.read();
            if (done) return c.close();
            // A copy, as read: the SDK keeps the object it is handed and may change it later (ai 5,
            // 6 and 7 update a data part in place when a later chunk replaces its data), and a log
            // of the SDK's own objects would say a replayed chunk held what only a later one brought.
            log.push({ chunk: structuredClone(value), replayed: isReplayedChunk(value) });
            c.enqueue(value);
          },
          cancel: (r) => reader.cancel(r),
        },
        { highWaterMark: 0 },
      );
    })();
  const wrapped = {
    get resumeStreamIsReplay() {
      return transport.resumeStreamIsReplay;
    },
    sendMessages: async (o) => logged(await transport.sendMessages(o)),
    reconnectToStream: async (o) => logged(await transport.reconnectToStream(o)),
  };
  const chat = new Chat({
    id: chatId,
    messages: structuredClone(messages),
    transport: wrapped,
    onToolCall: transport.fresh(({ toolCall }) => {
      seen.toolCalls.push(toolCall.toolCallId);
      return onToolCall?.(toolCall);
    }),
    onData: transport.fresh((part) => {
      seen.data.push(part.type);
      seen.values.push(part.data);
    }),
    onError: (e) => seen.errors.push(e.message),
    onFinish: (f) => seen.finishes.push(f),
  });
  return { chat, transport, log, seen, conns, gone: () => void (dead = true) };
}

function assistant(chat) {
  return asJson(chat.messages.find((m) => m.role === 'assistant') ?? null);
}

/** The bodies the fresh deltas of `logs` add up to, per kind. */
function freshBodies(logs) {
  const sum = { text: '', reasoning: '', 'call-1': '', 'call-2': '' };
  for (const { chunk, replayed } of logs.flat()) {
    if (replayed) continue;
    if (chunk.type === 'text-delta') sum.text += chunk.delta;
    if (chunk.type === 'reasoning-delta') sum.reasoning += chunk.delta;
    if (chunk.type === 'tool-input-delta') sum[chunk.toolCallId] += chunk.inputTextDelta;
  }
  return sum;
}
const BODIES = { text: [...TEXT_A, ...TEXT_B].join(''), reasoning: REASONING.join(''), 'call-1': TOOL_INPUT_JSON, 'call-2': CONFIRM_INPUT_JSON };

/**
 * `onData` saw each data chunk of the turn at most once, in order, and the latest last (a resume's
 * catch-up sends a part replaced meanwhile once, with its latest data).
 */
function assertData(values) {
  const source = [{ phase: 'answering' }, { phase: 'answering', hits: 1 }];
  assert.ok(values.length >= 1 && values.length <= 2, `onData ${values.length} times`);
  assert.deepEqual(values.at(-1), source[1], 'the latest data last');
  if (values.length === 2) assert.deepEqual(values, source, 'each data chunk once, in order');
}

async function within(ms, promise, what) {
  let t;
  const timeout = new Promise((_, reject) => (t = setTimeout(() => reject(new Error(`${what}: no end in ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(t);
  }
}

async function wholeOf(streamId) {
  const r = await readUi(tp, tokenFor(streamId), streamId);
  return build(r.events.filter((e) => !e.done).map((e) => e.chunk));
}

/** The assistant message of `chat` once its state stops changing: ai 5 applies a processed
 *  chunk's update as a queued job, which may still be pending when the status turns `error`. */
async function settled(chat) {
  let last = assistant(chat);
  for (let i = 0; i < 50; i += 1) {
    await sleep(10);
    const now = assistant(chat);
    if (isDeepStrictEqual(now, last)) return now;
    last = now;
  }
  return last;
}

/**
 * What a page that died held: its message once its state settled, and the message the chunks it
 * read build. They differ only when the SDK still had a chunk in flight as the connection broke:
 * its job ran (its callbacks fired) but the errored response dropped its write to the message, so
 * the page processed it without showing it. The transport counts it processed, which is what keeps
 * its callback from firing twice; the next page shows it.
 */
async function heldBy(p) {
  return { shown: await settled(p.chat), read: await build(p.log.map((l) => l.chunk)) };
}

function assertRebuilds(rebuilt, held, what) {
  if (isDeepStrictEqual(rebuilt, held.shown)) return;
  assert.deepEqual(rebuilt, held.read, `${what} (or, with a chunk in flight at its death, what it read)`);
}

test('pages that die mid-answer, each new page resuming from the offset the last one held: nothing twice, nothing lost', async () => {
  for (let round = 0; round < 2; round += 1) {
    const held = sharedHeld();
    const pages = [];
    // page 1 sends; its connection dies after a few events (no reconnect: the page is gone)
    let p = page({ held, plan: [between(3, 25)], attempts: 0 });
    pages.push(p);
    await within(30_000, p.chat.sendMessage({ text: 'How does resuming a stream work?' }), 'page 1');
    for (let n = 2; p.chat.status !== 'ready'; n += 1) {
      assert.ok(n < 12, 'the pages end');
      assert.equal(p.chat.status, 'error', `page ${n - 1} died of its cut connection`);
      assert.match(p.seen.errors.at(-1), /network/);
      p.gone();
      const before = await heldBy(p);
      // a reload: a new page, the messages the app stored (the user's), the persisted offset
      p = page({ held, plan: [rand() < 0.6 ? between(3, 40) : null], attempts: 0, messages: [USER] });
      pages.push(p);
      await within(30_000, p.chat.resumeStream(), `page ${n}`);
      const replayed = p.log.filter((l) => l.replayed).map((l) => l.chunk);
      assertRebuilds(await build(replayed), before, `page ${n}: the replayed chunks rebuild exactly what page ${n - 1} held`);
    }
    const streamId = (await held.get('chat-1')).streamId;
    const whole = await wholeOf(streamId);
    assert.deepEqual(assistant(p.chat), whole, `round ${round}: the last page holds the whole message (${pages.length} pages)`);
    assert.equal(p.chat.messages.length, 2, 'one user and one assistant message');
    const toolCalls = pages.flatMap((q) => q.seen.toolCalls);
    const values = pages.flatMap((q) => q.seen.values);
    // call-1 runs on the server (its output is in the stream): once. call-2 is a client tool
    // whose output no page gave: a page that ran it and then died hands it to the next page once
    // more (the output would have lived only in the dead page), and never again after that.
    const ran = pages.map((q) => q.seen.toolCalls.filter((c) => c === 'call-2').length);
    const first = ran.findIndex((n) => n > 0);
    assert.ok(first >= 0, 'a page ran the client tool');
    const expected = ran.map((_, i) => (i === first || (i === first + 1 && first < pages.length - 1) ? 1 : 0));
    assert.deepEqual(ran, expected, `call-2 on the page that first ran it and, if that page died, on the next (per page: ${ran})`);
    assert.deepEqual(toolCalls.filter((c) => c !== 'call-2'), ['call-1'], 'the server tool once over all pages');
    assertData(values);
    assert.deepEqual(freshBodies(pages.map((q) => q.log)), BODIES, 'the fresh deltas of all pages add up to each body exactly');
    const run = app.runs.get(streamId);
    assert.equal((await run.done).status, 'complete', 'pages that went away changed nothing: the answer completed');
  }
});

test('a page resuming inside an ended message after a server restart gets exactly the tail: nothing twice, onData not again', async () => {
  const held = sharedHeld();
  const p1 = page({ held, plan: [between(8, 40)], attempts: 0 });
  await within(30_000, p1.chat.sendMessage({ text: 'go' }), 'page 1');
  assert.equal(p1.chat.status, 'error', 'page 1 died of its cut connection');
  p1.gone();
  const streamId = (await held.get('chat-1')).streamId;
  assert.equal((await app.runs.get(streamId).done).status, 'complete', 'the answer completed without the page');
  // The message was sealed into its document; the host that streamed it is gone.
  await tp.restart();
  producer = createTwoplaneProducer({ url: tp.url, producerToken: tp.producerToken, readTokenSecret: tp.readSecret });
  const p2 = page({ held, messages: [USER], attempts: 0 });
  await within(30_000, p2.chat.resumeStream(), 'page 2');
  assert.equal(p2.chat.status, 'ready', p2.seen.errors.join('; '));
  // What page 2 replays comes from the held snapshot (rebuilding what page 1 held is the
  // pages-die test's check); the network brought the tail only, and the fresh deltas of both pages
  // add up to each body exactly (below).
  assert.ok(p2.log.some((l) => l.replayed), 'page 2 replayed what page 1 held');
  assert.ok(p2.conns.length > 0 && p2.conns.every((c) => /[?&]from=[1-9]\d*&tail=1$/.test(c.url)), `page 2 asked for the tail only: ${p2.conns.map((c) => c.url)}`);
  assert.deepEqual(assistant(p2.chat), await wholeOf(streamId), 'page 2 holds the whole message');
  assert.equal(p2.chat.messages.length, 2, 'one user and one assistant message');
  // The server's tool once; the client tool once, and once more on page 2 when page 1 had run it
  // before it died (offered again: its output would have lived only in page 1).
  const calls = [...p1.seen.toolCalls, ...p2.seen.toolCalls];
  assert.deepEqual(calls.filter((c) => c !== 'call-2'), ['call-1'], 'the server tool once over both pages');
  const ran = [p1, p2].map((p) => p.seen.toolCalls.filter((c) => c === 'call-2').length);
  assert.deepEqual(ran, ran[0] === 1 ? [1, 1] : [0, 1], `the client tool per page: ${ran}`);
  assertData([...p1.seen.values, ...p2.seen.values]);
  assert.deepEqual(freshBodies([p1.log, p2.log]), BODIES, 'the fresh deltas of both pages add up to each body exactly');
});

test('a page that dies while its Chat is busy (a slow client tool): the next page resumes from what it processed, not from what it received', async () => {
  const held = sharedHeld();
  let death;
  const died = new Promise((r) => (death = r));
  const p1 = page({
    held,
    onToolCall: async (call) => {
      if (call.toolCallId !== 'call-1') return;
      await sleep(150); // the network runs ahead meanwhile
      death({ log: p1.log.slice(), held: new Map(held.map), seen: structuredClone(p1.seen) });
      await sleep(300);
    },
  });
  const sending = p1.chat.sendMessage({ text: 'go' });
  const dead = await within(30_000, died, 'the slow tool');
  p1.transport.close();
  await sending.catch(() => {});
  // the reload: what the page had stored at its death
  const frozen = sharedHeld();
  for (const [k, v] of dead.held) frozen.map.set(k, v);
  const p2 = page({ held: frozen, messages: [USER] });
  await within(30_000, p2.chat.resumeStream(), 'the next page');
  assert.equal(p2.chat.status, 'ready', p2.seen.errors.join('; '));
  const streamId = (await frozen.get('chat-1')).streamId;
  assert.deepEqual(assistant(p2.chat), await wholeOf(streamId));
  assert.deepEqual(freshBodies([dead.log, p2.log]), BODIES, 'what the first page processed and the fresh deltas of the next add up to each body exactly');
  assert.deepEqual([...dead.seen.toolCalls, ...p2.seen.toolCalls], ['call-1', 'call-2'], 'each tool once over both pages');
  assertData([...dead.seen.values, ...p2.seen.values]);
});

test('a connection that breaks is reopened by the transport from what it received; the Chat sees nothing', async () => {
  const held = sharedHeld();
  const plan = [between(3, 15), between(3, 15), between(3, 15)];
  const p = page({ held, plan, attempts: 6 });
  await within(30_000, p.chat.sendMessage({ text: 'go' }), 'the chat');
  assert.equal(p.chat.status, 'ready', p.seen.errors.join('; '));
  assert.deepEqual(p.seen.errors, []);
  assert.ok(p.conns.filter((c) => c.cut).length >= 2, `connections were cut: ${JSON.stringify(p.conns)}`);
  const streamId = (await held.get('chat-1')).streamId;
  assert.deepEqual(assistant(p.chat), await wholeOf(streamId));
  assert.ok(p.log.every((l) => !l.replayed), 'nothing was replayed to a Chat that holds it');
  assert.deepEqual(freshBodies([p.log]), BODIES, 'every delta once');
  // The SDK (ai 5, 6 and 7) changes a data chunk it was handed when a later chunk replaces its
  // data: a snapshot that shared the SDK's objects would hold the later data in the earlier chunk.
  assert.deepEqual((await held.get('chat-1')).snapshot, compactChunks(p.log.map((l) => l.chunk)), 'the held snapshot is the chunks as the page read them, compacted');
  assert.deepEqual(p.seen.toolCalls, ['call-1', 'call-2']);
  assertData(p.seen.values);
  assert.ok(p.conns.slice(1).every((c) => /from=[1-9]/.test(c.url)), 'the reconnects ask from an offset');
});

test('a Chat that lost its connection resumes it (resumeStream) without a second message or a second callback', async () => {
  const held = sharedHeld();
  const p = page({ held, plan: [between(5, 30)], attempts: 0 });
  await within(30_000, p.chat.sendMessage({ text: 'go' }), 'the chat');
  assert.equal(p.chat.status, 'error');
  await within(30_000, p.chat.resumeStream(), 'the resume');
  assert.equal(p.chat.status, 'ready', p.seen.errors.join('; '));
  const streamId = (await held.get('chat-1')).streamId;
  assert.deepEqual(assistant(p.chat), await wholeOf(streamId));
  assert.equal(p.chat.messages.length, 2);
  assert.deepEqual(p.seen.toolCalls, ['call-1', 'call-2']);
  assertData(p.seen.values);
  assert.deepEqual(freshBodies([p.log]), BODIES);
});

test('a page holding nothing gets the full replay (from=0), every callback fresh', async () => {
  const id = newId('nothing-held');
  const { outcome } = await produceTurn(id);
  await outcome;
  // the app knows the stream and a token (its page props), the page holds nothing of it
  const transport = new TwoplaneChatTransport({ endpoint: tp.url, stream: () => ({ url: `${tp.url}/v1/streams/${id}/ui-message-stream`, token: tokenFor(id), streamId: id }) });
  const seen = { toolCalls: [], data: [] };
  const chat = new Chat({ id: 'chat-x', messages: [USER], transport, onToolCall: transport.fresh(({ toolCall }) => void seen.toolCalls.push(toolCall.toolCallId)), onData: transport.fresh((d) => void seen.data.push(d.type)) });
  await within(30_000, chat.resumeStream(), 'the resume');
  assert.deepEqual(assistant(chat), await wholeOf(id));
  assert.deepEqual(seen.toolCalls, ['call-1', 'call-2']);
  assert.deepEqual(seen.data, ['data-status'], 'the data part replaced once is replayed once, with its latest data');
  assert.equal(chat.status, 'ready');
});

test('no stream: 204, reconnectToStream gives null and the Chat stays ready', async () => {
  const transport = new TwoplaneChatTransport({ endpoint: tp.url, stream: () => ({ url: `${tp.url}/v1/streams/never-${SEED}/ui-message-stream`, token: tokenFor(`never-${SEED}`) }) });
  const chat = new Chat({ id: 'chat-none', messages: [USER], transport });
  await within(10_000, chat.resumeStream(), 'the resume');
  assert.equal(chat.status, 'ready');
  assert.deepEqual(asJson(chat.messages), [USER]);
});

test('stop() is a cancel: the producer learns it and stops reading the model, readers get abort', async () => {
  const held = sharedHeld();
  const p = page({ held, plan: [] });
  const sending = p.chat.sendMessage({ text: 'go' });
  const t0 = Date.now();
  while (p.log.length < 8 && Date.now() - t0 < 20_000) await sleep(5);
  await p.chat.stop();
  await within(30_000, sending, 'the stopped chat');
  assert.equal(p.chat.status, 'ready');
  const streamId = (await held.get('chat-1')).streamId;
  const run = app.runs.get(streamId);
  const out = await within(10_000, run.done, 'the producer');
  assert.equal(out.readerCancelled, true, JSON.stringify(out));
  assert.equal(out.status, 'cancelled');
  await sleep(100); // a read of the model already under way may still land
  const pulledAtEnd = run.pulled.n;
  await sleep(300);
  assert.equal(run.pulled.n, pulledAtEnd, 'the model is no longer read');
  assert.ok(pulledAtEnd < 70, `the model was not read to its end (${pulledAtEnd} chunks)`);
  const after = await readUi(tp, tokenFor(streamId), streamId);
  const chunks = after.events.filter((e) => !e.done).map((e) => e.chunk);
  assert.equal(chunks.at(-1).type, 'abort', 'readers get abort');
  assert.equal(after.events.at(-1).done, true);
});

test('a producer killed mid-answer: readers get the message the store holds, and an end', async () => {
  const id = newId('killed');
  const child = spawn(process.execPath, ['--import', join(HERE, 'lib/ai-alias.mjs'), join(HERE, 'lib/producer-child.mjs')], {
    env: { ...process.env, TWOPLANE_AI: major, TP_URL: tp.url, TP_PRODUCER: tp.producerToken, TP_STREAM: id, TP_DELAY: '15' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let errOut = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (errOut += d));
  const exited = new Promise((r) => child.once('exit', r));
  const killAt = between(10, 40);
  const t0 = Date.now();
  while (out.split('\n').length - 1 < killAt && child.exitCode === null && Date.now() - t0 < 30_000) await sleep(5);
  child.kill('SIGKILL');
  await exited;
  const sent = out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.ok(sent.length >= killAt, `the child sent ${sent.length} chunks before it was killed: ${errOut}`);
  const read = await within(20_000, readUi(tp, tokenFor(id), id, { timeoutMs: 20_000 }), 'the reader');
  assert.equal(read.events.at(-1).done, true, 'the reader gets an end');
  const got = await build(read.events.filter((e) => !e.done).map((e) => e.chunk));
  let match = -1;
  for (let k = sent.length; k > 0 && match < 0; k -= 1) if (isDeepStrictEqual(await build(sent.slice(0, k)), got)) match = k;
  assert.ok(match > 0, 'the message read is the one a prefix of what the producer sent builds');
  // the same through the transport and the SDK's Chat
  const transport = new TwoplaneChatTransport({ endpoint: tp.url, stream: () => ({ url: `${tp.url}/v1/streams/${id}/ui-message-stream`, token: tokenFor(id), streamId: id }) });
  const chat = new Chat({ id: 'chat-killed', messages: [USER], transport });
  await within(20_000, chat.resumeStream(), 'the Chat');
  assert.ok(['ready', 'error'].includes(chat.status), `the Chat ended (${chat.status})`);
  assert.deepEqual(assistant(chat), got);
});

test('one line in a route: toUIMessageStreamResponse(await responseOptions(id)) produces and names the stream and its token', async () => {
  const id = newId('one-line');
  const result = M.ai.streamText({
    model: (await import('./lib/turn.mjs')).pacedModel(M, [[{ type: 'stream-start', warnings: [] }, { type: 'text-start', id: 'x' }, { type: 'text-delta', id: 'x', delta: 'one line' }, { type: 'text-end', id: 'x' }, M.finishPart('stop')]], 1),
    prompt: 'hi',
  });
  const options = await producer.responseOptions(id, { userId: 'u-7' });
  const response = result.toUIMessageStreamResponse(options);
  assert.equal(response.headers.get('x-twoplane-stream'), id);
  const token = response.headers.get('x-twoplane-token');
  assert.equal(token, signStreamToken({ secret: tp.readSecret, streamId: id, userId: 'u-7', expiresAt: JSON.parse(Buffer.from(token.split('.')[0], 'base64url')).exp }));
  const body = await response.text();
  const out = await options.done;
  assert.equal(out.status, 'complete');
  const fromBody = await build(body.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6))));
  assert.equal(fromBody.id, id, 'the message id is the stream id');
  assert.deepEqual(await wholeOf(id), fromBody);
});

test('a chunk stream without a route: produceUIMessageStream takes chunk objects too, and a bad chunk is refused with its kind', async () => {
  const id = newId('objects');
  const chunks = [{ type: 'start', messageId: id }, { type: 'text-start', id: 'a' }, { type: 'text-delta', id: 'a', delta: 'hé 🦀' }, { type: 'text-end', id: 'a' }, { type: 'finish' }];
  const ok = await producer.produce(id, streamOf(chunks));
  assert.equal(ok.status, 'complete');
  assert.deepEqual(await wholeOf(id), await build(chunks));
  const bad = await producer.produce(newId('bad'), streamOf([{ type: 'start', messageId: 'another-message' }]));
  assert.equal(bad.status, 'failed');
  assert.equal(bad.kind, 'bad_chunk');
  assert.equal(bad.httpStatus, 400);
});
