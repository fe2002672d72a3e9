// Differential property test of the relay conform pass: thousands of seeded random sessions,
// plausible and hostile, are fed to StreamRelayConform over the Node addon, over the wasm build,
// and to the plain-JavaScript model written from docs/contract.md §3 (model.mjs). Every call must give
// the same frames (an accepted frame is the very object fed in; synthesized frames are equal key
// for key, -0 and NaN included) and the same violation reasons, reported during the same call.
//
//   PROP_SEED=<n>  base seed (default 20261129)     PROP_CASES=<n>  sessions (default 4000)
// A failure prints the session's own seed and the session; rerun it with PROP_SEED=<that seed>
// PROP_CASES=1.

import test from 'node:test';
import assert from 'node:assert/strict';
import { ModelConform } from './model.mjs';
import { mulberry32, genSession, canon, showSession } from './gen.mjs';
import { loadBackendApi } from './backends.mjs';

const BASE = Number(process.env.PROP_SEED ?? 20261129) >>> 0;
const CASES = Number(process.env.PROP_CASES ?? 4000);

const napi = await loadBackendApi('napi');
const wasm = await loadBackendApi('wasm');

const impls = [
  { name: 'model', make: (id, from, cb) => new ModelConform(id, from, cb) },
  { name: 'napi', make: (id, from, cb) => new napi.StreamRelayConform(id, from, cb) },
  { name: 'wasm', make: (id, from, cb) => new wasm.StreamRelayConform(id, from, cb) },
];

function run(impl, session) {
  let reasons = [];
  const conform = impl.make(session.streamId, session.from, (reason) => reasons.push(reason));
  return session.calls.map((call) => {
    reasons = [];
    let out;
    if ('feed' in call) out = conform.feed(call.feed);
    else if (call.end) out = conform.end();
    else out = conform.fail();
    return { out, reasons };
  });
}

function compare(session, results, seed) {
  const [ref, ...others] = results;
  for (const other of others) {
    for (let i = 0; i < session.calls.length; i++) {
      const call = session.calls[i];
      const a = ref.runs[i];
      const b = other.runs[i];
      const where = () =>
        `seed ${seed} (rerun: PROP_SEED=${seed} PROP_CASES=1), call ${i} (${canon(call)}): ` +
        `${ref.name} gave ${canon(a.out)} / ${canon(a.reasons)}, ${other.name} gave ${canon(b.out)} / ${canon(b.reasons)}\n` +
        `session: ${showSession(session)}`;
      assert.ok(Array.isArray(b.out), where());
      assert.equal(b.out.length, a.out.length, where());
      for (let k = 0; k < a.out.length; k++) {
        const fed = 'feed' in call ? call.feed : undefined;
        const refIsFed = fed !== undefined && a.out[k] === fed;
        assert.equal(b.out[k] === fed && fed !== undefined, refIsFed, `identity of frame ${k}: ${where()}`);
        if (!refIsFed) assert.equal(canon(b.out[k]), canon(a.out[k]), where());
      }
      assert.deepEqual(b.reasons, a.reasons, where());
    }
  }
}

test(`conform: napi, wasm and the contract's model agree on ${CASES} random sessions (base seed ${BASE})`, () => {
  let frames = 0;
  let violations = 0;
  let passed = 0;
  for (let i = 0; i < CASES; i++) {
    const seed = (BASE + i) >>> 0;
    const session = genSession(mulberry32(seed));
    const results = impls.map((impl) => ({ name: impl.name, runs: run(impl, session) }));
    compare(session, results, seed);
    frames += session.calls.length;
    results[0].runs.forEach((r, k) => {
      violations += r.reasons.length;
      const call = session.calls[k];
      if ('feed' in call && r.out.includes(call.feed)) passed += 1;
    });
  }
  // The generator must exercise both sides of the rules, not only one.
  assert.ok(violations > CASES / 10, `only ${violations} violations in ${CASES} sessions`);
  assert.ok(passed > frames / 10, `only ${passed} frames passed out of ${frames} calls`);
});

test('conform: the three agree on the vectors\' hand-picked hostile frames too', () => {
  const hostile = [
    { type: 'chunk', from: 0, seq: 1, text: '\ud800' },
    { type: 'chunk', from: 0, seq: 2 ** 53, text: 'x' },
    { type: 'chunk', from: 2 ** 53, seq: 2 ** 53 + 1, text: 'x' },
    { type: 'chunk', from: 1e21, seq: 1e21, text: '' },
    { type: 'end', seq: 1e21 },
    { type: 'end', seq: -0 },
    { type: 'open', streamId: 's\ud800', from: 0, seq: 0, durableSeq: 0 },
    { type: 'open', streamId: 's', from: 0.5, seq: 1, durableSeq: 0 },
    { type: 'durable', seq: 1e300 },
    Object.create(null),
    { type: { toString() { return 'chunk'; } } },
  ];
  for (let i = 0; i < hostile.length; i++) {
    for (const from of [0, 3, NaN, 1e21, -1]) {
      const session = { streamId: 's', from, produced: '', calls: [{ feed: hostile[i] }, { feed: { type: 'chunk', from: 0, seq: 1, text: 'a' } }, { end: true }] };
      compare(session, impls.map((impl) => ({ name: impl.name, runs: run(impl, session) })), `hostile#${i}/from=${from}`);
    }
  }
});
