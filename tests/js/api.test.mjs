// The public API's behaviour, beyond the shared vectors, against the build named by BACKEND:
// the names and shapes the replaced TypeScript exported, the conform pass's identity and
// synchronous reporting, the documented handling of an onViolation that throws, and the SSE
// encoders' byte-for-byte equality with `id: ...\ndata: ${JSON.stringify(frame)}\n\n`.

import test from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, loadBackendApi } from './backends.mjs';
import { mulberry32, genSession, PIECES } from './gen.mjs';

const api = await loadBackendApi();
const tag = `[${BACKEND}]`;

/** The definition the encoders must equal, frame by frame. */
function template(frame) {
  const id = api.frameResumePoint(frame);
  return `${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(frame)}\n\n`;
}

test(`${tag} the replaced module's names, with their shapes`, () => {
  for (const name of ['STREAM_STATUS_STREAMING', 'STREAM_SSE_HEADERS', 'frameResumePoint', 'spliceStreamText', 'assembleDurableText',
    'streamChunkId', 'streamChunkTableDdl', 'streamRequestFromHttp', 'StreamRelayConform', 'encodeSseEvent', 'encodeSseEvents',
    'StreamReader', 'SseDecoder', 'TwoplaneError']) {
    assert.ok(name in api, name);
  }
  assert.equal(api.STREAM_STATUS_STREAMING, 'streaming');
  // A plain object, in the contract's order, usable wherever headers are taken.
  assert.deepEqual(Object.entries(api.STREAM_SSE_HEADERS), [
    ['content-type', 'text/event-stream; charset=utf-8'],
    ['cache-control', 'no-cache, no-transform'],
    ['connection', 'keep-alive'],
    ['x-accel-buffering', 'no'],
  ]);
  assert.equal(Object.getPrototypeOf(api.STREAM_SSE_HEADERS), Object.prototype);
  const res = new Response('', { headers: api.STREAM_SSE_HEADERS });
  assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  assert.equal(typeof api.StreamRelayConform, 'function');
  assert.equal(api.StreamRelayConform.length >= 2, true);
});

test(`${tag} StreamRelayConform: accepted frames are the very objects fed in, extras and all`, () => {
  const c = new api.StreamRelayConform('s', 0);
  const open = { type: 'open', streamId: 's', from: 0, seq: 3, durableSeq: 0, ended: false, region: 'eu', nested: { a: [1] } };
  assert.deepEqual(c.feed(open), [open]);
  assert.equal(c.feed(open).length, 0, 'a second open is absorbed');
  const chunk = Object.freeze({ type: 'chunk', from: 0, seq: 3, text: 'a\ud800b', traceId: 'x' });
  const out = c.feed(chunk);
  assert.equal(out.length, 1);
  assert.equal(out[0], chunk);
  class Custom { constructor() { this.type = 'durable'; this.seq = 2; } }
  const durable = new Custom();
  assert.equal(c.feed(durable)[0], durable);
  const end = { type: 'end', seq: 2, status: 'complete', extra: true };
  assert.equal(c.feed(end)[0], end);
  assert.deepEqual(c.feed({ type: 'chunk', from: 3, seq: 4, text: 'z' }), [], 'nothing follows a terminal');
  assert.deepEqual(c.end(), []);
  assert.deepEqual(c.fail(), []);
});

test(`${tag} StreamRelayConform: a synthesized open and a terminating stale have the contract's shape`, () => {
  const c = new api.StreamRelayConform('m\ud800', 4);
  const chunk = { type: 'chunk', from: 2, seq: 6, text: 'abcd' };
  const out = c.feed(chunk);
  assert.equal(JSON.stringify(out[0]), JSON.stringify({ type: 'open', streamId: 'm\ud800', from: 4, seq: 4, durableSeq: 4, ended: false }));
  assert.equal(out[1], chunk);
  c.feed({ type: 'durable', seq: 5 });
  const stale = c.fail();
  assert.equal(JSON.stringify(stale), JSON.stringify([{ type: 'stale', floorSeq: 6, durableSeq: 5 }]));
});

