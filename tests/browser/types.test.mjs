// The hand-written TypeScript types of every entry, checked by compiling types/usage.ts against
// the installed package with tsc --noEmit (strict).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { BROWSER_DIR } from './lib/server.mjs';

test('tsc --noEmit accepts the usage file', () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', path.join(BROWSER_DIR, 'types/tsconfig.json')], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
