// Bad input to the message API (docs/contract.md §8), against the build named by BACKEND: hostile
// frames through MessageRelayConform and MessageReader never throw and end in a legal state (one
// `stale`, a stopped reader that resumes from what it holds), and the codec and assembly refuse
// what they cannot read with a TwoplaneError of a stable `.kind`.

import test from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, loadBackendApi } from './backends.mjs';
import { HOSTILE_VALUES, NON_FRAMES } from './gen.mjs';
import { hasMessageCodec } from '../browser/lib/replay.mjs';

const api = await loadBackendApi();
const tag = `[${BACKEND}]`;

const hostile = [
  ...NON_FRAMES,
  new Proxy({}, { get() { throw new Error('trap'); } }),
  { get type() { throw new Error('getter'); } },
  Object.create(null),
  { type: 'chunk', from: 1, seq: 2, text: 'a', part: 1n, at: 0 },
  { type: 'part-end', from: 1, seq: 2, part: 0, value: 'not an object' },
  { type: 'set', from: 1, seq: 2, part: 9 },
  { type: 'part', from: 1, seq: 2, part: 1, kind: 'text' },
  { type: 'open', streamId: 's', from: 0, seq: 0, durableSeq: 0, ended: false, parts: 'x' },
  ...HOSTILE_VALUES.map((v) => ({ type: 'chunk', from: 1, seq: 2, text: 'a', part: v, at: 0 })),
  ...HOSTILE_VALUES.map((v) => ({ type: 'meta', from: v, seq: 2 })),
];

test(`${tag} MessageRelayConform: any value gives frames or one stale, never a throw`, () => {
  hostile.forEach((frame, i) => {
    const pass = new api.MessageRelayConform('s', 0, () => {});
    // A part 1 is known, so each hostile value meets a pass that has something to lose.
    pass.feed({ type: 'part', from: 0, seq: 1, part: 1, kind: 'reasoning' });
    const out = pass.feed(frame);
    assert.ok(Array.isArray(out), `hostile value ${i}`);
    if (out.length === 1 && out[0].type === 'stale') {
      assert.deepEqual(pass.feed({ type: 'chunk', from: 1, seq: 2, text: 'a', part: 1, at: 0 }), [], `hostile value ${i}`);
    }
  });
});

const text = { skip: hasMessageCodec(api) ? false : 'this build has no message codec (the shipped wasm build)' };

test(`${tag} MessageReader: a hostile frame stops it as malformed or is ignored; what it holds stays whole`, text, () => {
  for (const frame of hostile) {
    const durable = api.assembleDurableMessage({ seq: 0 }, [{ seq: 1, text: '', parts: '[{"type":"part","from":0,"seq":1,"part":1,"kind":"reasoning"}]' }]);
    const reader = new api.MessageReader({ streamId: 's', durable });
    const live = reader.push(frame);
    assert.equal(live, reader.stopped === null);
    if (!live) assert.ok(['malformed', 'gap', 'foreign_stream'].includes(reader.stopped), `${reader.stopped}`);
    // Whatever happened, the held message and the resume point agree.
    const held = api.assembleDurableMessage({ seq: 0 }, []);
    assert.ok(reader.resumeFrom >= held.len);
    assert.equal(typeof reader.document, 'string');
  }
});

test(`${tag} the codec and assembly refuse with a kind`, text, () => {
  const kindOf = (fn) => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof api.TwoplaneError, String(err));
      return err.kind;
    }
    return null;
  };
  assert.equal(kindOf(() => api.decodeMessageFrame('{"type":"chunk","from":0,"seq":1,"text":"\ud800"')), 'invalid_json');
  assert.equal(kindOf(() => api.decodeMessageFrame('{"type":"chunk","from":0,"seq":1,"text":"\ud800"}')), 'invalid_json');
  assert.equal(kindOf(() => api.decodeMessageFrame(3)), 'invalid_json');
  assert.equal(kindOf(() => api.encodeMessageFrame({ type: 'chunk', from: 0, seq: 1, text: 'a', big: 1n })), 'invalid_json');
  assert.equal(kindOf(() => api.encodeMessageFrame({ type: 'step' })), 'unknown_frame_type');
  assert.equal(kindOf(() => api.messageResumePoint(undefined)), 'invalid_json');
  assert.equal(kindOf(() => api.assembleDurableMessage({ seq: 0.5 }, [])), 'invalid_offset');
  assert.equal(kindOf(() => api.assembleDurableMessage({}, [{ seq: -1, text: 'a' }])), 'invalid_offset');
  assert.equal(kindOf(() => api.assembleDurableMessage({}, [{ seq: 1, parts: '[' }])), 'invalid_json');
  assert.equal(kindOf(() => new api.MessageReader({ streamId: 's', durable: {} })), 'invalid_argument');
  // A lone surrogate escaped by JSON.stringify survives the codec both ways.
  const frame = { type: 'chunk', from: 0, seq: 1, text: '\ud800', part: 2, at: 0 };
  assert.equal(api.encodeMessageFrame(frame), JSON.stringify(frame));
  assert.deepEqual(api.decodeMessageFrame(JSON.stringify(frame)), frame);
});
