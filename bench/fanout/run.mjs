// SSE fan-out against the peers, measured in one run (docs/server.md, "Against other servers"):
// one stream, every reader over SSE on loopback, the readers in their own processes.
//
// Servers: `twoplane serve` (the release binary, SQLite on /tmp; with its default display-rate
// writes, and with `--write-interval-ms 0`), the Rust Durable Streams server
// (`durable-streams-server` from crates.io, in memory) and the Durable Streams Node reference
// server (`@durable-streams/server`, in memory). Workloads: 2,000 appends of 4 characters at 200
// a second, and 1,000 of 8 at 50 a second, to 100 and to 1,000 readers.
//
// Printed per server and workload: server CPU per appended delta per reader (user, system,
// total; /proc/<pid>/stat over the appends until the last reader has everything), write system
// calls per delta per reader (/proc/<pid>/io syscw), p50 and p99 from push to receipt (every 10th
// reader notes each delta's arrival; one clock), RSS per idle reader, the producer's appends per
// second; then each peer's CPU over twoplane's. Every reader must receive the whole text.
//
// Env: TWOPLANE_BIN, DS_BIN (the Rust peer), BENCH_ROUNDS (default 2; means), BENCH_QUICK=1
// (100 readers, a tenth of the appends), BENCH_SERVERS (comma list of keys), BENCH_RATES (comma
// list of appends per second: 200, 50), BENCH_SIZES (comma list of reader counts), BENCH_WAIT_S.
import { spawn, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';

const HERE = dirname(fileURLToPath(import.meta.url));
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 2));
const TICK = 100; // CLK_TCK on Linux
const WORKERS = 4;
const SAMPLE_EVERY = 10;

const WORKLOADS = [
  { key: '200/s x4', count: QUICK ? 200 : 2000, len: 4, rate: 200 },
  { key: '50/s x8', count: QUICK ? 100 : 1000, len: 8, rate: 50 },
].filter((w) => !process.env.BENCH_RATES || process.env.BENCH_RATES.split(',').includes(String(w.rate)));
const SIZES = process.env.BENCH_SIZES ? process.env.BENCH_SIZES.split(',').map(Number) : QUICK ? [100] : [100, 1000];

const SERVERS = [
  { key: 'twoplane', label: 'twoplane', kind: 'twoplane', flags: [] },
  { key: 'twoplane-0', label: 'twoplane (interval off)', kind: 'twoplane', flags: ['--write-interval-ms', '0'] },
  { key: 'ds-rust', label: 'Durable Streams, Rust (durable-streams-server 0.3.0)', kind: 'ds-rust' },
  { key: 'ds-node', label: 'Durable Streams, Node reference (@durable-streams/server 0.3.7)', kind: 'ds-node' },
].filter((s) => !process.env.BENCH_SERVERS || process.env.BENCH_SERVERS.split(',').includes(s.key));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function request(port, method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let out = '';
      res.setEncoding('utf8');
      res.on('data', (s) => (out += s));
      res.on('end', () => resolve({ status: res.statusCode, body: out }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function cpuOf(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(f[11]) / TICK, system: Number(f[12]) / TICK };
}
const syscwOf = (pid) => Number(/syscw: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))[1]);
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

