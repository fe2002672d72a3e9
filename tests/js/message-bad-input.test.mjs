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
  // A value whose member cannot be read: refused before anything is decided.
  { type: 'set', from: 1, seq: 2, part: 1, value: { get state() { throw new Error('getter'); } } },
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

/** The kind of the TwoplaneError `fn` throws, or null when it throws nothing. */
function kindOf(fn) {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof api.TwoplaneError, String(err));
    return err.kind;
  }
  return null;
}

/** `v[key]`, or undefined when there is no such field or reading it throws. */
function peek(v, key) {
  try {
    return v?.[key];
  } catch {
    return undefined;
  }
}

const codec = { skip: hasMessageCodec(api) ? false : 'this build has no message codec (the shipped wasm build)' };

test(`${tag} MessageReader and StreamReader: a hostile frame stops them as malformed or is ignored; what they hold stays whole`, () => {
  const durable = api.assembleDurableMessage({ seq: 0 }, [{ seq: 1, text: '', parts: '[{"type":"part","from":0,"seq":1,"part":1,"kind":"reasoning"}]' }]);
  const readers = [
    () => new api.MessageReader({ streamId: 's', durable }),
    () => new api.StreamReader({ streamId: 's', durable }),
  ];
  hostile.forEach((frame, i) => {
    for (const make of readers) {
      const reader = make();
      const live = reader.push(frame);
      assert.equal(live, reader.stopped === null, `hostile value ${i}`);
      // Malformed, a broken part rule or another stream's open. Two are taken: an `open` of this
      // stream (whose part table the reader does not read) is ignored, and a delta naming part
      // -0 is part 0 (-0 is an integer, as Number.isInteger says), which it continues.
      if (Object.is(peek(frame, 'part'), -0)) {
        assert.equal(live, true);
        assert.equal(reader.parts[0].text, 'a');
        continue;
      }
      if (!live) assert.ok(['malformed', 'gap', 'foreign_stream'].includes(reader.stopped), `hostile value ${i}: ${reader.stopped}`);
      else assert.equal(peek(frame, 'type'), 'open', `hostile value ${i} was taken`);
      assert.deepEqual(reader.message, durable.message, `hostile value ${i}: the message held is the durable one`);
      assert.equal(reader.resumeFrom, durable.len, `hostile value ${i}`);
      assert.equal(reader.push({ type: 'chunk', from: 1, seq: 2, text: 'a', part: 1, at: 0 }), live, 'nothing after a stop');
    }
  });
});

