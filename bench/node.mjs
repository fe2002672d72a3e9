// The Node benchmark (not a test): what each operation costs through the native addon, through
// the wasm build in Node, and in plain JavaScript, so the default Node entry (index.node.js) can
// route every operation to the build that is measured faster. Run: bash scripts/bench-node.sh.
//
// Method:
// - Every implementation is measured in its own Node process (this file re-runs itself with
//   `--child <suite> <impl>`): code shared between entries (the facade) would otherwise collect
//   type feedback from several backends at once and run slower than it does in any real app,
//   which loads one entry.
// - Inside a process, a case is warmed up, then its workload is calibrated to at least ~20 ms of
//   CPU time and run several times; the best run counts. Time is the process's CPU time
//   (user + system), not wall time, so time spent descheduled on a shared machine is not
//   counted. The parent runs the processes of one comparison interleaved (A B C A B C ...) and
//   keeps each case's best, so a change in load hits all of them alike.
// - Outputs are consumed so nothing is optimized away.
//
//   BENCH_ROUNDS=<n> processes per implementation (default 3)   BENCH_RUNS=<n> runs per process
//   (default 5)   BENCH_QUICK=1 shorter runs, for a smoke test

import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const QUICK = process.env.BENCH_QUICK === '1';
const MIN_RUN_NS = QUICK ? 3e6 : 20e6;

// ---------------------------------------------------------------- workloads (shared)

const WORDS = ['Hello', ' world', ', this', ' is', ' a', ' token', ' stream', ' of', ' model', ' output', ' 😀', ' "quoted"', '\n'];

/** One relay session as a relay sends it: open, chunks (a durable every 16), end. */
function session(streamId, chunks) {
  const frames = [{ type: 'open', streamId, from: 0, seq: 0, durableSeq: 0, ended: false }];
  let pos = 0;
  for (let i = 0; i < chunks; i++) {
    const text = WORDS[i % WORDS.length];
    frames.push({ type: 'chunk', from: pos, seq: pos + text.length, text });
    pos += text.length;
    if (i % 16 === 15) frames.push({ type: 'durable', seq: pos });
  }
  frames.push({ type: 'end', seq: pos, status: 'complete' });
  return frames;
}

const SESSION = session('msg-1', 256);
const SSE_BATCHES = [1, 4, 16, 32, 64, 256, 1024];

function framesForBatch(n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(SESSION[1 + (i % (SESSION.length - 2))]);
  return out;
}

// ---------------------------------------------------------------- child: measure one implementation

let sink = 0;
function consume(x) {
  sink = (sink + (typeof x === 'number' ? x : x?.length ?? 1)) | 0;
}

function cpuNs() {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}

/** Best CPU nanoseconds per unit of `fn()`, which does `units` units of work per call. */
function measure(fn, units) {
  for (let i = 0; i < 200; i++) consume(fn());
  let n = 16;
  for (;;) {
    const t0 = cpuNs();
    for (let i = 0; i < n; i++) consume(fn());
    if (cpuNs() - t0 >= MIN_RUN_NS || n >= 1 << 24) break;
    n *= 2;
  }
  let best = Infinity;
  for (let r = 0; r < RUNS; r++) {
    const t0 = cpuNs();
    for (let i = 0; i < n; i++) consume(fn());
    best = Math.min(best, (cpuNs() - t0) / (n * units));
  }
  return best;
}

const ENTRY = {
  napi: '../npm/twoplane/src/node.js',
  wasm: '../npm/twoplane/src/wasm.js',
  default: '../npm/twoplane/src/index.node.js',
};