test(`${tag} StreamRelayConform: onViolation is called synchronously, once, with the contract's reason`, () => {
  const log = [];
  const c = new api.StreamRelayConform('s', 0, (reason) => log.push(['report', reason]));
  c.feed({ type: 'chunk', from: 0, seq: 2, text: 'ab' });
  log.push(['before']);
  const out = c.feed({ type: 'chunk', from: 5, seq: 6, text: 'x' });
  log.push(['after', out]);
  assert.deepEqual(log, [
    ['before'],
    ['report', 'relay chunk at 5 leaves a gap after 2'],
    ['after', [{ type: 'stale', floorSeq: 2, durableSeq: 0 }]],
  ]);
  const reasons = [];
  const d = new api.StreamRelayConform('s', 0, (r) => reasons.push(r));
  d.feed({ type: 'chunk', from: 0, seq: 2, text: 'a\ud800' });
  assert.deepEqual(d.end(), [{ type: 'stale', floorSeq: 2, durableSeq: 0 }]);
  assert.deepEqual(d.end(), []);
  assert.deepEqual(reasons, ['relay source ended without a terminal frame']);
  const e = new api.StreamRelayConform('s', 0, (r) => reasons.push(r));
  e.feed({ type: 'open', streamId: 's\ud800', from: 1.5, seq: 2, durableSeq: 0 });
  assert.equal(reasons.at(-1), 'relay open for "s\\ud800" at 1.5 is malformed');
  const f = new api.StreamRelayConform('s', 0, (r) => reasons.push(r));
  f.feed({ type: 'chunk', from: 0, seq: 1e21, text: 'x' });
  assert.equal(reasons.at(-1), 'relay chunk 0\u21921e+21 does not span exactly its offsets');
});

// The decision for an onViolation that throws (docs/contract.md is silent; the replaced code let it escape
// mid-pass, leaving the pass still live): the exception reaches the caller of feed/end, the pass
// is already terminated, and the stale that call owed is returned by the next call, once.
// So a driver that does `catch { deliver(conform.fail()) }` still delivers exactly one terminal.
test(`${tag} StreamRelayConform: an onViolation that throws propagates, the pass stays terminated and legal`, () => {
  const boom = new Error('app bug');
  for (const next of ['fail', 'end', 'feed']) {
    let calls = 0;
    const c = new api.StreamRelayConform('s', 0, () => { calls++; throw boom; });
    assert.deepEqual(c.feed({ type: 'chunk', from: 0, seq: 1, text: 'a' }).length, 2);
    assert.throws(() => c.feed({ type: 'chunk', from: 9, seq: 10, text: 'x' }), (err) => err === boom);
    const owed = next === 'feed' ? c.feed({ type: 'chunk', from: 1, seq: 2, text: 'b' }) : c[next]();
    assert.deepEqual(owed, [{ type: 'stale', floorSeq: 1, durableSeq: 0 }], next);
    assert.deepEqual(c.feed({ type: 'chunk', from: 1, seq: 2, text: 'b' }), [], `${next}: nothing passes after the terminal`);
    assert.deepEqual(c.end(), []);
    assert.deepEqual(c.fail(), []);
    assert.equal(calls, 1, `${next}: the violation is reported once`);
  }
  // The same through end(): the source ended and the report threw.
  const d = new api.StreamRelayConform('s', 3, () => { throw boom; });
  assert.throws(() => d.end(), (err) => err === boom);
  assert.deepEqual(d.fail(), [{ type: 'stale', floorSeq: 3, durableSeq: 0 }]);
  assert.deepEqual(d.fail(), []);
});

test(`${tag} encodeSseEvent / encodeSseEvents equal JSON.stringify + template for every frame kind`, () => {
  const frames = [
    { type: 'open', streamId: 's\ud800', from: 3, seq: 9, durableSeq: 2, ended: false },
    { type: 'chunk', from: 3, seq: 5, text: '\ud800\u2028' },
    { type: 'chunk', from: 0, seq: 6, text: '\udc00\ud83d\u2029\u0000\u001f"' },
    { type: 'chunk', from: 0, seq: 2, text: '\ude00\ud83d' },
    { type: 'chunk', from: 0, seq: 4, text: '😀😀' },
    { type: 'durable', seq: 4 },
    { type: 'end', seq: 7, status: 'complete' },
    { type: 'end', seq: 0, status: 'error', error: 'boom\ud800\n' },
    { type: 'stale', floorSeq: 1, durableSeq: 1 },
    { type: 'absent' },
    // Shapes the contract's key order does not cover: extras, other key orders, odd numbers, nesting.
    { seq: 5, type: 'chunk', from: 4, text: 'x', meta: { n: [1, '\udfff', null] } },
    { type: 'durable', seq: 1e21 },
    { type: 'durable', seq: -0 },
    { type: 'durable', seq: 1.5 },
    { type: 'chunk', from: 0, seq: NaN, text: '' },
    { type: 'chunk', from: 0, seq: '7', text: 'abc' },
    { type: 'end', seq: Infinity },
    { type: 'open', streamId: 's', from: undefined, seq: 1 },
    { type: 'whatever', seq: 3, 1: 'index key first' },
    { type: 'durable', seq: 3, toJSON() { return { replaced: true }; } },
    Object.assign(Object.create({ inherited: 1 }), { type: 'durable', seq: 2 }),
  ];
  for (const frame of frames) {
    assert.equal(api.encodeSseEvent(frame), template(frame), JSON.stringify(frame));
    assert.equal(api.encodeSseEvents([frame]), template(frame), JSON.stringify(frame));
  }
  assert.equal(api.encodeSseEvents(frames), frames.map(template).join(''));
  assert.equal(api.encodeSseEvents([]), '');
  // Long batches (the Node encoder works in slices) keep order and content.
  const many = Array.from({ length: 1000 }, (_, i) => frames[i % frames.length]);
  assert.equal(api.encodeSseEvents(many), many.map(template).join(''));
});

