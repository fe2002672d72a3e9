// The AI SDK benchmark (prints numbers; not a test): one UI message stream of 2,000 chunks
// (reasoning, tool input deltas, tool outputs, two texts, data parts; chunks.mjs) produced at a
// steady rate to 100 readers that resume it, through `twoplane serve` and through
// `resumable-stream` 2.x with a local Redis, side by side in the same run. Run it with
// `bash scripts/bench-ai-sdk.sh` (it installs, builds and starts Redis first).
//
// Per run: the producer POSTs the turn's SSE text (one chunk every BENCH_RATE_MS, 5 ms: ~10 s);
// every reader joins as the answer starts; BENCH_RESUMERS of them (90) drop their connection at
// times spread over 1 s to 9 s and resume 250 ms later, the others read through. Every reader
// reads to the end, and the message the SDK's own reader (ai's DefaultChatTransport and
// readUIMessageStream) builds from what each received must equal the turn's.
//
// Measured:
// - server CPU: the server process's user + system time over the run (/proc/<pid>/stat), and for
//   the peer also Redis's (its chunks live there in transit); divided by the data events
//   delivered to all readers (both legs of a resumed reader). The clients run in a forked
//   process of their own.
// - bytes per resume: the HTTP body bytes of the resumed leg, up to its end; and of those, the
//   bytes that repeat what the reader already held (sse.mjs: a delta whose text it had, a chunk
//   equal to one it had).
// - time to first chunk: from the resume request being sent to its first complete data event.
//
// Fairness: both servers run for the whole benchmark (a warm-up run each first); the runs of a
// round alternate the sides and every other round reverses the order; before each run the
// driver waits until no build runs (no rustc or cargo process) and the machine's CPU outside
// this benchmark stays under BENCH_MAX_OTHERS cores; a run during which it rose above it is
// discarded and run again. Medians over BENCH_ROUNDS rounds; latencies pooled over the rounds.
//
//   TWOPLANE_BIN (target/release/twoplane)  REDIS_URL (required)  BENCH_REDIS_PIDFILE (Redis's
//   pid, for its CPU)  BENCH_ROUNDS (3)  BENCH_READERS (100)  BENCH_RESUMERS (90)
//   BENCH_RATE_MS (5)  BENCH_MAX_OTHERS (0.3 cores)  BENCH_WAIT_S (3600: the longest the whole
//   benchmark waits for quiet; then it runs anyway and says so)
//   BENCH_QUICK=1 (one round, no warm-up, no idle wait: a smoke test, not numbers)

import { spawn, fork, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { TOTAL, turnChunks, census, sseOf } from './chunks.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const READERS = Number(process.env.BENCH_READERS ?? 100);
const RESUMERS = Math.min(READERS, Number(process.env.BENCH_RESUMERS ?? 90));
const RATE_MS = Number(process.env.BENCH_RATE_MS ?? 5);
const MAX_OTHERS = Number(process.env.BENCH_MAX_OTHERS ?? 0.3);
const WAIT_S = Number(process.env.BENCH_WAIT_S ?? 3600);
const BIN = process.env.TWOPLANE_BIN ?? path.join(ROOT, 'target/release/twoplane');
const REDIS_URL = process.env.REDIS_URL;
const TICK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
const SETTLE_MS = 500;

const SCHEDULE = { joinAtMs: 200, dropFromMs: 1000, dropToMs: 9000, gapMs: 250 };

const MODES = [
  { key: 'tp', side: 'twoplane', offset: 'none', label: 'twoplane: GET (useChat default resume)' },
  { key: 'rs', side: 'peer', offset: 'none', label: 'resumable-stream: resumeExistingStream (useChat default)' },
  { key: 'tp-from', side: 'twoplane', offset: 'from', label: 'twoplane: GET ?from=<last id> (its transport, no snapshot)' },
  { key: 'tp-tail', side: 'twoplane', offset: 'tail', label: 'twoplane: GET ?from=<last id>&tail=1 (its transport, snapshot held)' },
  { key: 'rs-skip', side: 'peer', offset: 'skip', label: 'resumable-stream: skipCharacters=<chars held>' },
  { key: 'tp-0', side: 'twoplane', offset: 'none', readers: 0, label: 'twoplane: producer only, no reader' },
  { key: 'rs-0', side: 'peer', offset: 'none', readers: 0, label: 'resumable-stream: producer only, no reader' },
];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const fail = (msg) => {
  console.error(`bench-ai-sdk: ${msg}`);
  process.exit(1);
};

// ------------------------------------------------------------------------------- /proc

/** A process's user and system time in ms (all its threads). */
function times(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: (Number(fields[11]) * 1000) / TICK, system: (Number(fields[12]) * 1000) / TICK };
}

