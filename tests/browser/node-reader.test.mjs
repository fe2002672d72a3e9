// The facade and the reader over `twoplane/wasm` in Node: hostile relay input, the reader's rules
// and transport against the fixture SSE server (drops mid-event, reconnects, the seal), refusals,
// backoff, and the incremental updates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import * as api from 'twoplane/wasm';
import { scenario, startServer } from './lib/server.mjs';

const { StreamReader, StreamRelayConform, TwoplaneError } = api;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(pred, ms, what) {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

test('conform: hostile input becomes the contract behaviour, never a crash', () => {
  const hostile = [
    null, undefined, 42, 'chunk', true, [], [{ type: 'absent' }], {}, { type: 'chunk' },
    { type: 'chunk', from: NaN, seq: 1, text: 'a' }, { type: 'chunk', from: '0', seq: '1', text: 'a' },
    { type: 'chunk', from: 0, seq: 1, text: 5 }, { type: 'open', streamId: '\ud800', from: 0, seq: 0, durableSeq: 0 },
    { type: 'open', streamId: 's', from: Infinity, seq: 0, durableSeq: 0 }, { type: 'end', seq: -0.5 },
    { type: Symbol('x') }, { type: 'chunk', from: 1n, seq: 2n, text: 'a' }, { type: 'open', streamId: 1n, from: 0n },
    new Proxy({}, { get() { throw new Error('hostile getter'); } }),
    { get type() { throw new Error('hostile type'); } },
  ];
  for (const [i, frame] of hostile.entries()) {
    const reasons = [];
    const pass = new StreamRelayConform('s', 0, (r) => reasons.push(r));
    const out = pass.feed(frame);
    assert.ok(Array.isArray(out));
    assert.ok(out.length <= 1, `one stale at most for hostile input ${i}`);
    if (out.length === 1) {
      assert.deepEqual(Object.keys(out[0]), ['type', 'floorSeq', 'durableSeq']);
      assert.equal(reasons.length, 1);
      assert.equal(typeof reasons[0], 'string');
    }
    assert.deepEqual(pass.feed({ type: 'chunk', from: 0, seq: 1, text: 'a' }), [], 'nothing passes after a terminal');
  }
  // An unpaired surrogate in a stream id is quoted in the reason exactly as JSON.stringify does.
  const reasons = [];
  new StreamRelayConform('s', 0, (r) => reasons.push(r)).feed({ type: 'open', streamId: 'x\udc00', from: 0, seq: 0, durableSeq: 0 });
  assert.equal(reasons[0], `relay open for ${JSON.stringify('x\udc00')} at 0 is malformed`);
});

test('conform: the frames it accepts are the very objects fed, extra fields and all', () => {
  const pass = new StreamRelayConform('s', 5);
  const chunk = { type: 'chunk', from: 5, seq: 7, text: '😀', extra: { deep: [1] } };
  const [open, same] = pass.feed(chunk);
  assert.equal(same, chunk);
  assert.equal(JSON.stringify(open), '{"type":"open","streamId":"s","from":5,"seq":5,"durableSeq":5,"ended":false}');
  const end = { type: 'end', seq: 6, status: 'complete', error: undefined, x: 1 };
  assert.equal(pass.feed(end)[0], end);
  assert.deepEqual(pass.end(), []);
  assert.equal(pass.pos, 7);
});

test('conform: a throwing onViolation reaches the caller, and the stale is still delivered next', () => {
  const pass = new StreamRelayConform('s', 0, () => {
    throw new Error('app bug');
  });
  assert.throws(() => pass.feed({ type: 'bogus' }), /app bug/);
  const next = pass.feed({ type: 'chunk', from: 0, seq: 1, text: 'a' });
  assert.deepEqual(next, [{ type: 'stale', floorSeq: 0, durableSeq: 0 }]);
  assert.deepEqual(pass.fail(), []);
});

test('errors carry a kind and are TwoplaneErrors', () => {
  assert.throws(() => api.streamChunkTableDdl({ message: 'm', chunks: 'a"b' }, 'sqlite'), (e) => e instanceof TwoplaneError && e.kind === 'invalid_identifier');
  assert.throws(() => api.streamChunkTableDdl({ message: 'm', chunks: 'c\ud800' }, 'sqlite'), (e) => e.kind === 'invalid_identifier');
  assert.throws(() => api.streamChunkTableDdl({ message: 'm' }, 'sqlite'), (e) => e.kind === 'missing_field');
  assert.throws(() => api.streamChunkTableDdl(null, 'sqlite'), (e) => e.kind === 'invalid_argument');
  assert.throws(() => new StreamReader({ streamId: 5 }), (e) => e.kind === 'invalid_argument');
  assert.throws(() => new StreamReader({ streamId: 's' }).start(), (e) => e.kind === 'invalid_argument');
});

test('text functions keep every code unit', () => {
  assert.equal(api.spliceStreamText('\ud83d', '\ud83d\ude00!'), '\ud83d\ude00!');
  assert.equal(api.streamChunkId('\udfff', 2), '\udfff:2');
  assert.equal(api.assembleDurableText({ body: '\ud83d' }, [{ seq: 2, text: '\ude00' }, { seq: -0, text: 'a' }, { seq: 0, text: 'b' }]), '\ud83dab\ude00');
  assert.equal(api.frameResumePoint({ type: 'stale', floorSeq: 1, durableSeq: 1 }), undefined);
  assert.deepEqual(api.streamRequestFromHttp({ url: '/s?streamId=a%20b&from=9', headers: { 'last-event-id': '12' } }), { streamId: 'a b', from: 12 });
});

test('reader: the five rules, pushed by hand', () => {
  const updates = [];
  let stop = null;
  const r = new StreamReader({ streamId: 's', durableText: 'ab', onUpdate: (u) => updates.push([u.cut, u.appended]), onStop: (reason) => (stop = reason) });
  assert.equal(r.joinOffset, 2);
  assert.equal(r.text, 'ab');
  r.push({ type: 'open', streamId: 's', from: 2, seq: 4, durableSeq: 2, ended: false });
  r.push({ type: 'chunk', from: 2, seq: 4, text: 'cd' });
  r.push({ type: 'chunk', from: 3, seq: 6, text: 'def' }); // an overlap: spliced at its own from
  r.push({ type: 'chunk', from: 0, seq: 2, text: 'ab' }); // inside the text: nothing changes
  assert.deepEqual(updates, [[2, 'cd'], [3, 'def']]);
  assert.equal(r.text, 'abcdef');
  assert.equal(r.resumeFrom, 6);
  assert.equal(r.rendered('abc'), 'abcdef');
  assert.equal(r.rendered('abcdefgh'), 'abcdefgh');
  assert.equal(r.rendered('zz', 'other'), 'zz', 'rule 4: another stream never gets this tail');
  assert.equal(r.push({ type: 'chunk', from: 9, seq: 10, text: 'x' }), false, 'rule 5: a gap stops it');
  assert.equal(stop, 'gap');
  assert.equal(r.stopped, 'gap');
  assert.equal(r.push({ type: 'chunk', from: 6, seq: 7, text: 'g' }), false);
  assert.equal(r.text, 'abcdef');

  const foreign = new StreamReader({ streamId: 's' });
  foreign.push({ type: 'open', streamId: 't', from: 0, seq: 0, durableSeq: 0, ended: false });
  assert.equal(foreign.stopped, 'foreign_stream');
  const garbage = new StreamReader({ streamId: 's' });
  garbage.push(new Proxy({}, { get() { throw new Error('no'); } }));
  assert.equal(garbage.stopped, 'malformed');
  for (const t of ['end', 'stale', 'absent']) {
    const x = new StreamReader({ streamId: 's' });
    x.push({ type: t, seq: 0, status: 'complete', floorSeq: 0, durableSeq: 0 });
    assert.equal(x.stopped, t);
  }
});

test('reader: incremental updates rebuild the text, and the accumulator stays cheap', () => {
  let shown = '';
  const r = new StreamReader({
    streamId: 's',
    onUpdate(u) {
      shown = shown.slice(0, u.cut) + u.appended;
    },
  });
  let produced = '';
  for (let i = 0; i < 20000; i++) {
    const d = ['a', '漢', '😀', '\ud83d', '\ude00b'][i % 5];
    const from = produced.length;
    produced += d;
    const back = i % 13 === 0 ? Math.min(from, 3) : 0;
    r.push({ type: 'chunk', from: from - back, seq: produced.length, text: produced.slice(from - back) });
    if (i % 5000 === 0) assert.equal(r.text, produced); // a read in the middle joins, then keeps going
  }
  assert.equal(shown, produced);
  assert.equal(r.text, produced);
  assert.equal(r.length, produced.length);
});

async function runAgainstFixture(t, { seed, drops, transport = 'fetch' }) {
  const server = await startServer();
  t.after(() => server.close());
  const sc = scenario({ seed, drops, units: 4000, join: 57 + seed });
  server.play(sc);
  const durable = sc.text.slice(0, sc.join);
  let shown = durable;
  let notPrefix = 0;
  let updates = 0;
  const stops = [];
  const reader = new StreamReader({
    endpoint: `${server.origin}/sse`,
    streamId: sc.streamId,
    durableText: durable,
    transport,
    backoff: { initialMs: 5, maxMs: 20 },
    onUpdate(u) {
      updates++;
      shown = shown.slice(0, u.cut) + u.appended;
      if (!sc.text.startsWith(shown)) notPrefix++;
    },
    onStop: (reason) => stops.push(reason),
  });
  reader.start();
  await until(() => reader.stopped !== null, 20000, 'the reader to stop');
  await until(() => server.state.connections.at(-1)?.clientClosed, 5000, 'the client to hang up after the seal');
  await sleep(100); // a reader that wrongly reconnected would show up here
  const log = server.state.connections;
  assert.deepEqual(stops, ['end']);
  assert.equal(notPrefix, 0, 'every live state is a prefix of the produced text');
  assert.ok(updates > drops);
  assert.equal(shown, sc.text);
  assert.equal(reader.text, sc.text);
  assert.equal(log.length, drops + 1, 'one new connection per drop');
  assert.equal(reader.connections, drops + 1);
  assert.equal(log[0].from, sc.join, 'rule 1: the join offset is the durable length');
  assert.equal(log[0].lastEventId, null);
  for (let i = 1; i < log.length; i++) {
    assert.ok(log[i].from <= log[i - 1].delivered && log[i].from >= log[i - 1].from, `connection ${i} resumes at ${log[i].from}, between ${log[i - 1].from} and ${log[i - 1].delivered}`);
    assert.equal(log[i].fromParam, String(log[i].from));
    if (transport === 'fetch') assert.equal(log[i].lastEventId, String(log[i].from));
  }
  assert.ok(log.slice(0, drops).some((c) => c.midEvent), 'at least one drop cut an event');
  assert.ok(log.at(-1).sealed);
  return log;
}

test('reader: fetch transport over drops mid-event, resumes with Last-Event-ID, stops on the seal', async (t) => {
  for (const seed of [1, 2, 3]) await runAgainstFixture(t, { seed, drops: 4 });
});

test('reader: a refusal stops it without reconnecting; a dead server is retried with backoff', async (t) => {
  const refusing = http.createServer((req, res) => res.writeHead(403).end('no'));
  await new Promise((resolve) => refusing.listen(0, '127.0.0.1', resolve));
  t.after(() => refusing.close());
  const stops = [];
  const r = new StreamReader({ endpoint: `http://127.0.0.1:${refusing.address().port}/sse?x=1`, streamId: 's', onStop: (s) => stops.push(s) });
  r.start();
  await until(() => r.stopped !== null, 5000, 'refusal');
  assert.deepEqual(stops, ['refused']);
  assert.equal(r.connections, 1);

  // A port nobody listens on: connection errors, each followed by one retry after a backoff.
  const dead = http.createServer();
  await new Promise((resolve) => dead.listen(0, '127.0.0.1', resolve));
  const port = dead.address().port;
  await new Promise((resolve) => dead.close(resolve));
  const retrying = new StreamReader({ endpoint: `http://127.0.0.1:${port}/sse`, streamId: 's', backoff: { initialMs: 20, maxMs: 80 } });
  retrying.start();
  await sleep(600);
  const n = retrying.connections;
  assert.ok(n >= 4 && n <= 30, `backoff made ${n} attempts in 600 ms`);
  retrying.close();
  assert.equal(retrying.stopped, 'closed');
  await sleep(150);
  assert.equal(retrying.connections, n, 'close() cancels the pending reconnect');
});

test('reader: the subscribe URL follows docs/contract.md §4', async () => {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push([url, init.headers.get('last-event-id')]);
    throw new Error('offline');
  };
  const r = new StreamReader({ endpoint: '/api/stream?tenant=1', streamId: 'a b/ü\ud800', durableText: 'xyz', fetch, backoff: { initialMs: 1, maxMs: 1 } });
  r.start();
  await until(() => seen.length >= 2, 2000, 'two attempts');
  r.close();
  assert.equal(seen[0][0], '/api/stream?tenant=1&streamId=a%20b%2F%C3%BC%EF%BF%BD&from=3');
  assert.equal(seen[0][1], null);
  assert.equal(seen[1][1], '3', 'a reconnect names its resume point');
});
