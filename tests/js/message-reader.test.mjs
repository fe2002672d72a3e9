// StreamReader reading a message made of parts (docs/contract.md §8) over the build named by
// BACKEND: the scenario of tests/browser/lib/message-scenario.mjs (the same module runs in
// Chromium over the wasm build), and what `onUpdate` reports.

import test from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, loadBackendApi } from './backends.mjs';
import { runMessageScenario, scenarioLog, STREAM_ID } from '../browser/lib/message-scenario.mjs';

const api = await loadBackendApi();
const tag = `[${BACKEND}]`;

test(`${tag} the scenario: reasoning, a tool call, texts, data and a transient part, cut and resumed`, async (t) => {
  const results = await runMessageScenario(api);
  assert.ok(results.length >= 6);
  for (const r of results) await t.test(r.name, () => assert.ok(r.ok, r.detail ?? ''));
});

test(`${tag} onUpdate: a splice keeps today's fields, every other change names its action, part and frame`, () => {
  const { log } = scenarioLog();
  const updates = [];
  const reader = new api.StreamReader({ streamId: STREAM_ID, onUpdate: (u) => updates.push({ ...u, text: u.text }) });
  for (const f of log.slice(0, 4)) reader.push(f);
  const transient = log.find((f) => f.type === 'transient');
  const meta = log.find((f) => f.type === 'meta');
  const pos = reader.resumeFrom;
  assert.equal(pos, 27);
  reader.push({ ...transient, from: 27, seq: 28 });
  reader.push({ ...meta, from: 28, seq: 29 });
  reader.push({ type: 'part-end', from: 29, seq: 30, part: 1, value: { signature: 's' } });
  assert.deepEqual(updates, [
    { action: 'start', part: 1, frame: log[0], text: undefined },
    { action: 'splice', part: 1, cut: 0, appended: 'Let me ', text: 'Let me ' },
    { action: 'splice', part: 1, cut: 7, appended: 'look up ', text: 'Let me look up ' },
    { action: 'splice', part: 1, cut: 15, appended: 'the weather', text: 'Let me look up the weather' },
    { action: 'transient', frame: { ...transient, from: 27, seq: 28 }, text: undefined },
    { action: 'meta', frame: { ...meta, from: 28, seq: 29 }, text: undefined },
    { action: 'end', part: 1, frame: { type: 'part-end', from: 29, seq: 30, part: 1, value: { signature: 's' } }, text: undefined },
  ]);
  assert.deepEqual(reader.message, {
    parts: [{ type: 'reasoning', text: 'Let me look up the weather', signature: 's' }],
    metadata: { model: 'm-1' },
  });
  assert.equal(reader.text, '', 'part 0 is untouched');
  assert.deepEqual(reader.parts[0], { type: 'text', text: '' });

  // A stream of today's frames: part 0 only, the updates of the text reader plus action and part.
  const plain = [];
  const text = new api.StreamReader({ streamId: 's', durableText: 'ab', onUpdate: (u) => plain.push({ ...u, text: u.text }) });
  text.push({ type: 'chunk', from: 1, seq: 4, text: 'Bcd' });
  assert.deepEqual(plain, [{ action: 'splice', part: 0, cut: 1, appended: 'Bcd', text: 'aBcd' }]);
  assert.deepEqual(text.message, { parts: [{ type: 'text', text: 'aBcd' }] });
  assert.equal(new api.StreamReader({ streamId: 's' }).message.parts.length, 0, 'an empty part 0 is not listed');
});

test(`${tag} the message handed out is a snapshot: a change makes a new object and leaves the old one`, () => {
  const reader = new api.StreamReader({ streamId: 's' });
  reader.push({ type: 'part', from: 0, seq: 1, part: 1, kind: 'data-x', value: { data: { n: 1 } } });
  const before = reader.message;
  assert.equal(reader.message, before, 'the same object while nothing changes');
  const firstPart = before.parts[0];
  reader.push({ type: 'set', from: 1, seq: 2, part: 1, value: { data: { n: 2 } } });
  reader.push({ type: 'meta', from: 2, seq: 3, value: { a: 1 } });
  assert.notEqual(reader.message, before);
  assert.deepEqual(before, { parts: [{ type: 'data-x', data: { n: 1 } }] }, 'the old snapshot is unchanged');
  assert.equal(firstPart.data.n, 1);
  assert.deepEqual(reader.message, { parts: [{ type: 'data-x', data: { n: 2 } }], metadata: { a: 1 } });
  // Unchanged parts keep their objects between snapshots.
  const parts = reader.parts;
  reader.push({ type: 'part', from: 3, seq: 4, part: 2, kind: 'text' });
  assert.equal(reader.parts[1], parts[1]);
});