async function child(suite, impl) {
  const out = {};
  if (suite === 'conform') {
    const Conform = impl === 'model'
      ? (await import('../tests/js/model.mjs')).ModelConform
      : (await import(ENTRY[impl])).StreamRelayConform;
    const onViolation = () => {};
    out.feed = measure(() => {
      const c = new Conform('msg-1', 0, onViolation);
      let n = 0;
      for (let i = 0; i < SESSION.length; i++) n += c.feed(SESSION[i]).length;
      return n;
    }, SESSION.length);
  } else if (suite === 'backend') {
    const { backend } = await import(ENTRY[impl]);
    const c = new backend.Conform(0);
    c.feed(1, false, 0, 1, 1);
    // A replay that is absorbed keeps the state constant: every call does the same work.
    out['Conform.feed'] = measure(() => { let s = 0; for (let i = 0; i < 100; i++) s += c.feed(1, false, 0, 1, 1); return s; }, 100);
    const r = new backend.Reader(0);
    r.feed(1, false, 0, 1, 1);
    out['Reader.feed'] = measure(() => { let s = 0; for (let i = 0; i < 100; i++) s += r.feed(1, false, 0, 1, 1); return s; }, 100);
    out.splicePoint = measure(() => { let s = 0; for (let i = 0; i < 100; i++) s += backend.splicePoint(i, 50); return s; }, 100);
  } else if (suite === 'ops') {
    const a = await import(ENTRY[impl]);
    const rows = Array.from({ length: 64 }, (_, i) => ({ seq: (i * 7919) % 64, text: 'chunk text ' }));
    const message = { body: 'The durable body of the message so far. '.repeat(4) };
    const durable = 'x'.repeat(200);
    const produced = 'x'.repeat(260);
    const tables = { message: 'messages', chunks: 'message_chunks', columns: { chunkStream: 'message_id' } };
    const req = new Request('http://localhost/api/stream?streamId=msg-1&from=12', { headers: { 'last-event-id': '40' } });
    out.spliceStreamText = measure(() => a.spliceStreamText(durable, produced), 1);
    out['assembleDurableText (64 chunks)'] = measure(() => a.assembleDurableText(message, rows), 1);
    out.streamChunkId = measure(() => a.streamChunkId('msg-1\ud800', 12345), 1);
    out.streamChunkTableDdl = measure(() => a.streamChunkTableDdl(tables, { name: 'postgres' }), 1);
    out.streamRequestFromHttp = measure(() => a.streamRequestFromHttp(req), 1);
    out['StreamReader.push (per frame)'] = measure(() => {
      const reader = new a.StreamReader({ streamId: 'msg-1', durableText: '' });
      for (let i = 1; i < 65; i++) reader.push(SESSION[i]);
      return reader.length;
    }, 64);
  } else if (suite === 'sse') {
    let encodeOne;
    let encodeMany;
    if (impl === 'template') {
      // The code this replaces: JSON.stringify plus a template string, frame by frame.
      const { frameResumePoint } = await import(ENTRY.wasm);
      const template = (frame) => {
        const id = frameResumePoint(frame);
        return `${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(frame)}\n\n`;
      };
      encodeOne = template;
      encodeMany = (frames) => {
        let s = '';
        for (let i = 0; i < frames.length; i++) s += template(frames[i]);
        return s;
      };
    } else {
      const a = await import(ENTRY[impl]);
      encodeOne = impl === 'napi' ? (frame) => a.encodeSseEvents([frame]) : a.encodeSseEvent;
      encodeMany = a.encodeSseEvents;
    }
    const one = SESSION[5];
    out['1 frame, one call per frame'] = measure(() => encodeOne(one), 1);
    for (const n of SSE_BATCHES) {
      const frames = framesForBatch(n);
      out[`${n} frames per call`] = measure(() => encodeMany(frames), n);
      out[`${n} frames per call, then Buffer.from`] = measure(() => Buffer.from(encodeMany(frames)), n);
    }
  }
  process.stdout.write(JSON.stringify(out));
}

// ---------------------------------------------------------------- parent: compare and report

const self = fileURLToPath(import.meta.url);

/** Best of ROUNDS interleaved processes, per implementation and case. */
function compare(suite, impls) {
  const best = Object.fromEntries(impls.map((i) => [i, {}]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const impl of impls) {
      const r = spawnSync(process.execPath, [self, '--child', suite, impl], { encoding: 'utf8', env: process.env, maxBuffer: 1 << 20 });
      if (r.status !== 0) throw new Error(`bench child ${suite}/${impl} failed:\n${r.stderr}`);
      for (const [k, ns] of Object.entries(JSON.parse(r.stdout))) best[impl][k] = Math.min(best[impl][k] ?? Infinity, ns);
    }
  }
  return best;
}

const fmt = (ns) => `${ns.toFixed(1).padStart(8)} ns`;

function table(title, results, { unit = 'ns', bytes } = {}) {
  const impls = Object.keys(results);
  const cases = Object.keys(results[impls[0]]);
  console.log(`\n# ${title}`);
  console.log(`${''.padEnd(42)}${impls.map((i) => i.padStart(14)).join('')}`);
  for (const c of cases) {
    const cells = impls.map((i) => {
      const ns = results[i][c];
      if (bytes !== undefined) return `${((bytes(c) / ns) * 1e3).toFixed(0)} MB/s`.padStart(14);
      return `${ns.toFixed(1)} ${unit}`.padStart(14);
    });
    console.log(`${c.padEnd(42)}${cells.join('')}`);
  }
}

