// The shared vectors replayed through the full wasm build (`twoplane/wasm-full`) in Node: every
// file node-vectors.test.mjs replays, here with the message codec the shipped module leaves out,
// and ui.json (the AI SDK's UI message stream) through uiIngest and uiResume. Every case must
// pass. browser-vectors-full.test.mjs runs the same replay in Chromium.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as api from 'twoplane/wasm-full';
import { hasMessageCodec, replayVectors, FULL_VECTOR_FILES } from './lib/replay.mjs';
import { REPO } from './lib/server.mjs';

const files = {};
for (const name of FULL_VECTOR_FILES) files[name] = JSON.parse(readFileSync(path.join(REPO, 'tests/vectors', `${name}.json`), 'utf8'));
const results = replayVectors(api, files);

test('the full build has the codec and the UI calls, and every file replays', () => {
  assert.equal(api.default.backend, 'wasm');
  assert.ok(hasMessageCodec(api), 'the full build must have the message codec');
  assert.equal(typeof api.default.uiIngest, 'function');
  for (const name of FULL_VECTOR_FILES) assert.ok(results.some((r) => r.file === name), `no case replayed from ${name}.json`);
});

for (const name of FULL_VECTOR_FILES) {
  test(`vectors: ${name}.json through the full wasm build in Node`, async (t) => {
    for (const r of results.filter((x) => x.file === name)) {
      await t.test(r.name, () => assert.ok(r.ok, r.detail ?? ''));
    }
  });
}

test('uiIngest / uiResume keep a lone surrogate and refuse bad arguments with a kind', () => {
  const delta = 'a\uD800b\uDC00';
  const chunks = [{ type: 'start' }, { type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta }, { type: 'text-end', id: 't' }, { type: 'finish' }];
  const { frames, aborted } = api.uiIngest('m\uDC00', chunks);
  assert.equal(aborted, false);
  assert.ok(frames.some((f) => f.text === delta), 'the chunk frame holds the delta unchanged');
  const back = api.uiResume('m\uDC00', frames, { from: 0 });
  assert.equal(back[0].messageId, 'm\uDC00', 'the stream id crosses as code units');
  assert.ok(back.some((c) => c.type === 'text-delta' && c.delta === delta), JSON.stringify(back));
  const refused = (fn, kind) => assert.throws(fn, (err) => err instanceof api.TwoplaneError && err.kind === kind, kind);
  refused(() => api.uiIngest('m', 'not an array'), 'invalid_argument');
  refused(() => api.uiIngest(7, []), 'invalid_argument');
  refused(() => api.uiResume('m', frames, { status: 1 }), 'invalid_argument');
  refused(() => api.uiResume('m', frames, { error: 1 }), 'invalid_argument');
  refused(() => api.uiResume('m', frames, { from: -1 }), 'invalid_offset');
  refused(() => api.uiResume('m', frames, { from: '1' }), 'invalid_offset');
  refused(() => api.uiResume('m', frames, { status: 'done' }), 'invalid_status');
  refused(() => api.uiResume('m', [{ type: 'nope' }]), 'unknown_frame_type');
});
