// The shared vectors (tests/vectors) replayed through `twoplane/wasm` in Node: every case must
// pass. One test per vector file, one subtest per case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as api from 'twoplane/wasm';
import { replayVectors, VECTOR_FILES } from './lib/replay.mjs';
import { REPO } from './lib/server.mjs';

const files = {};
for (const name of VECTOR_FILES) files[name] = JSON.parse(readFileSync(path.join(REPO, 'tests/vectors', `${name}.json`), 'utf8'));
const results = replayVectors(api, files);

test('the vectors cover every file', () => {
  assert.equal(api.default.backend, 'wasm');
  for (const name of VECTOR_FILES) assert.ok(results.some((r) => r.file === name), `no case replayed from ${name}.json`);
});

for (const name of VECTOR_FILES) {
  test(`vectors: ${name}.json through the wasm build in Node`, async (t) => {
    for (const r of results.filter((x) => x.file === name)) {
      await t.test(r.name, () => assert.ok(r.ok, r.detail ?? ''));
    }
  });
}
