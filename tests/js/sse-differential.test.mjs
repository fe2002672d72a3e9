// Differential test of SSE decoding: the same random bytes, cut into pieces at random points, go
// to three decoders written apart from each other, and all three must agree after every piece.
//
//   - the core's `SseDecoder` (Rust) through the Node addon (`CoreSseDecoder` of bindings/node),
//   - the same through the wasm build (`CoreSseDecoder` of bindings/wasm),
//   - `npm/twoplane/src/sse.js`, the plain-JavaScript decoder the package's reader runs.
//
// After each piece: the same events (type, data, last event id), dispatched during the same piece;
// the same `lastEventId` and `retry`. Streams sometimes end mid-way (`finish` / `end`) and a new
// one follows on the same decoder, as a reconnect does. The bytes are biased towards what the
// WHATWG event-stream rules care about: field names and near misses, colons and the one optional
// space, LF / CR / CRLF (CRLF often cut between its two bytes), a leading BOM (whole, partial or
// misplaced), NUL inside ids, retry values valid and not, non-ASCII text, and invalid UTF-8
// (lone continuation bytes, truncated sequences, encoded surrogates, overlongs).
//
//   PROP_SEED=<n>  base seed (default: a fresh one, printed)   PROP_CASES=<n>  streams (default 3000)
// A failure names the case's own seed; rerun it with PROP_SEED=<that seed> PROP_CASES=1.

import test from 'node:test';
import assert from 'node:assert/strict';
import { loadAddon } from '../../npm/twoplane/src/backend-napi.js';
import { SseDecoder as JsSseDecoder } from '../../npm/twoplane/src/sse.js';
import { mulberry32, tools } from './gen.mjs';
import { loadBackendApi } from './backends.mjs';

const BASE = Number(process.env.PROP_SEED ?? Math.floor(Math.random() * 2 ** 32)) >>> 0;
const CASES = Number(process.env.PROP_CASES ?? 3000);

const { addon, error } = loadAddon();
if (addon === null) throw error;
// Importing the wasm entry instantiates the module; its glue (same module instance) exports the class.
await loadBackendApi('wasm');
const glue = await import('../../npm/twoplane/wasm/twoplane_wasm.js');

const utf8 = (s) => Array.from(new TextEncoder().encode(s));

const FIELDS = ['data', 'data', 'data', 'id', 'id', 'event', 'retry', 'retry', '', 'dat', 'DATA', 'data ', ' data', 'ids', 'retr', 'eventx', 'i\u00e9'];
const WORDS = ['a', 'hello', '{"type":"chunk","from":0,"seq":1,"text":"x"}', ' ', '  lead', 'tail ', ':', ': ', 'x:y', '\u00e9\u6f22', '\u{1F600}', '\u2028', '\t', 'message', 'frame'];
const RETRIES = ['0', '7', '1500', '007', '12x', ' 5', '-1', '1.5', '', '+3', '\u0663', '9007199254740993', '18446744073709551615', '18446744073709551616', '99999999999999999999', '1e3'];
/** Bytes that are not (or not on their own) valid UTF-8. */
const INVALID = [[0xff], [0xfe], [0x80], [0xbf], [0xc3], [0xe6, 0xbc], [0xf0, 0x9f, 0x98], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80], [0xef, 0xbb], [0xef, 0xbb, 0xbf]];
const EOLS = [[10], [10], [13], [13, 10], [13, 10]];

/** One random SSE-ish stream as bytes. */
function genStream(rng) {
  const { int, pick, chance } = tools(rng);
  const out = [];
  const r = rng();
  if (r < 0.15) out.push(0xef, 0xbb, 0xbf);
  else if (r < 0.2) out.push(...pick([[0xef], [0xef, 0xbb], [0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf], [0xfe, 0xff]]));
  const value = (field) => {
    const bytes = [];
    if (field === 'retry' && chance(0.7)) return utf8(pick(RETRIES));
    const parts = int(4);
    for (let i = 0; i < parts; i++) {
      const k = rng();
      if (k < 0.6) bytes.push(...utf8(pick(WORDS)));
      else if (k < 0.75) bytes.push(...pick(INVALID));
      else if (k < 0.85) bytes.push(0);
      else if (k < 0.9) bytes.push(...utf8(String(int(1000))));
      else bytes.push(int(256));
    }
    return bytes;
  };
  const lines = 1 + int(14);
  for (let i = 0; i < lines; i++) {
    const k = rng();
    if (k < 0.2) {
      // A blank line: dispatch.
    } else if (k < 0.27) {
      out.push(0x3a, ...value('comment')); // ':' comment
    } else {
      const field = chance(0.95) ? pick(FIELDS) : pick(WORDS);
      out.push(...utf8(field));
      const sep = rng();
      if (sep < 0.5) out.push(0x3a, 0x20);
      else if (sep < 0.75) out.push(0x3a);
      else if (sep < 0.85) out.push(0x3a, 0x20, 0x20);
      // else: a field with no colon, whose value is empty
      if (sep < 0.85) out.push(...value(field));
    }
    // Most lines end; the last one sometimes does not, and an event is often left unfinished.
    if (i < lines - 1 || chance(0.7)) out.push(...pick(EOLS));
    if (chance(0.25)) out.push(...pick(EOLS));
  }
  return out;
}

