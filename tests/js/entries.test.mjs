// The Node entries of the npm package: the default entry routes per operation and falls back to
// the wasm build when no addon loads; `twoplane/node` refuses to load without the addon; every
// entry exposes the same names (but for the UI mapping, see UI_NAMES), as static exports written
// by scripts/gen-npm-entries.mjs from the namespace each builds. Independent of BACKEND (it checks
// the entries themselves).

import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const pkgDir = fileURLToPath(new URL('../../npm/twoplane/', import.meta.url));
const entry = (p) => `${pkgDir}${p}`;

function runModule(code, env = {}) {
  return spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', env: { ...process.env, ...env } });
}

// The UI message stream mapping (uiIngest, uiResume) is in the entries whose build holds the
// core's JSON codec: `twoplane/node` and `twoplane/wasm-full`; the shipped wasm module leaves it
// out for size, and so does the default entry, which may fall back to that module.
const UI_NAMES = ['uiIngest', 'uiResume'];

test('every entry exposes the same public names, and the UI mapping where its build has it', async () => {
  const routed = await import(entry('src/index.node.js'));
  const napi = await import(entry('src/node.js'));
  const wasm = await import(entry('src/wasm.js'));
  const full = await import(entry('src/wasm-full.js'));
  const names = (m) => Object.keys(m.default).sort();
  assert.deepEqual(names(napi), [...names(wasm), ...UI_NAMES].sort());
  assert.deepEqual(names(full), names(napi));
  assert.deepEqual(names(routed), names(wasm));
  for (const name of UI_NAMES) {
    assert.equal(typeof napi[name], 'function', `twoplane/node exports ${name}`);
    assert.equal(typeof full[name], 'function', `twoplane/wasm-full exports ${name}`);
  }
  assert.equal(napi.default.backend, 'napi');
  assert.equal(wasm.default.backend, 'wasm');
});

// What each entry exports besides its namespace's names (`backend` there is the backend object,
// where the namespace's `backend` is the build's name).
const EXTRAS = {
  'src/index.node.js': ['ROUTES', 'SSE_BATCH_MIN', 'addonError', 'backend', 'buildApi', 'default', 'routesInUse'],
  'src/node.js': ['addonFile', 'backend', 'buildApi', 'default'],
  'src/wasm.js': ['backend', 'buildApi', 'default'],
  'src/wasm-full.js': ['backend', 'buildApi', 'default'],
};

test('each entry exports by name exactly the names of its namespace, each the namespace\'s own value', async () => {
  for (const [file, extras] of Object.entries(EXTRAS)) {
    const m = await import(entry(file));
    const own = Object.keys(m.default).filter((name) => name !== 'backend').sort();
    assert.deepEqual(Object.keys(m).filter((name) => !extras.includes(name)).sort(), own, file);
    for (const name of own) assert.equal(m[name], m.default[name], `${file}: ${name}`);
  }
});

test('the entries\' lists of public names are the ones scripts/gen-npm-entries.mjs writes', () => {
  const r = spawnSync(process.execPath, [fileURLToPath(new URL('../../scripts/gen-npm-entries.mjs', import.meta.url)), '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /entries: current/);
});

test('the default Node entry routes each operation as ROUTES says, and uses the addon', async () => {
  const routed = await import(entry('src/index.node.js'));
  assert.equal(routed.backend.name, 'napi');
  assert.equal(routed.addonError, null);
  for (const [member, from] of Object.entries(routed.ROUTES)) {
    assert.equal(routed.routesInUse[member], from, member);
  }
  // The routed members really are the chosen builds' own.
  const napi = await import(entry('src/node.js'));
  const wasm = await import(entry('src/wasm.js'));
  for (const member of ['splicePoint', 'streamChunkId', 'streamChunkTableDdl', 'streamRequestFromHttp', 'assemblyOrder']) {
    const want = routed.ROUTES[member] === 'wasm' ? wasm.backend[member] : undefined;
    if (want !== undefined) assert.equal(routed.backend[member], want, member);
  }
  assert.equal(routed.backend.Conform, routed.ROUTES.Conform === 'wasm' ? wasm.backend.Conform : routed.backend.Conform);
  assert.notEqual(napi.backend.Conform, wasm.backend.Conform);
});

test('without an addon for the platform, the default entry falls back to the wasm build', () => {
  const r = runModule(`
    const m = await import(${JSON.stringify(entry('src/index.node.js'))});
    const c = new m.StreamRelayConform('s', 0);
    const out = c.feed({ type: 'chunk', from: 0, seq: 1, text: '\\ud800' });
    console.log(JSON.stringify({ backend: m.backend.name, kind: m.addonError?.kind, routes: m.routesInUse, n: out.length,
      sse: m.encodeSseEvents(out), ddl: m.streamChunkTableDdl({ message: 'm', chunks: 'c' }, 'postgres').length }));
  `, { TWOPLANE_NODE_ADDON: '/nonexistent/twoplane.node' });
  assert.equal(r.status, 0, r.stderr);
  const got = JSON.parse(r.stdout);
  assert.equal(got.backend, 'wasm');
  assert.equal(got.kind, 'invalid_state');
  assert.ok(Object.entries(got.routes).every(([k, v]) => v === (k === 'encodeSseEvents' ? 'javascript' : 'wasm')), JSON.stringify(got.routes));
  assert.equal(got.n, 2);
  assert.match(got.sse, /^id: 0\ndata: \{"type":"open"/);
  assert.equal(got.ddl, 2);
});

test('twoplane/node refuses to load without the addon, with a kind', () => {
  const r = runModule(`
    try { await import(${JSON.stringify(entry('src/node.js'))}); console.log('loaded'); }
    catch (err) { console.log(JSON.stringify({ name: err.name, kind: err.kind })); }
  `, { TWOPLANE_NODE_ADDON: '/nonexistent/twoplane.node' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { name: 'TwoplaneError', kind: 'invalid_state' });
});

test('package.json maps the Node entries and their types to files that exist', () => {
  const pkg = JSON.parse(readFileSync(entry('package.json'), 'utf8'));
  assert.deepEqual(pkg.exports['.'].node, { types: './src/index.node.d.ts', default: './src/index.node.js' });
  assert.deepEqual(pkg.exports['./node'], { types: './src/node.d.ts', default: './src/node.js' });
  assert.ok(pkg.files.includes('native/*.node'), 'the addon ships in the package');
  for (const file of ['src/index.node.js', 'src/node.js', 'src/backend-napi.js', 'src/index.node.d.ts', 'src/node.d.ts', 'src/backend-napi.d.ts']) {
    assert.ok(existsSync(entry(file)), file);
  }
});
