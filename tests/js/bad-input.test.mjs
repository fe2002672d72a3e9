// Bad input from JavaScript, against the build named by BACKEND: wrong types, missing fields,
// frames that are not objects, hostile objects (throwing getters, Proxies), an onViolation that
// throws. Each gives a TwoplaneError with a stable `.kind`, or (in the conform pass) a legal
// `stale`; and a child process hammering the raw builds with garbage must exit normally, since a
// panic crossing Node-API would abort it.

import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BACKEND, loadBackendApi } from './backends.mjs';
import { HOSTILE_VALUES, NON_FRAMES } from './gen.mjs';

const api = await loadBackendApi();
const tag = `[${BACKEND}]`;
const KINDS = new Set(['invalid_json', 'missing_field', 'invalid_field', 'invalid_offset', 'unknown_frame_type', 'chunk_span',
  'invalid_status', 'invalid_identifier', 'invalid_argument', 'invalid_state', 'invalid_url']);

function throwsKind(fn, kind, msg) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof api.TwoplaneError, `${msg}: ${err}`);
    assert.ok(KINDS.has(err.kind), `${msg}: kind ${err.kind}`);
    if (kind !== undefined) assert.equal(err.kind, kind, msg);
    return true;
  }, msg);
}

const hostileFrames = [
  ...NON_FRAMES,
  new Proxy({}, { get() { throw new Error('trap'); } }),
  new Proxy({ type: 'chunk' }, { get(t, k) { if (k === 'type') return 'chunk'; throw new Error('trap'); } }),
  { get type() { throw new Error('getter'); } },
  Object.create(null),
  { type: 'chunk', from: 0, seq: 1, get text() { throw new Error('getter'); } },
  ...HOSTILE_VALUES.map((v) => ({ type: 'chunk', from: v, seq: 1, text: 'a' })),
  ...HOSTILE_VALUES.map((v) => ({ type: 'open', streamId: v, from: 0, seq: 0, durableSeq: 0 })),
  ...HOSTILE_VALUES.map((v) => ({ type: 'end', seq: v })),
  ...HOSTILE_VALUES.map((v) => ({ type: v })),
];

test(`${tag} StreamRelayConform: any value fed gives [] or frames ending in one legal terminal, never a throw`, () => {
  for (const [i, frame] of hostileFrames.entries()) {
    for (const from of [0, 2, NaN, -1, 2 ** 53, '3', undefined]) {
      const reasons = [];
      const c = new api.StreamRelayConform('s', from, (r) => reasons.push(r));
      const out = c.feed(frame);
      assert.ok(Array.isArray(out) && out.length <= 2, `#${i}`);
      for (const f of out) assert.ok(f === frame || (f !== null && typeof f === 'object' && ['open', 'stale'].includes(f.type)), `#${i}`);
      if (out.length === 1 && out[0] !== frame) {
        assert.equal(out[0].type, 'stale');
        assert.equal(reasons.length, 1, `#${i}: a violation is reported`);
        assert.equal(typeof reasons[0], 'string');
        assert.deepEqual(c.feed({ type: 'chunk', from: 0, seq: 1, text: 'a' }), [], `#${i}: terminated`);
      }
    }
  }
  // Garbage in the constructor and callbacks that are not functions are tolerated.
  for (const cb of [undefined, null, 5, 'x', {}]) {
    const c = new api.StreamRelayConform(Symbol('id'), {}, cb);
    assert.equal(c.feed({ type: 'chunk', from: 5, seq: 6, text: 'x' }).length > 0, true);
    assert.ok(Array.isArray(c.end()));
  }
});

