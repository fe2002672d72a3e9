// Replays the shared vectors (tests/vectors/*.json, format in its README) through the public API
// of the build named by BACKEND (napi | wasm | default). The same files are replayed by the Rust
// tests and in Chromium, so a pass here means this build agrees with every other runtime.

import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BACKEND, loadBackendApi } from './backends.mjs';
// The one replay of message.json, shared with the wasm build in Node and in Chromium.
import { hasMessageCodec, replayMessageVectors } from '../browser/lib/replay.mjs';

const api = await loadBackendApi();
const load = (name) => JSON.parse(readFileSync(new URL(`../vectors/${name}.json`, import.meta.url), 'utf8'));

/** fetch-style headers over an optional last-event-id. */
const headersOf = (lastEventId) => ({ get: (name) => (name.toLowerCase() === 'last-event-id' ? lastEventId : null) });

test(`[${BACKEND}] conform.json: every call's frames, identity and violation reason`, () => {
  const { cases } = load('conform');
  assert.ok(cases.length > 50);
  for (const c of cases) {
    let reasons = [];
    const conform = new api.StreamRelayConform(c.streamId, c.from, (r) => reasons.push(r));
    c.calls.forEach((call, i) => {
      reasons = [];
      let out;
      if ('feed' in call) out = conform.feed(call.feed);
      else if (call.end) out = conform.end();
      else out = conform.fail();
      const want = c.expect[i];
      const msg = `${c.name}, call ${i}`;
      assert.deepEqual(out, want.out, msg);
      // Passed frames are the very objects fed in; built frames have the contract's key order.
      out.forEach((f, k) => {
        // An expected frame equal to the one fed in is that frame passed through (a synthesized
        // frame never equals the frame that caused it): it must be the very object.
        if ('feed' in call && JSON.stringify(want.out[k]) === JSON.stringify(call.feed)) {
          assert.equal(f, call.feed, `${msg}: frame ${k} must be the object fed in`);
        }
        assert.equal(JSON.stringify(f), JSON.stringify(want.out[k]), `${msg}: key order of frame ${k}`);
      });
      assert.deepEqual(reasons, want.violation === null ? [] : [want.violation], msg);
    });
  }
});

test(`[${BACKEND}] reader.json: actions, accumulated text and resume offset`, () => {
  const { cases } = load('reader');
  for (const c of cases) {
    const updates = [];
    const reader = new api.StreamReader({ streamId: c.streamId, durableText: c.durable, onUpdate: (u) => updates.push(u.cut) });
    c.frames.forEach((frame, i) => {
      updates.length = 0;
      const wasLive = reader.stopped === null;
      reader.push(frame);
      const want = c.expect[i];
      const msg = `${c.name}, frame ${i}`;
      if (want.action === 'splice') {
        assert.deepEqual(updates, [want.at], msg);
      } else if (want.action === 'stop') {
        assert.ok(wasLive, msg);
        assert.equal(reader.stopped, want.reason, msg);
        assert.deepEqual(updates, [], msg);
      } else {
        assert.deepEqual(updates, [], msg);
        assert.equal(reader.stopped === null, wasLive, msg);
      }
    });
    assert.equal(reader.text, c.text, c.name);
    assert.equal(reader.resumeFrom, c.resumeFrom, c.name);
  }
});

test(`[${BACKEND}] text.json: splice, assemble, chunk id, resume point`, () => {
  const t = load('text');
  for (const c of t.splice) assert.equal(api.spliceStreamText(c.durable, c.produced), c.expected, JSON.stringify(c));
  for (const c of t.assemble) {
    const args = 'chunks' in c ? [c.message, c.chunks] : [c.message];
    assert.equal(api.assembleDurableText(...args), c.expected, JSON.stringify(c));
  }
  for (const c of t.chunkId) assert.equal(api.streamChunkId(c.streamId, c.seq), c.expected, JSON.stringify(c));
  for (const c of t.chunkIdText) {
    const seq = c.seq.undefined ? undefined : c.seq.value;
    assert.equal(`${seq}`, c.seqText, `the vector's seqText is what JavaScript prints: ${JSON.stringify(c)}`);
    assert.equal(api.streamChunkId(c.streamId, seq), c.expected, JSON.stringify(c));
  }
  for (const c of t.resumePoint) assert.equal(api.frameResumePoint(c.frame), c.expected ?? undefined, JSON.stringify(c));
});