test(`${tag} encodeSseEvents equals the template on random batches (seeded)`, () => {
  const rng = mulberry32(7);
  for (let k = 0; k < 300; k++) {
    const session = genSession(rng, { maxCalls: 40 });
    const frames = session.calls.filter((c) => 'feed' in c && c.feed !== null && typeof c.feed === 'object' && !Array.isArray(c.feed)).map((c) => c.feed);
    let expected;
    try {
      expected = frames.map(template).join('');
    } catch (err) {
      // A BigInt field: JSON.stringify throws, and so must the encoder, with the same error type.
      assert.throws(() => api.encodeSseEvents(frames), err.constructor);
      continue;
    }
    assert.equal(api.encodeSseEvents(frames), expected, `batch ${k}`);
  }
});

test(`${tag} text functions keep every code unit`, () => {
  for (const a of PIECES) {
    for (const b of PIECES) {
      assert.equal(api.spliceStreamText(a, a + b), a + b);
      assert.equal(api.streamChunkId(a + b, 12), `${a + b}:12`);
      assert.equal(api.assembleDurableText({ body: a }, [{ seq: 2, text: b }, { seq: 1, text: a }]), a + a + b);
    }
  }
  assert.equal(api.spliceStreamText('ab', 'xyz'), 'abz');
  assert.equal(api.streamChunkId('m', 2 ** 53 - 1), 'm:9007199254740991');
  // Not a number: printed as the original's template literal printed it, not as NaN.
  for (const seq of [undefined, null, '05', 'x', true, 10n, [1, 2], { toString: () => 'own' }]) {
    assert.equal(api.streamChunkId('m', seq), `m:${seq}`, String(seq));
  }
  assert.equal(api.streamChunkId(undefined, 3), 'undefined:3');
  assert.throws(() => api.streamChunkId('m', Symbol('s')), TypeError);
});

test(`${tag} streamRequestFromHttp: fetch Requests, header objects, Node-style messages`, () => {
  const req = (url, h) => new Request(url, { headers: h });
  assert.deepEqual(api.streamRequestFromHttp(req('http://h/s?streamId=a%20b&from=4')), { streamId: 'a b', from: 4 });
  assert.deepEqual(api.streamRequestFromHttp(req('http://h/s?streamId=x&from=4', { 'Last-Event-ID': '9' })), { streamId: 'x', from: 9 });
  assert.deepEqual(api.streamRequestFromHttp(req('http://h/s?streamId=x&from=4', { 'last-event-id': '' })), { streamId: 'x', from: 0 });
  assert.deepEqual(api.streamRequestFromHttp(req('http://h/s?from=12abc')), { streamId: '', from: 12 });
  assert.deepEqual(api.streamRequestFromHttp({ url: 'http://h/s?streamId=q', headers: { get: () => null } }), { streamId: 'q', from: 0 });
  assert.deepEqual(api.streamRequestFromHttp({ url: '/s?streamId=q&from=3', headers: { 'last-event-id': '5' } }), { streamId: 'q', from: 5 });
  // A fetch-style request with a relative URL throws, as `new URL(url)` did in the original.
  for (const url of ['/s?streamId=q', 's?streamId=q', '//h/s?streamId=q', '', undefined]) {
    assert.throws(() => api.streamRequestFromHttp({ url, headers: { get: () => null } }), (err) => err instanceof api.TwoplaneError && err.kind === 'invalid_url', String(url));
  }
});