/** A process's user + system time in ms. */
function cpuMs(pid) {
  const t = times(pid);
  return t.user + t.system;
}

/** The machine's busy CPU time in ms, all cores (idle and iowait left out). */
function machineBusyMs() {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1000) / TICK;
}

/** Builds beside us: a rustc or cargo (or a build script) running. */
function buildsRunning() {
  const names = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const comm = fs.readFileSync(`/proc/${d}/comm`, 'utf8').trim();
      if (comm === 'rustc' || comm === 'cargo' || comm.startsWith('build-script')) names.push(comm);
    } catch {}
  }
  return names;
}

/** CPU time of `pids` and of the machine, for a window's "others" (cores outside ours). */
function sample(pids) {
  let ours = 0;
  for (const p of pids) {
    try {
      ours += cpuMs(p);
    } catch {}
  }
  return { at: Date.now(), busy: machineBusyMs(), ours };
}
const othersCores = (a, b) => Math.max(0, (b.busy - a.busy - (b.ours - a.ours)) / (b.at - a.at));

/** Wait until no build runs and the rest of the machine stays under MAX_OTHERS cores for 3 s. */
let waitBudgetS = WAIT_S;
async function waitQuiet(pids, why) {
  if (QUICK) return { waitedS: 0, others: null };
  const start = Date.now();
  const spent = () => (Date.now() - start) / 1000;
  let told = false;
  for (;;) {
    const builds = buildsRunning();
    const a = sample(pids);
    await sleep(3000);
    const others = othersCores(a, sample(pids));
    if (builds.length === 0 && others < MAX_OTHERS) {
      waitBudgetS -= spent();
      return { waitedS: spent(), others };
    }
    if (spent() > waitBudgetS) {
      console.log(`  (the ${WAIT_S} s of waiting for a quiet machine are spent; running ${why} anyway: others ${others.toFixed(2)} cores, builds: ${builds.join(' ') || 'none'})`);
      waitBudgetS = 0;
      return { waitedS: spent(), others, busy: true };
    }
    if (!told) {
      console.log(`  waiting for a quiet machine before ${why} (others ${others.toFixed(2)} cores; builds: ${[...new Set(builds)].join(' ') || 'none'})`);
      told = true;
    }
  }
}