test(`${tag} StreamRelayConform: a throwing onViolation reaches the caller, never corrupts the pass`, () => {
  for (const thrown of [new Error('x'), 'a string', undefined, null, Symbol('s')]) {
    const c = new api.StreamRelayConform('s', 0, () => { throw thrown; });
    let caught = false;
    try {
      c.feed(null);
    } catch (err) {
      caught = true;
      assert.equal(err, thrown);
    }
    assert.ok(caught);
    assert.deepEqual(c.fail(), [{ type: 'stale', floorSeq: 0, durableSeq: 0 }]);
    assert.deepEqual(c.feed({ type: 'absent' }), []);
  }
});

test(`${tag} streamChunkTableDdl: wrong types and missing fields give their kind`, () => {
  const ok = { message: 'm', chunks: 'c' };
  for (const tables of [undefined, null, 5, 'c', true, Symbol('t')]) throwsKind(() => api.streamChunkTableDdl(tables, 'sqlite'), 'invalid_argument', String(typeof tables));
  for (const dialect of [undefined, null, 5, true]) throwsKind(() => api.streamChunkTableDdl(ok, dialect), 'invalid_argument', `dialect ${dialect}`);
  throwsKind(() => api.streamChunkTableDdl({ message: 'm' }, 'sqlite'), 'missing_field', 'no chunks');
  throwsKind(() => api.streamChunkTableDdl({ message: 'm', chunks: null }, 'sqlite'), 'missing_field', 'null chunks');
  for (const bad of [5, {}, [], true]) {
    throwsKind(() => api.streamChunkTableDdl({ message: 'm', chunks: bad }, 'sqlite'), 'invalid_field', `chunks ${JSON.stringify(bad)}`);
    throwsKind(() => api.streamChunkTableDdl({ ...ok, columns: { chunkSeq: bad } }, 'sqlite'), 'invalid_field', `column ${JSON.stringify(bad)}`);
  }
  throwsKind(() => api.streamChunkTableDdl({ ...ok, columns: 'x' }, 'sqlite'), 'invalid_field', 'columns not an object');
  for (const name of ['a"b', '', 'x\u0000', 'lone\ud800']) {
    throwsKind(() => api.streamChunkTableDdl({ message: 'm', chunks: name }, 'postgres'), 'invalid_identifier', JSON.stringify(name));
    throwsKind(() => api.streamChunkTableDdl({ ...ok, columns: { chunkText: name } }, 'postgres'), 'invalid_identifier', JSON.stringify(name));
  }
});

test(`${tag} other entry points: wrong types give a kind or a defined answer, never a crash`, () => {
  throwsKind(() => api.encodeSseEvents('not an array'), 'invalid_argument', 'encodeSseEvents(string)');
  throwsKind(() => api.encodeSseEvents(undefined), 'invalid_argument', 'encodeSseEvents(undefined)');
  throwsKind(() => new api.StreamReader({ streamId: 5 }), 'invalid_argument', 'reader streamId');
  throwsKind(() => new api.StreamReader({ streamId: 's', durableText: 5 }), 'invalid_argument', 'reader durableText');
  for (const req of [undefined, null, {}, { url: 5 }, { url: '::::', headers: null }, { url: 'http://h/?from=1', headers: { get: () => 42 } }]) {
    let out;
    try {
      out = api.streamRequestFromHttp(req);
    } catch (err) {
      assert.ok(err instanceof api.TwoplaneError && KINDS.has(err.kind), String(err));
      continue;
    }
    assert.equal(typeof out.streamId, 'string');
    assert.ok(Number.isFinite(out.from) && out.from >= 0);
  }
  for (const v of HOSTILE_VALUES) {
    assert.equal(typeof api.spliceStreamText(v, v), 'string');
    assert.equal(typeof api.assembleDurableText(v, v), 'string');
    assert.equal(typeof api.assembleDurableText({ body: v }, [{ seq: v, text: v }, v]), 'string');
    assert.doesNotThrow(() => api.frameResumePoint(v));
    const reader = new api.StreamReader({ streamId: 's' });
    assert.equal(typeof reader.push(v), 'boolean');
  }
});

const here = fileURLToPath(new URL('.', import.meta.url));

