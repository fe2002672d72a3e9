// Differential property test of the client reader (docs/contract.md §4): seeded random frame
// sequences (replays, overlaps reaching into the durable text, gaps, another stream's tails,
// opens for other streams, terminals with frames after them, non-frames and hostile fields) go
// to the package's StreamReader over the Node addon, over the wasm build, and to the
// plain-JavaScript model written from the contract (reader-model.mjs). After every frame all
// three must give the same verdict (`push`'s answer and `stopped`), the same change (`onUpdate`'s
// cut and appended text), the same length and resume point; the accumulated text is compared at
// random steps (reading `.text` joins the reader's pieces, so it is not read after every frame,
// or the piece-cutting paths would never be reached) and at the end, with `rendered` for this
// stream and another.
//
//   PROP_SEED=<n>  base seed (default: a fresh one, printed)   PROP_CASES=<n>  sessions (default 3000)
// A failure names the session's own seed; rerun it with PROP_SEED=<that seed> PROP_CASES=1.

import test from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32, tools, genReaderSession, canon } from './gen.mjs';
import { ModelReader } from './reader-model.mjs';
import { loadBackendApi } from './backends.mjs';

const BASE = Number(process.env.PROP_SEED ?? Math.floor(Math.random() * 2 ** 32)) >>> 0;
const CASES = Number(process.env.PROP_CASES ?? 3000);

const napi = await loadBackendApi('napi');
const wasm = await loadBackendApi('wasm');

/** A reader of `api` joined to `streamId` with `durable`, recording the last change it reported. */
function facadeReader(name, api, streamId, durable) {
  const r = { name, update: null };
  r.reader = new api.StreamReader({
    streamId,
    durableText: durable,
    onUpdate: (u) => {
      assert.equal(r.update, null, `${name} reported two changes for one frame`);
      r.update = { cut: u.cut, appended: u.appended };
    },
  });
  return {
    name,
    push(frame) {
      r.update = null;
      return r.reader.push(frame);
    },
    get update() {
      return r.update;
    },
    get stopped() {
      return r.reader.stopped;
    },
    get length() {
      return r.reader.length;
    },
    get resumeFrom() {
      return r.reader.resumeFrom;
    },
    get text() {
      return r.reader.text;
    },
    rendered: (d, id) => r.reader.rendered(d, id),
  };
}

function modelReader(streamId, durable) {
  const m = new ModelReader(streamId, durable);
  return {
    name: 'model',
    push: (frame) => m.push(frame),
    get update() {
      return m.update;
    },
    get stopped() {
      return m.stopped;
    },
    get length() {
      return m.text.length;
    },
    get resumeFrom() {
      return m.resumeFrom;
    },
    get text() {
      return m.text;
    },
    rendered: (d, id) => m.rendered(d, id),
  };
}

test(`reader: napi, wasm and the contract's model agree on ${CASES} random sessions (base seed ${BASE})`, () => {
  console.log(`reader differential: base seed ${BASE} (PROP_SEED=${BASE} replays this run)`);
  const seen = { splice: 0, cutBack: 0, cutIntoDurable: 0, ignored: 0 };
  const reasons = new Map();
  for (let c = 0; c < CASES; c++) {
    const seed = (BASE + c) >>> 0;
    const rng = mulberry32(seed);
    const { int, chance } = tools(rng);
    const session = genReaderSession(rng);
    const { streamId, durable, produced, frames } = session;
    const impls = [
      modelReader(streamId, durable),
      facadeReader('napi', napi, streamId, durable),
      facadeReader('wasm', wasm, streamId, durable),
    ];
    const where = (i, what) =>
      `${what}: seed ${seed} (rerun: PROP_SEED=${seed} PROP_CASES=1), frame ${i}\n` +
      `streamId ${canon(streamId)}, durable ${canon(durable)}\nframes: ${frames.map(canon).join('\n  ')}`;
    for (let i = 0; i < frames.length; i++) {
      const lenBefore = impls[0].length;
      const live = impls.map((r) => r.push(frames[i]));
      const readText = chance(0.3) || i === frames.length - 1;
      // Everything observable after this frame, as one canonical string per reader.
      const states = impls.map((r, k) =>
        canon({ live: live[k], stopped: r.stopped, update: r.update, length: r.length, resumeFrom: r.resumeFrom, text: readText ? r.text : null }),
      );
      for (let k = 1; k < impls.length; k++) {
        if (states[k] !== states[0]) assert.equal(states[k], states[0], `${where(i, `${impls[k].name} differs from the model`)}`);
      }
      const ref = impls[0];
      const u = ref.update;
      if (u !== null) {
        seen.splice += 1;
        if (u.cut < lenBefore) seen.cutBack += 1;
        if (u.cut < durable.length) seen.cutIntoDurable += 1;
      } else if (live[0]) {
        seen.ignored += 1;
      }
    }
    const stopped = impls[0].stopped;
    reasons.set(stopped, (reasons.get(stopped) ?? 0) + 1);
    // What a UI renders, for this stream and another, against durable texts shorter and longer.
    const durables = ['', durable, produced, produced.slice(0, int(produced.length + 1)), produced + 'tail'];
    for (const d of durables) {
      for (const id of [streamId, `${streamId}-other`]) {
        const want = canon(impls[0].rendered(d, id));
        for (const other of impls.slice(1)) {
          const got = canon(other.rendered(d, id));
          if (got !== want) assert.equal(got, want, where(frames.length, `rendered(${canon(d)}, ${canon(id)}) differs for ${other.name}`));
        }
      }
    }
  }
  const stops = Object.fromEntries([...reasons].map(([k, v]) => [String(k), v]));
  console.log(`reader differential: ${CASES} sessions; ${canon(seen)}; final states ${canon(stops)}`);
  // The generator must reach every branch of the rules, not only agree on easy ones.
  assert.ok(seen.cutBack > CASES / 10, `only ${seen.cutBack} splices cut back into the text`);
  assert.ok(seen.cutIntoDurable > CASES / 50, `only ${seen.cutIntoDurable} splices cut into the durable text`);
  for (const reason of [null, 'end', 'stale', 'absent', 'gap', 'foreign_stream', 'malformed']) {
    assert.ok((reasons.get(reason) ?? 0) > CASES / 100, `only ${reasons.get(reason) ?? 0} sessions ended in ${reason}`);
  }
});