async function freePort() {
  return new Promise((resolve) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

async function startServer(s) {
  const port = await freePort();
  let child;
  let dir;
  if (s.kind === 'twoplane') {
    dir = mkdtempSync('/tmp/twoplane-bench-fanout-');
    child = spawn(process.env.TWOPLANE_BIN, ['serve', '--listen', `127.0.0.1:${port}`, '--db', join(dir, 't.db'), ...s.flags], { stdio: ['ignore', 'ignore', 'inherit'] });
  } else if (s.kind === 'ds-rust') {
    child = spawn(process.env.DS_BIN, [], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DS_SERVER__BIND_ADDRESS: `127.0.0.1:${port}`, DS_OBSERVABILITY__RUST_LOG: 'error', RUST_LOG: 'error' },
    });
  } else {
    child = spawn(process.execPath, [join(HERE, 'node-ds.mjs'), String(port)], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  for (let i = 0; i < 200; i++) {
    try {
      const r = await request(port, 'GET', s.kind === 'ds-node' ? '/' : '/healthz');
      if (r.status > 0) return { port, child, dir };
    } catch {
      await sleep(50);
    }
  }
  throw new Error(`${s.key} did not start`);
}

async function stopServer(srv) {
  srv.child.kill('SIGTERM');
  await new Promise((r) => srv.child.once('exit', r));
  if (srv.dir) rmSync(srv.dir, { recursive: true, force: true });
}

const streamPaths = (s, id) =>
  s.kind === 'twoplane'
    ? { read: `/api/stream?streamId=${id}&from=0`, append: (offset) => `/v1/streams/${id}/append?offset=${offset}` }
    : { read: `/v1/stream/${id}?offset=-1&live=sse`, append: () => `/v1/stream/${id}` };

async function createStream(s, port, id) {
  const r = s.kind === 'twoplane'
    ? await request(port, 'POST', `/v1/streams/${id}/open`, '{"create":true}', { 'content-type': 'application/json' })
    : await request(port, 'PUT', `/v1/stream/${id}`, '', { 'content-type': 'text/plain' });
  if (r.status >= 300) throw new Error(`create ${id} on ${s.key}: ${r.status} ${r.body}`);
}

/** The text of delta `i`: ASCII letters, so characters and UTF-16 units agree. */
const deltaText = (i, len) => Array.from({ length: len }, (_, k) => String.fromCharCode(97 + ((i + k) % 26))).join('');

async function runOnce(s, srv, w, n, round) {
  const id = `f${process.pid}r${round}${w.rate}n${n}`;
  await createStream(s, srv.port, id);
  const paths = streamPaths(s, id);
  const total = w.count * w.len;
  const rss0 = rssOf(srv.child.pid);
  const workers = [];
  const per = Math.ceil(n / WORKERS);
  for (let k = 0; k < WORKERS; k++) {
    const count = Math.min(per, n - k * per);
    if (count <= 0) break;
    const wk = fork(join(HERE, 'readers.mjs'), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const connected = new Promise((r) => wk.on('message', (m) => m.type === 'connected' && r()));
    const done = new Promise((r) => wk.on('message', (m) => m.type === 'done' && r(m.results)));
    wk.send({ url: `http://127.0.0.1:${srv.port}${paths.read}`, count, total, deltaLen: w.len, sampleEvery: SAMPLE_EVERY, format: s.kind === 'twoplane' ? 'twoplane' : 'ds', first: k * per });
    workers.push({ wk, connected, done });
  }
  await Promise.all(workers.map((x) => x.connected));
  await sleep(1000);
  const rssPerReader = (rssOf(srv.child.pid) - rss0) / n;
  const cpu0 = cpuOf(srv.child.pid);
  const io0 = syscwOf(srv.child.pid);
  const pushes = [];
  const interval = 1000 / w.rate;
  const t0 = now() + 20;
  for (let i = 0; i < w.count; i++) {
    const wait = t0 + i * interval - now();
    if (wait > 0) await sleep(wait);
    pushes.push(now());
    const r = await request(srv.port, 'POST', paths.append(i * w.len), deltaText(i, w.len), { 'content-type': 'text/plain' });
    if (r.status >= 300) throw new Error(`append ${i} on ${s.key}: ${r.status} ${r.body}`);
  }
  const produceS = (now() - t0) / 1000;
  const timeout = sleep(30_000).then(() => null);
  const results = await Promise.race([Promise.all(workers.map((x) => x.done)), timeout]);
  const cpu1 = cpuOf(srv.child.pid);
  const io1 = syscwOf(srv.child.pid);
  for (const x of workers) {
    x.wk.send('stop');
    x.wk.kill();
  }
  if (s.kind === 'twoplane') await request(srv.port, 'POST', `/v1/streams/${id}/close`, '{}', { 'content-type': 'application/json' });
  if (results === null) return { problem: 'some readers did not get the whole text within 30 s' };
  const flat = results.flat();
  const short = flat.filter((r) => r.got < total).length;
  const lat = [];
  for (const r of flat) if (r.times) r.times.forEach((t, i) => lat.push(t - pushes[i]));
  lat.sort((a, b) => a - b);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
  const units = w.count * n;
  return {
    user: ((cpu1.user - cpu0.user) * 1e6) / units,
    system: ((cpu1.system - cpu0.system) * 1e6) / units,
    writes: (io1 - io0) / units,
    p50: pct(50),
    p99: pct(99),
    rssPerReader,
    appendsPerS: w.count / produceS,
    short,
  };
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '—');

async function quiet() {
  const wait = Number(process.env.BENCH_WAIT_S ?? 60);
  for (let i = 0; i < wait; i++) {
    if (os.loadavg()[0] < 0.6) return;
    await sleep(1000);
  }
}

const table = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const s of SERVERS) {
    await quiet();
    const srv = await startServer(s);
    try {
      for (const w of WORKLOADS) {
        for (const n of SIZES) {
          const r = await runOnce(s, srv, w, n, round);
          const key = `${s.key}|${w.key}|${n}`;
          (table[key] ??= []).push(r);
          console.log(`  round ${round + 1} ${s.key} ${w.key} ${n} readers: ${r.problem ?? `${f(r.user + r.system, 2)} us/delta/reader, ${f(r.writes, 2)} writes, p99 ${f(r.p99)} ms, ${f(r.appendsPerS, 0)} appends/s, short ${r.short}`}`);
        }
      }
    } finally {
      await stopServer(srv);
    }
  }
}

console.log('');
console.log(`SSE fan-out, one stream, every reader over SSE on loopback, readers in ${WORKERS} processes; means of ${ROUNDS} round(s)`);
console.log('');
console.log('| workload | readers | server | CPU per delta per reader, µs (user + system) | writes per delta per reader | p50 / p99 push to receipt, ms | RSS per idle reader | appends/s | readers short |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
const totals = {};
for (const w of WORKLOADS) {
  for (const n of SIZES) {
    for (const s of SERVERS) {
      const rs = (table[`${s.key}|${w.key}|${n}`] ?? []).filter((r) => !r.problem);
      if (rs.length === 0) {
        console.log(`| ${w.key} | ${n} | ${s.label} | failed | | | | | |`);
        continue;
      }
      const m = (k) => mean(rs.map((r) => r[k]));
      totals[`${s.key}|${w.key}|${n}`] = m('user') + m('system');
      console.log(
        `| ${w.count} appends of ${w.len} at ${w.rate}/s | ${n} | ${s.label} | ${f(m('user') + m('system'), 2)} (${f(m('user'), 2)} + ${f(m('system'), 2)}) | ${f(m('writes'), 3)} | ${f(m('p50'))} / ${f(m('p99'))} | ${f(m('rssPerReader') / 1024, 1)} KiB | ${f(m('appendsPerS'), 0)} | ${rs.reduce((a, r) => a + r.short, 0)} |`,
      );
    }
  }
}
console.log('');
console.log('Ratios (this run): total server CPU per delta per reader, the other over twoplane');
for (const w of WORKLOADS) {
  for (const n of SIZES) {
    const tp = totals[`twoplane|${w.key}|${n}`];
    // Each round's own ratio beside the mean's: a round's servers ran minutes apart on one machine.
    const own = (key) => (table[`${key}|${w.key}|${n}`] ?? []).map((r) => (r.problem ? NaN : r.user + r.system));
    const rounds = (key) => {
      const ratios = own(key).map((x, i) => x / own('twoplane')[i]).filter(Number.isFinite);
      return ROUNDS > 1 ? ` (rounds: ${ratios.map((x) => f(x, 2)).join(', ')})` : '';
    };
    const parts = SERVERS.filter((s) => s.key !== 'twoplane').map((s) => `${s.key} ${f(totals[`${s.key}|${w.key}|${n}`] / tp, 2)}x${rounds(s.key)}`);
    console.log(`  ${w.key}, ${n} readers: ${parts.join(', ')}`);
  }
}
console.log('');
console.log(`Conditions: ${os.cpus()[0]?.model ?? '?'} x ${os.cpus().length}, Linux ${os.release()}, Node ${process.version}; twoplane on SQLite in /tmp, the peers in memory; load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' / ')}`);
process.exit(0);