test(`${tag} the process survives garbage thrown at the raw build (no abort)`, () => {
  const script = `
    const entry = ${JSON.stringify(BACKEND)};
    const m = await import(${JSON.stringify(`${here}backends.mjs`)}).then((b) => b.loadBackendApi(entry));
    const be = m.backend;
    const vals = [undefined, null, 0, -1, NaN, 1e308, 2 ** 53, 'x', '\\ud800', {}, [], Symbol('s'), 10n, () => 1, new Float64Array([NaN, 1]), true];
    let n = 0;
    const attempt = (f) => { n++; try { f(); } catch {} };
    for (const v of vals) for (const w of vals) {
      attempt(() => new be.Conform(v));
      attempt(() => new be.Reader(v));
      attempt(() => be.splicePoint(v, w));
      attempt(() => be.assemblyOrder(v));
      attempt(() => be.streamChunkId(v, w));
      attempt(() => be.streamChunkIdText(v, w));
      attempt(() => be.streamChunkTableDdl(v, w));
      attempt(() => be.streamRequestFromHttp(v, w));
      attempt(() => be.streamRequestFromHttp(v, w, v));
      attempt(() => be.subscribeUrl(v, w, v));
      const c = new be.Conform(0);
      attempt(() => c.feed(v, w, v, w, v));
      attempt(() => c.reason(v, w, v, w));
      const r = new be.Reader(0);
      attempt(() => r.feed(v, w, v, w, v));
      attempt(() => m.encodeSseEvents([v, w]));
    }
    if (entry === 'napi') {
      const { createRequire } = await import('node:module');
      const addon = createRequire(import.meta.url)(m.addonFile);
      for (const v of vals) for (const w of vals) {
        for (const f of [
          () => new addon.Conform(v), () => new addon.Reader(v), () => addon.splicePointOf(v, w), () => addon.assemblyOrderOf(v),
          () => addon.streamChunkId(v, w), () => addon.streamChunkIdText(v, w), () => addon.streamChunkTableDdlOf(v, w),
          () => addon.streamRequestOf(v, w), () => addon.streamRequestOf(v, w, v),
          () => addon.subscribeUrlOf(v, w, v),
          () => addon.encodeSseJson(v, w, v), () => addon.encodeSseJson('[{"a":"\\\\"}', new Float64Array(1), 1),
          () => addon.encodeSseJson('[1,2]', new Float64Array(1), w), () => addon.Conform.prototype.feed.call(v, 1, true, 1, 2, 3),
          () => new addon.Conform(0).reason(v, w, v, w),
        ]) attempt(f);
      }
    }
    console.log('survived ' + n);
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env } });
  assert.equal(r.signal, null, `killed by ${r.signal}: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^survived \d+/);
});

test(`${tag} a durable length that is not an offset is invalid_offset, whichever backend reads it`, () => {
  // The backend's Reader (the core's Reader::from_js_len); the addon and the wasm build used to
  // disagree here (one threw, the other joined at 0).
  for (const bad of [NaN, -1, 1.5, 2 ** 53, Infinity, -Infinity, '3', undefined, null, {}]) {
    throwsKind(() => new api.backend.Reader(bad), 'invalid_offset', `Reader(${String(bad)})`);
  }
  assert.equal(new api.backend.Reader(3).accLen(), 3);
  assert.equal(new api.backend.Reader(2 ** 53 - 1).resumeFrom(), 2 ** 53 - 1);
});

test(`${tag} subscribeUrl refuses a from that is not an offset with invalid_offset`, () => {
  for (const bad of [NaN, -1, 0.5, 2 ** 53, '3']) {
    throwsKind(() => api.backend.subscribeUrl('/s', 'm', bad), 'invalid_offset', `subscribeUrl from ${String(bad)}`);
  }
  assert.equal(api.backend.subscribeUrl('/s', 'm', 4), '/s?streamId=m&from=4');
});