test(`[${BACKEND}] codec.json + sse.json encode: one event per frame, and batches, byte for byte`, () => {
  const codec = load('codec');
  const sse = load('sse');
  const frames = [];
  const want = [];
  for (const c of codec.encode) {
    assert.equal(JSON.stringify(c.frame), c.json);
    const id = api.frameResumePoint(c.frame);
    const event = `${id === undefined ? '' : `id: ${id}\n`}data: ${c.json}\n\n`;
    assert.equal(api.encodeSseEvent(c.frame), event, c.json);
    frames.push(c.frame);
    want.push(event);
  }
  for (const c of sse.encode) {
    assert.equal(api.encodeSseEvent(c.frame), c.sse, c.sse);
    frames.push(c.frame);
    want.push(c.sse);
  }
  if (typeof api.encodeSseEvents === 'function') {
    assert.equal(api.encodeSseEvents(frames), want.join(''));
    for (let i = 0; i < frames.length; i++) assert.equal(api.encodeSseEvents([frames[i]]), want[i]);
  }
});

test(`[${BACKEND}] sse.json decode: the WHATWG event-stream rules`, () => {
  for (const c of load('sse').decode) {
    const events = [];
    const decoder = new api.SseDecoder((data, event, id) => events.push({ event, data, id }));
    for (const bytes of c.chunks) decoder.push(new Uint8Array(bytes));
    decoder.end();
    assert.deepEqual(events, c.events, c.name);
    assert.equal(decoder.lastEventId, c.lastEventId, c.name);
    assert.equal(decoder.retry, c.retry, c.name);
  }
});

test(`[${BACKEND}] request.json: streamRequestFromHttp over fetch-style requests`, () => {
  for (const c of load('request').cases) {
    // The core's absolute/relative split agrees with the WHATWG parser on every vector URL.
    let parses = true;
    try {
      new URL(c.url);
    } catch {
      parses = false;
    }
    assert.equal(parses, c.absolute, `new URL(${JSON.stringify(c.url)})`);
    const fetchStyle = () => api.streamRequestFromHttp({ url: c.url, headers: headersOf(c.lastEventId) });
    if (c.absolute) {
      assert.deepEqual(fetchStyle(), c.expected, JSON.stringify(c));
    } else {
      assert.throws(fetchStyle, (err) => err instanceof api.TwoplaneError && err.kind === 'invalid_url', JSON.stringify(c));
    }
    // A Node IncomingMessage (plain header object) may carry an origin-relative URL.
    const nodeHeaders = c.lastEventId === null ? {} : { 'last-event-id': c.lastEventId };
    assert.deepEqual(api.streamRequestFromHttp({ url: c.url, headers: nodeHeaders }), c.expected, `node-style ${JSON.stringify(c)}`);
    if (/^https?:/.test(c.url)) {
      const headers = new Headers();
      if (c.lastEventId !== null) headers.set('last-event-id', c.lastEventId);
      assert.deepEqual(api.streamRequestFromHttp(new Request(c.url, { headers })), c.expected, `Request ${JSON.stringify(c)}`);
    }
  }
});

test(`[${BACKEND}] ddl.json: both dialects, and refusals with their kind`, () => {
  for (const c of load('ddl').cases) {
    if ('error' in c) {
      assert.throws(() => api.streamChunkTableDdl(c.tables, { name: c.dialect }), (err) => {
        assert.equal(err.kind, c.error, JSON.stringify(c));
        assert.ok(err instanceof api.TwoplaneError);
        return true;
      });
    } else {
      assert.deepEqual(api.streamChunkTableDdl(c.tables, { name: c.dialect }), c.expected, JSON.stringify(c));
    }
  }
});

test(`[${BACKEND}] ddl.json args: the arguments exactly as given, refused with the core's kind`, () => {
  const { args } = load('ddl');
  assert.ok(args.length > 10);
  for (const c of args) {
    const msg = JSON.stringify(c);
    if ('error' in c) {
      assert.throws(() => api.streamChunkTableDdl(c.tables, c.dialect), (err) => {
        assert.ok(err instanceof api.TwoplaneError, msg);
        assert.equal(err.kind, c.error, msg);
        return true;
      });
    } else {
      assert.deepEqual(api.streamChunkTableDdl(c.tables, c.dialect), c.expected, msg);
    }
  }
});