test(`${tag} streamChunkTableDdl: both dialects, custom columns, the dialect as an object or a name`, () => {
  const tables = { message: 'msgs', chunks: 'chunks', columns: { chunkKey: 'k', chunkStream: 'message_id', chunkSeq: 'end', chunkText: 'body' } };
  const sqlite = api.streamChunkTableDdl(tables, { name: 'sqlite', placeholder: (i) => `?${i}` });
  assert.deepEqual(sqlite, [
    'CREATE TABLE IF NOT EXISTS "chunks" ("k" TEXT PRIMARY KEY, "message_id" TEXT NOT NULL, "end" INTEGER NOT NULL, "body" TEXT NOT NULL)',
    'CREATE INDEX IF NOT EXISTS "chunks_stream_seq" ON "chunks" ("message_id", "end")',
  ]);
  assert.deepEqual(api.streamChunkTableDdl(tables, 'sqlite'), sqlite);
  const pg = api.streamChunkTableDdl({ message: 'm', chunks: 'c' }, { name: 'postgres' });
  assert.equal(pg[0], 'CREATE TABLE IF NOT EXISTS "c" ("id" text PRIMARY KEY, "streamId" text NOT NULL, "seq" bigint NOT NULL, "text" text NOT NULL)');
  assert.equal(pg[1], 'CREATE INDEX IF NOT EXISTS "c_stream_seq" ON "c" ("streamId", "seq")');
  // As the replaced function decides: any name but "postgres" gets SQLite's types.
  assert.deepEqual(api.streamChunkTableDdl({ message: 'm', chunks: 'c' }, { name: 'mysql' })[0], api.streamChunkTableDdl({ message: 'm', chunks: 'c' }, 'sqlite')[0]);
});

test(`${tag} StreamReader splices at each chunk's own offset and stops on a terminal`, () => {
  const updates = [];
  const r = new api.StreamReader({ streamId: 's', durableText: 'He\ud83d', onUpdate: (u) => updates.push([u.cut, u.appended]) });
  assert.equal(r.push({ type: 'open', streamId: 's', from: 3, seq: 3, durableSeq: 3, ended: false }), true);
  r.push({ type: 'chunk', from: 2, seq: 5, text: '😀!' });
  assert.equal(r.text, 'He😀!');
  assert.equal(r.push({ type: 'end', seq: 5, status: 'complete' }), false);
  assert.equal(r.stopped, 'end');
  assert.deepEqual(updates, [[2, '😀!']]);
  assert.equal(r.rendered('He😀!!'), 'He😀!!');
});

test(`${tag} encodeSseEvents: a frame getter that encodes again does not disturb the outer batch`, () => {
  let inner = '';
  const sneaky = {
    type: 'chunk',
    from: 0,
    get seq() {
      if (inner === '') inner = api.encodeSseEvents(Array.from({ length: 40 }, (_, i) => ({ type: 'durable', seq: 100 + i })));
      return 1;
    },
    text: 'x',
  };
  const batch = [...Array.from({ length: 30 }, (_, i) => ({ type: 'durable', seq: i })), sneaky];
  const got = api.encodeSseEvents(batch);
  inner = 'done';
  assert.equal(got, batch.map(template).join(''));
});

test('assembleDurableText sorts -0 and 0 as one seq, keeping input order', () => {
  const rows = [{ seq: -0, text: 'b' }, { seq: 0, text: 'a' }, { seq: -1, text: 'z' }];
  assert.equal(api.assembleDurableText({ body: '>' }, rows), '>zba');
  assert.equal(api.assembleDurableText(undefined, [rows[1], rows[0]]), 'ab');
});

test(`${tag} SseDecoder tells an event's own id from the one an earlier event left`, () => {
  const got = [];
  const d = new api.SseDecoder((data, _type, lastEventId, ownId) => got.push([data, lastEventId, ownId]));
  // An id split across reads, an event without one, an id holding NUL (ignored, so not its own),
  // an empty id (its own, resetting the last one), and an id on an event with no data (nothing
  // dispatched, and the next event does not inherit the flag).
  for (const piece of ['id: 7\nda', 'ta: a\n\n', 'data: b\n\n', 'id: x\0y\ndata: c\n\n', 'id\ndata: d\n\n', 'id: 9\n\ndata: e\n\n']) {
    d.push(piece);
  }
  assert.deepEqual(got, [
    ['a', '7', true],
    ['b', '7', false],
    ['c', '7', false],
    ['d', '', true],
    ['e', '9', false],
  ]);
  // A stream cut after an id line: the next stream's first event has no id of its own.
  d.push('id: 3\n');
  d.end();
  d.push('data: f\n\n');
  assert.deepEqual([got.at(-1)[0], got.at(-1)[2]], ['f', false]);
});