async function parent() {
  console.log(`twoplane Node benchmark: node ${process.version}, ${os.cpus().length} cpu(s) (${os.cpus()[0]?.model ?? '?'}), ` +
    `load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; best of ${ROUNDS} processes x ${RUNS} runs, CPU time`);

  const conform = compare('conform', ['model', 'napi', 'wasm', 'default']);
  table('StreamRelayConform.feed, ns per frame (a 256-chunk relay session, construction included)', Object.fromEntries(Object.entries(conform).map(([k, v]) => [k, { feed: v.feed }])));
  const model = conform.model.feed;
  for (const impl of ['napi', 'wasm', 'default']) console.log(`  ${impl}: ${(conform[impl].feed / model).toFixed(2)}x the plain JavaScript model`);

  const backend = compare('backend', ['napi', 'wasm']);
  table('the numeric backend call alone, ns per call', backend);

  const ops = compare('ops', ['napi', 'wasm', 'default']);
  table('other operations through the public API, ns per call', ops);

  const sse = compare('sse', ['template', 'napi', 'default']);
  const one = Buffer.byteLength(`id: 9\ndata: ${JSON.stringify(SESSION[5])}\n\n`);
  const bytesPerFrame = (c) => {
    if (c.startsWith('1 frame')) return one;
    const n = Number(c.split(' ')[0]);
    const frames = framesForBatch(n);
    return frames.reduce((s, f) => s + Buffer.byteLength(`id: ${f.seq}\ndata: ${JSON.stringify(f)}\n\n`), 0) / n;
  };
  table('SSE encoding, ns per frame (template = JSON.stringify + template string; napi = twoplane/node encodeSseEvents; default = twoplane in Node)', sse);
  table('SSE encoding, MB/s of event text (UTF-8 bytes)', sse, { bytes: bytesPerFrame });

  console.log('\n# routing: the faster build per operation');
  const pickOf = (a, b) => (a < b ? 'napi' : 'wasm');
  console.log(`conform (Conform): ${pickOf(conform.napi.feed, conform.wasm.feed)} (napi ${fmt(conform.napi.feed)}, wasm ${fmt(conform.wasm.feed)} per frame)`);
  for (const [op, member] of [
    ['StreamReader.push (per frame)', 'Reader'],
    ['spliceStreamText', 'splicePoint'],
    ['assembleDurableText (64 chunks)', 'assemblyOrder'],
    ['streamChunkId', 'streamChunkId'],
    ['streamChunkTableDdl', 'streamChunkTableDdl'],
    ['streamRequestFromHttp', 'streamRequestFromHttp'],
  ]) {
    console.log(`${op} (${member}): ${pickOf(ops.napi[op], ops.wasm[op])} (napi ${fmt(ops.napi[op])}, wasm ${fmt(ops.wasm[op])})`);
  }
  let from = null;
  for (const n of SSE_BATCHES) {
    const js = sse.template[`${n} frames per call`];
    const na = sse.napi[`${n} frames per call`];
    if (na < js) from ??= n;
    else from = null;
    console.log(`SSE, ${String(n).padStart(4)} frames per call: ${na < js ? 'napi' : 'JavaScript'} (napi ${fmt(na)}, JS ${fmt(js)} per frame; default entry ${fmt(sse.default[`${n} frames per call`])})`);
  }
  console.log(`SSE: the addon is faster from ${from ?? '(no measured size)'} frames per call on`);

  console.log('\n# targets');
  console.log(`default entry feed: ${(conform.default.feed / model).toFixed(2)}x plain JavaScript (target: within 2x)`);
  const ratios = SSE_BATCHES.filter((n) => n > 1).map((n) => `${n}: ${(sse.template[`${n} frames per call`] / sse.default[`${n} frames per call`]).toFixed(2)}x`);
  console.log(`default entry batch SSE, speed relative to JSON.stringify + template: ${ratios.join(', ')} (target: >= 1x)`);
}

const at = process.argv.indexOf('--child');
if (at >= 0) await child(process.argv[at + 1], process.argv[at + 2]);
else await parent();
if (sink === 0.5) console.log('');