/** The URL a StreamReader requests when it starts, joined holding `from` units of durable text. */
function urlRequested(endpoint, streamId, from) {
  let url = null;
  const reader = new api.StreamReader({
    endpoint,
    streamId,
    durableText: 'x'.repeat(from),
    // Never answers: only the URL of the first request is wanted.
    fetch: (u) => {
      url = u;
      return new Promise(() => {});
    },
  });
  reader.start();
  reader.close();
  return url;
}

test(`[${BACKEND}] request.json subscribe: the URL the reader requests, and the backend's subscribeUrl`, () => {
  const { subscribe } = load('request');
  assert.ok(subscribe.length > 50);
  for (const c of subscribe) {
    const msg = JSON.stringify(c);
    assert.equal(urlRequested(c.endpoint, c.streamId, c.from), c.url, msg);
    assert.equal(api.backend.subscribeUrl(c.endpoint, c.streamId, c.from), c.url, `backend.subscribeUrl ${msg}`);
  }
});

test(`[${BACKEND}] message.json: codec, SSE events, decode errors, conform, reader, assembly, resume points`, async (t) => {
  const results = replayMessageVectors(api, load('message'));
  // Every build reads messages; the addon also has the codec, which the shipped wasm build
  // leaves out (size budget).
  assert.equal(hasMessageCodec(api), BACKEND !== 'wasm', 'which builds carry the message codec');
  const reading = ['conform', 'reader', 'assemble'];
  const sections = hasMessageCodec(api) ? [...reading, 'encode', 'sse', 'decodeError', 'resumePoint'] : [...reading, 'codec absent:'];
  for (const section of sections) {
    assert.ok(results.some((r) => r.name.startsWith(`${section} `)), `no ${section} case ran`);
  }
  for (const r of results) await t.test(r.name, () => assert.ok(r.ok, r.detail ?? ''));
});

// The UI message stream mapping is Node-only (`twoplane/node`): the browser build leaves it out.
if (BACKEND === 'napi') {
  test('[napi] ui.json: ingest, resume from every listed offset, refusals with their kind', () => {
    const { ingest, resume, errors } = load('ui');
    assert.ok(ingest.length >= 5 && resume.length >= 20 && errors.length >= 3);
    for (const c of ingest) {
      const got = api.uiIngest(c.streamId, c.chunks);
      assert.deepEqual(got.frames, c.frames, `${c.name}: frames`);
      assert.equal(got.aborted, c.abort, `${c.name}: aborted`);
    }
    for (const c of resume) {
      const got = api.uiResume(c.streamId, c.frames, { from: c.from, status: c.status, error: c.error });
      assert.deepEqual(got, c.chunks, `${c.name} from ${c.from}`);
    }
    for (const c of errors) {
      assert.throws(() => api.uiIngest(c.streamId, c.chunks), (err) => err instanceof api.TwoplaneError && err.kind === c.kind, c.name);
    }
  });

  test('[napi] uiIngest / uiResume keep a lone surrogate and refuse bad arguments with a kind', () => {
    const delta = 'a\uD800b\uDC00';
    const chunks = [{ type: 'start' }, { type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta }, { type: 'text-end', id: 't' }, { type: 'finish' }];
    const { frames } = api.uiIngest('m', chunks);
    assert.ok(frames.some((f) => f.text === delta), 'the chunk frame holds the delta unchanged');
    const back = api.uiResume('m', frames, { from: 0 });
    assert.ok(back.some((c) => c.type === 'text-delta' && c.delta === delta), JSON.stringify(back));
    const refused = (fn, kind) => assert.throws(fn, (err) => err instanceof api.TwoplaneError && err.kind === kind);
    refused(() => api.uiIngest('m', 'not an array'), 'invalid_argument');
    refused(() => api.uiIngest(7, []), 'invalid_argument');
    refused(() => api.uiResume('m', frames, { from: -1 }), 'invalid_offset');
    refused(() => api.uiResume('m', frames, { status: 'done' }), 'invalid_status');
    refused(() => api.uiResume('m', [{ type: 'nope' }]), 'unknown_frame_type');
  });
}