test(`${tag} assembly refuses with a kind`, () => {
  const part = '{"type":"part","from":0,"seq":1,"part":1,"kind":"reasoning"}';
  const rows = (...parts) => parts.map((p, i) => ({ seq: i + 1, text: '', parts: p }));
  const assemble = (...parts) => kindOf(() => api.assembleDurableMessage({}, rows(...parts)));
  assert.equal(kindOf(() => api.assembleDurableMessage({ seq: 0.5 }, [])), 'invalid_offset');
  assert.equal(kindOf(() => api.assembleDurableMessage({}, [{ seq: -1, text: 'a' }])), 'invalid_offset');
  assert.equal(kindOf(() => api.assembleDurableMessage({}, [{ seq: 1, parts: '[' }])), 'invalid_json');
  assert.equal(assemble(`[${part.replace('"reasoning"', '"\\ud800"')}]`), null, 'an escaped lone surrogate is JSON');
  assert.equal(assemble(`[${part.replace('reasoning', '\ud800')}]`), 'invalid_json', 'a raw one is not');
  assert.equal(assemble(`${'['.repeat(128)}${']'.repeat(128)}`), 'invalid_json', 'nested arrays are no frames');
  assert.equal(assemble(`[${'['.repeat(127)}${']'.repeat(127)}]`), 'invalid_json', 'a frame that is an array');
  assert.equal(assemble(`[{"type":"meta","from":0,"seq":1,"value":{"a":${'['.repeat(125)}${']'.repeat(125)}}}]`), null, '128 levels are JSON');
  assert.equal(assemble(`[{"type":"meta","from":0,"seq":1,"value":{"a":${'['.repeat(126)}${']'.repeat(126)}}}]`), 'invalid_json', '129 are too deep');
  assert.equal(assemble('{}'), 'invalid_field');
  assert.equal(assemble('[{"type":"absent"}]'), 'invalid_argument');
  assert.equal(assemble('[{"type":"step"}]'), 'unknown_frame_type');
  assert.equal(assemble('[{"type":"meta","from":0,"seq":2}]'), 'invalid_offset');
  assert.equal(assemble('[{"type":"chunk","from":0,"seq":2,"text":"a"}]'), 'chunk_span');
  assert.equal(assemble('[{"type":"chunk","from":0,"seq":1,"text":"a","part":1}]'), 'missing_field');
  assert.equal(assemble(`[${part}]`, '[{"type":"set","from":1,"seq":2,"part":1,"value":{"text":1}}]'), 'invalid_field');
  assert.equal(assemble(`[${part}]`, '[{"type":"part-end","from":1,"seq":2,"part":1,"value":null}]'), 'invalid_field');
  assert.equal(assemble(`[${part}]`, '[{"type":"finish","from":1,"seq":2}]'), 'missing_field');
  assert.equal(assemble(`[${part}]`, '[{"type":"end","seq":1,"status":"bogus"}]'), 'invalid_status');
  // A row is decoded whole before any of it applies: a field missing later wins over a rule
  // broken earlier.
  assert.equal(assemble('[{"type":"set","from":0,"seq":1,"part":4},{"type":"finish","from":1,"seq":2}]'), 'missing_field');
  assert.equal(assemble('[{"type":"set","from":0,"seq":1,"part":4}]'), 'invalid_field');
  // A text row after structure is no longer part 0 at its `from`.
  assert.equal(kindOf(() => api.assembleDurableMessage({}, [...rows(`[${part}]`), { seq: 5, text: 'x', parts: null }])), 'invalid_field');
  // Documents.
  const doc = (document, seq = 9) => kindOf(() => api.assembleDurableMessage({ document, seq }, []));
  assert.equal(doc('{"parts":[]}'), null);
  for (const bad of ['[]', '{"parts":{}}', '{"parts":[1]}', '{"parts":[{"type":"text","text":1}]}', '{"parts":[],"metadata":[]}', '{"parts":[],"finishReason":null}']) {
    assert.equal(doc(bad), 'invalid_field', bad);
  }
  assert.equal(doc('{}'), 'missing_field');
  assert.equal(doc('{"parts":['), 'invalid_json');
  assert.equal(doc('{"parts":[{"type":"text","text":"abc"}]}', 2), 'invalid_offset');
  // A member named like the other body key is an attribute; `__proto__` stays a plain member.
  const odd = api.assembleDurableMessage({ document: '{"parts":[{"type":"tool-x","text":"t","inputText":"i","__proto__":{"a":1}}]}', seq: 3 }, []);
  assert.equal(odd.document, '{"parts":[{"type":"tool-x","inputText":"i","text":"t","__proto__":{"a":1}}]}');
  assert.equal(Object.getPrototypeOf(odd.message.parts[0]), Object.prototype);
  assert.equal(kindOf(() => new api.MessageReader({ streamId: 's', durable: {} })), 'invalid_argument');
  assert.equal(kindOf(() => new api.StreamReader({ streamId: 's', durable: {} })), 'invalid_argument');
  assert.equal(kindOf(() => new api.StreamReader({ streamId: 's', durable: odd, durableText: '' })), 'invalid_argument');
  assert.equal(kindOf(() => new api.DurableMessage(undefined, undefined)), 'invalid_argument');
});

test(`${tag} the codec refuses with a kind`, codec, () => {
  assert.equal(kindOf(() => api.decodeMessageFrame('{"type":"chunk","from":0,"seq":1,"text":"\ud800"')), 'invalid_json');
  assert.equal(kindOf(() => api.decodeMessageFrame('{"type":"chunk","from":0,"seq":1,"text":"\ud800"}')), 'invalid_json');
  assert.equal(kindOf(() => api.decodeMessageFrame(3)), 'invalid_json');
  assert.equal(kindOf(() => api.encodeMessageFrame({ type: 'chunk', from: 0, seq: 1, text: 'a', big: 1n })), 'invalid_json');
  assert.equal(kindOf(() => api.encodeMessageFrame({ type: 'step' })), 'unknown_frame_type');
  assert.equal(kindOf(() => api.messageResumePoint(undefined)), 'invalid_json');
  // A lone surrogate escaped by JSON.stringify survives the codec both ways.
  const frame = { type: 'chunk', from: 0, seq: 1, text: '\ud800', part: 2, at: 0 };
  assert.equal(api.encodeMessageFrame(frame), JSON.stringify(frame));
  assert.deepEqual(api.decodeMessageFrame(JSON.stringify(frame)), frame);
});