// ------------------------------------------------------------------------------ servers

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function status(url) {
  return new Promise((resolve) => {
    http.get(url, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', () => resolve(0));
  });
}

async function startTwoplane(dir) {
  if (!fs.existsSync(BIN)) fail(`${BIN} is missing (cargo build --release -p twoplane-server --bin twoplane)`);
  const port = await freePort();
  const log = fs.openSync(path.join(dir, 'twoplane.log'), 'w');
  const child = spawn(BIN, ['serve', '--listen', `127.0.0.1:${port}`, '--db', path.join(dir, 'bench.db')], {
    stdio: ['ignore', log, log],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if ((await status(`${base}/v1/streams/nothing/ui-message-stream`)) === 204) return { child, base, pid: child.pid };
    if (child.exitCode !== null) break;
    await sleep(50);
  }
  fail(`twoplane serve did not start; see ${path.join(dir, 'twoplane.log')}`);
}

async function startPeer(dir) {
  const log = fs.openSync(path.join(dir, 'peer.log'), 'w');
  const child = spawn(process.execPath, [path.join(HERE, 'peer-server.mjs')], {
    stdio: ['ignore', 'pipe', log],
    env: { ...process.env, REDIS_URL },
  });
  const line = await new Promise((resolve) => {
    let out = '';
    child.stdout.on('data', (b) => {
      out += b;
      if (out.includes('\n')) resolve(out.split('\n')[0]);
    });
    child.on('exit', () => resolve(null));
  });
  if (!line) fail(`the peer server did not start; see ${path.join(dir, 'peer.log')}`);
  return { child, base: `http://127.0.0.1:${JSON.parse(line).port}`, pid: child.pid };
}

// ---------------------------------------------------------------------------------- runs

function message(child, pred) {
  return new Promise((resolve, reject) => {
    const on = (m) => {
      if (m.failed) {
        child.off('message', on);
        reject(new Error(m.failed));
      } else if (pred(m)) {
        child.off('message', on);
        resolve(m);
      }
    };
    child.on('message', on);
    child.once('exit', (code) => reject(new Error(`the client process exited (${code})`)));
  });
}

let runNo = 0;
async function runOnce(mode, servers, redisPid) {
  const server = servers[mode.side];
  const serverPids = [server.pid, ...(mode.side === 'peer' && redisPid ? [redisPid] : [])];
  const run = {
    side: mode.side,
    offset: mode.offset,
    base: server.base,
    streamId: `bench-${process.pid}-${++runNo}-${mode.key}`,
    readers: mode.readers ?? READERS,
    resumers: mode.readers === 0 ? 0 : RESUMERS,
    rateMs: RATE_MS,
    ...SCHEDULE,
  };
  const client = fork(path.join(HERE, 'client.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    client.send({ run });
    await message(client, (m) => m.ready);
    const ours = [servers.twoplane.pid, servers.peer.pid, redisPid, process.pid, client.pid].filter(Boolean);
    const m0 = sample(ours);
    const s0 = serverPids.map(times);
    client.send({ go: true });
    await message(client, (m) => m.done);
    await sleep(SETTLE_MS);
    const s1 = serverPids.map(times);
    const m1 = sample(ours);
    client.send({ verify: true });
    const { result } = await message(client, (m) => m.result);
    return {
      ...result,
      serverCpuMs: s1[0].user + s1[0].system - s0[0].user - s0[0].system,
      serverSystemMs: s1[0].system - s0[0].system,
      redisCpuMs: s1.length > 1 ? s1[1].user + s1[1].system - s0[1].user - s0[1].system : 0,
      others: othersCores(m0, m1),
    };
  } finally {
    client.kill();
  }
}

// ------------------------------------------------------------------------------- numbers

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs, p) => {
  const s = xs.filter((x) => x !== null && x !== undefined).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const mean = (xs) => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);
const f = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '—');
const kb = (x) => (Number.isFinite(x) ? `${f(x / 1024, 1)} KB` : '—');

function table(rows, headers) {
  const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => (i === 0 ? String(c).padEnd(w[i]) : String(c).padStart(w[i]))).join(' | ')} |`;
  console.log(line(headers));
  console.log(`|${w.map((n, i) => (i === 0 ? ':' : '-') + '-'.repeat(n) + (i === 0 ? '-' : ':')).join('|')}|`);
  for (const r of rows) console.log(line(r));
}

function version(pkg) {
  try {
    return JSON.parse(fs.readFileSync(path.join(HERE, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
}

function sh(cmd, args) {
  try {
    return execFileSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return '?';
  }
}

// ---------------------------------------------------------------------------------- main

async function main() {
  if (!REDIS_URL) fail('REDIS_URL is not set (bash scripts/bench-ai-sdk.sh starts a Redis)');
  const pidfile = process.env.BENCH_REDIS_PIDFILE;
  const redisPid = pidfile && fs.existsSync(pidfile) ? Number(fs.readFileSync(pidfile, 'utf8').trim()) : null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'twoplane-bench-ai-sdk-'));
  const loadAtStart = os.loadavg();
  // What was built: the commit, and whether crates/ had changes beside it (others work here too).
  const built = {
    commit: sh('git', ['rev-parse', '--short', 'HEAD']),
    dirty: sh('git', ['status', '--porcelain', '--', 'crates']) !== '',
    at: fs.statSync(BIN).mtime.toISOString(),
  };
  const servers = { twoplane: await startTwoplane(dir), peer: await startPeer(dir) };
  const stop = () => {
    for (const s of Object.values(servers)) s.child.kill('SIGTERM');
  };
  process.on('exit', stop);
  process.on('SIGINT', () => process.exit(130));
  const ours = () => [servers.twoplane.pid, servers.peer.pid, redisPid, process.pid].filter(Boolean);

  const chunks = turnChunks('x');
  const streamBytes = Buffer.byteLength(chunks.map(sseOf).join('') + 'data: [DONE]\n\n');
  const kinds = census(chunks);
  console.log(`bench-ai-sdk: ${TOTAL} chunks (${kb(streamBytes)} of SSE) at one per ${RATE_MS} ms, ${READERS} readers (${RESUMERS} resume), ${ROUNDS} round(s)`);
  console.log(`  chunks: ${Object.entries(kinds).map(([k, n]) => `${k} ${n}`).join(', ')}`);
  console.log(`  twoplane ${servers.twoplane.base} (sqlite in ${dir}), peer ${servers.peer.base}, redis pid ${redisPid ?? '?'}`);

  const results = Object.fromEntries(MODES.map((m) => [m.key, []]));
  const conditions = [];
  const discarded = { load: 0, problems: 0, firstProblem: null };
  const attempt = async (mode, what, { retry = true } = {}) => {
    for (let failures = 0; ; ) {
      const quiet = await waitQuiet(ours(), what);
      const began = Date.now();
      const r = await runOnce(mode, servers, redisPid);
      r.tookS = (Date.now() - began) / 1000;
      r.waitedS = quiet.waitedS;
      if (!retry || QUICK) return r;
      if (r.problems.length > 0 && failures < 2) {
        failures++;
        discarded.problems++;
        discarded.firstProblem ??= `${what}: ${r.problems[0]}`;
        console.log(`  ${what}: ${r.problems.length} problem(s) (${r.problems.slice(0, 2).join('; ')}); discarded, again`);
      } else if (r.others >= MAX_OTHERS && !quiet.busy) {
        discarded.load++;
        console.log(`  ${what}: the rest of the machine used ${r.others.toFixed(2)} cores during the run; discarded, again`);
      } else {
        return r;
      }
    }
  };

  if (!QUICK) {
    for (const key of ['tp', 'rs']) {
      const r = await attempt(MODES.find((m) => m.key === key), `warm-up ${key}`, { retry: false });
      console.log(`  warm-up ${key}: ${r.problems.length ? r.problems.slice(0, 3).join('; ') : 'ok'}`);
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? MODES : [...MODES].reverse();
    for (const mode of order) {
      const what = `round ${round + 1} ${mode.key}`;
      const r = await attempt(mode, what);
      results[mode.key].push(r);
      conditions.push({ what, others: r.others, waitedS: r.waitedS });
      const ok = r.problems.length === 0 ? 'ok' : `${r.problems.length} problem(s): ${r.problems.slice(0, 3).join('; ')}`;
      console.log(
        `  ${what.padEnd(18)} server ${f(r.serverCpuMs)} ms (system ${f(r.serverSystemMs)})${r.redisCpuMs ? ` + redis ${f(r.redisCpuMs)} ms` : ''}, ` +
          `${f(r.delivered)} chunks delivered, client ${f(r.clientCpuMs)} ms, others ${r.others.toFixed(2)} cores, ${f(r.tookS, 1)} s, ${ok}`,
      );
    }
  }

  // ------------------------------------------------------------------- the table
  console.log('');
  console.log(`The same UI message stream (${TOTAL} chunks, ${kb(streamBytes)} of SSE, ~${f((TOTAL * RATE_MS) / 1000, 0)} s) to ${READERS} readers, ${RESUMERS} of them resuming mid-way; medians of ${ROUNDS} round(s), latencies pooled`);
  console.log('');
  const rows = [];
  for (const m of MODES.filter((m) => m.readers !== 0)) {
    const rs = results[m.key];
    const cpu = rs.map((r) => r.serverCpuMs + r.redisCpuMs);
    const resumes = rs.flatMap((r) => r.readers.filter((x) => x.resumes));
    const joins = rs.flatMap((r) => r.readers);
    rows.push([
      m.label,
      `${f(median(cpu))} ms (system ${f(median(rs.map((r) => r.serverSystemMs)))}` +
        (m.side === 'peer' ? `, redis ${f(median(rs.map((r) => r.redisCpuMs)))})` : ')'),
      f(median(rs.map((r) => r.delivered))),
      f(median(rs.map((r) => ((r.serverCpuMs + r.redisCpuMs) * 1000) / r.delivered)), 1),
      // The same work for every side: each producer chunk to each reader (a side that merges or
      // compacts sends fewer chunks, so per chunk on the wire compares different work).
      f(median(cpu) * 1000 / (TOTAL * READERS), 3),
      kb(mean(resumes.map((x) => x.resumeBytes))),
      kb(mean(resumes.map((x) => x.repeatedBytes))),
      `${f(pct(resumes.map((x) => x.resumeTtfbMs), 50), 1)} / ${f(pct(resumes.map((x) => x.resumeTtfbMs), 90), 1)} / ${f(pct(resumes.map((x) => x.resumeTtfbMs), 100), 1)}`,
      f(pct(joins.map((x) => x.joinTtfbMs), 50), 1),
      f(median(rs.map((r) => r.clientCpuMs))),
      String(rs.reduce((n, r) => n + r.problems.length, 0)),
    ]);
  }
  table(rows, [
    'side: resume request',
    'server CPU (its system time)',
    'chunks delivered',
    'µs CPU/chunk on the wire',
    'µs CPU per producer chunk per reader',
    'bytes/resume',
    'of them repeated',
    'first chunk ms p50/p90/max',
    'join ms p50',
    'client CPU ms',
    'problems',
  ]);
  console.log('');
  // Ratios from this run: the peer's total server CPU (Redis included) over twoplane's, per resume
  // mode, and bytes per resume against `skipCharacters`.
  const total = (key) => median(results[key].map((r) => r.serverCpuMs + r.redisCpuMs));
  const bytes = (key) => mean(results[key].flatMap((r) => r.readers.filter((x) => x.resumes)).map((x) => x.resumeBytes));
  console.log(
    `ratios: resumable-stream / twoplane server CPU: ${f(total('rs') / total('tp'), 2)}x (default resume), ` +
      `${f(total('rs-skip') / total('tp-from'), 2)}x (skipCharacters / ?from=), ${f(total('rs-skip') / total('tp-tail'), 2)}x (skipCharacters / ?from=&tail=1); ` +
      `bytes per resume, twoplane tail / skipCharacters: ${f(bytes('tp-tail') / bytes('rs-skip'), 2)}x`,
  );
  console.log('');
  const base = MODES.filter((m) => m.readers === 0).map((m) => {
    const rs = results[m.key];
    return [m.label, `${f(median(rs.map((r) => r.serverCpuMs + r.redisCpuMs)))} ms` + (m.side === 'peer' ? ` (redis ${f(median(rs.map((r) => r.redisCpuMs)))})` : '')];
  });
  table(base, ['the producer alone (ingest)', 'server CPU']);

  // ------------------------------------------------------------------ conditions
  const others = conditions.map((c) => c.others);
  console.log('');
  console.log('Conditions:');
  console.log(`  machine: ${os.cpus()[0]?.model ?? '?'} x ${os.cpus().length}, ${f(os.totalmem() / 2 ** 30, 1)} GiB, Linux ${os.release()}`);
  console.log(`  load average at start (1/5/15 min): ${loadAtStart.map((x) => x.toFixed(2)).join(' / ')}; CPU used outside the benchmark during the counted runs: median ${median(others).toFixed(2)}, max ${Math.max(...others).toFixed(2)} cores (limit ${MAX_OTHERS}); waited ${f(conditions.reduce((s, c) => s + c.waitedS, 0))} s in all for quiet`);
  console.log(`  twoplane at ${built.commit}${built.dirty ? ' with uncommitted changes in crates/' : ''}, ${path.relative(ROOT, BIN)} built ${built.at}, its SQLite file on ${os.tmpdir()}`);
  console.log(`  resumable-stream ${version('resumable-stream')}, redis (client) ${version('redis')}, ${sh('redis-server', ['--version']).split(' ').slice(0, 3).join(' ')}; ai ${version('ai')} (the check of every reader's message); Node ${process.version}`);
  console.log(`  readers join ${SCHEDULE.joinAtMs} ms after the first chunk (2 ms apart); the resuming ones drop between ${SCHEDULE.dropFromMs / 1000} s and ${SCHEDULE.dropToMs / 1000} s and resume ${SCHEDULE.gapMs} ms later; server CPU counted from the first chunk to ${SETTLE_MS} ms after the last reader ended; the peer's includes Redis`);
  const retries = MODES.filter((m) => m.readers !== 0).map((m) => {
    const n = results[m.key].flatMap((r) => r.readers).reduce((a, x) => a + x.joinRetries, 0);
    return `${m.key} ${n}`;
  });
  console.log(`  joins answered 204 (the stream not open yet) and asked again 20 ms later, over all rounds: ${retries.join(', ')}`);
  console.log(`  runs discarded and run again: ${discarded.load} for the load beside them, ${discarded.problems} for a problem${discarded.firstProblem ? ` (first: ${discarded.firstProblem})` : ''}`);
  const problems = Object.values(results).flat().reduce((n, r) => n + r.problems.length, 0);
  fs.rmSync(dir, { recursive: true, force: true });
  if (problems > 0) {
    console.log(`\n${problems} problem(s): a number above is not of a correct run`);
    process.exitCode = 1;
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