/** A random split of `bytes` into pieces (some empty), each a fresh Uint8Array. */
function split(rng, bytes) {
  const { int, chance } = tools(rng);
  const cuts = [];
  const n = chance(0.1) ? 0 : int(Math.min(bytes.length, 12) + 1);
  for (let i = 0; i < n; i++) cuts.push(int(bytes.length + 1));
  cuts.sort((a, b) => a - b);
  const pieces = [];
  let at = 0;
  for (const c of [...cuts, bytes.length]) {
    pieces.push(Uint8Array.from(bytes.slice(at, c)));
    at = c;
  }
  return pieces;
}

/** The three decoders behind one shape: `feed(bytes) -> events`, `finish()`, `state()`. */
function decoders() {
  const napi = new addon.CoreSseDecoder();
  const wasm = new glue.CoreSseDecoder();
  let jsEvents = [];
  const js = new JsSseDecoder((data, event, lastEventId) => jsEvents.push({ event, data, lastEventId }));
  const retry = (r) => (r === undefined || r === null ? null : r);
  return [
    {
      name: 'napi',
      feed: (b) => napi.feed(b).map(({ event, data, lastEventId }) => ({ event, data, lastEventId })),
      finish: () => napi.finish(),
      state: () => ({ lastEventId: napi.lastEventId, retry: retry(napi.retry) }),
    },
    {
      name: 'wasm',
      feed: (b) => {
        const flat = wasm.feed(b);
        const events = [];
        for (let i = 0; i < flat.length; i += 3) events.push({ event: flat[i], data: flat[i + 1], lastEventId: flat[i + 2] });
        return events;
      },
      finish: () => wasm.finish(),
      state: () => ({ lastEventId: wasm.lastEventId, retry: retry(wasm.retry) }),
      free: () => wasm.free(),
    },
    {
      name: 'sse.js',
      feed: (b) => {
        jsEvents = [];
        js.push(b);
        return jsEvents;
      },
      finish: () => js.end(),
      state: () => ({ lastEventId: js.lastEventId, retry: retry(js.retry) }),
    },
  ];
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');

test(`sse: the core (napi, wasm) and sse.js decode ${CASES} random split streams alike (base seed ${BASE})`, () => {
  console.log(`sse differential: base seed ${BASE} (PROP_SEED=${BASE} replays this run)`);
  let events = 0;
  let retries = 0;
  let ids = 0;
  for (let c = 0; c < CASES; c++) {
    const seed = (BASE + c) >>> 0;
    const rng = mulberry32(seed);
    const impls = decoders();
    // One to three streams on the same decoders, each ended (or not, for the last) like a reconnect.
    const streams = 1 + Math.floor(rng() * 3);
    const log = [];
    for (let s = 0; s < streams; s++) {
      const pieces = split(rng, genStream(rng));
      const ends = s < streams - 1 || rng() < 0.5;
      const steps = [...pieces.map((p) => ({ piece: p })), ...(ends ? [{ finish: true }] : [])];
      for (const step of steps) {
        log.push(step.finish ? 'finish' : `[${hex(step.piece)}]`);
        const got = impls.map((d) => {
          const out = step.finish ? (d.finish(), []) : d.feed(step.piece);
          return { out, ...d.state() };
        });
        const where = () =>
          `seed ${seed} (rerun: PROP_SEED=${seed} PROP_CASES=1), after ${log.length} steps:\n  ${log.join('\n  ')}\n` +
          impls.map((d, i) => `${d.name}: ${JSON.stringify(got[i])}`).join('\n');
        // Events, lastEventId and retry as one string per decoder (retry printed with String, as
        // JSON would print Infinity as null).
        const states = got.map((g) => `${JSON.stringify([g.out, g.lastEventId])} retry ${String(g.retry)}`);
        for (let i = 1; i < impls.length; i++) {
          if (states[i] !== states[0]) assert.equal(states[i], states[0], `${impls[i].name} differs from ${impls[0].name}: ${where()}`);
        }
        events += got[0].out.length;
      }
    }
    const end = impls[0].state();
    if (end.retry !== null) retries += 1;
    if (end.lastEventId !== '') ids += 1;
    impls[1].free();
  }
  console.log(`sse differential: ${CASES} cases, ${events} events, ${ids} ending with an id, ${retries} with a retry`);
  // The generator must reach the interesting states, not just agree on empty output.
  assert.ok(events > CASES, `only ${events} events in ${CASES} cases`);
  assert.ok(ids > CASES / 10, `only ${ids} cases kept an id`);
  assert.ok(retries > CASES / 10, `only ${retries} cases set a retry`);
});
