// Many conversations on one instance, against the peers, measured in one run (prints numbers; not
// a test): S streams, each read by R SSE readers (R = 1 and 2), each stream getting n deltas of 4
// characters at r deltas a second, the streams starting at random moments spread over one second
// (independent conversations, not one burst). Sizes: 100 streams at 50/s (1,000 deltas each),
// 1,000 at 5/s (100 each), 10,000 at 5/s (100 each). Producers run in their own processes
// (BENCH_PRODUCERS, 4; per-delta requests go over a small keep-alive HTTP/1.1 client, rawhttp.mjs,
// which costs a fraction of Node's `http`), readers in theirs (BENCH_READER_PROCS, 4; Node's `http`),
// all on 127.0.0.1.
//
// Servers, each started afresh for every size, R and round, on 127.0.0.1, a free port and a fresh
// temporary directory:
//   twoplane       `twoplane serve` (release binary, SQLite in the temporary directory), one
//                  append?offset=N request per delta (POST /v1/streams/{id}/open, append, close);
//   twoplane-body  the same server, one chunked POST /v1/streams/{id}/body per stream, each delta
//                  one chunk, then close;
//   electric-mem   Electric's Rust Durable Streams server (crates.io `durable-streams` 0.1.5,
//                  binary `durable-streams-server`), `--durability memory`;
//   electric-wal   the same, `--durability wal` (its default: group-commit fdatasync per append);
//   ds-rust        the community Rust Durable Streams server (`durable-streams-server` 0.3.0), in
//                  memory (its default storage).
// The Durable Streams producers send what @durable-streams/client's IdempotentProducer sends
// (protocol.mjs says what and where it was checked); their readers use `?offset=-1&live=sse`.
// twoplane gets `--max-connections-per-ip` and `--max-subscribers-per-ip` raised to its
// connection bound, since every reader here comes from 127.0.0.1 (as behind a reverse proxy).
//
// Printed per server, size and R: server CPU (user + system, /proc/<pid>/stat) per appended delta
// and per delivered delta (delta x reader) over the steady part (from 1.25 s after the first
// stream started, when all have, to 0.25 s before the first stream's last scheduled delta); write
// system calls per delivered delta (/proc/<pid>/io syscw); context switches per appended delta (every
// thread's, voluntary and not, /proc/<pid>/task/*/status); p50 / p99 from a delta's send (its
// request written, or its chunk written) to its receipt by a reader (streams sampled so that at
// most 500 are; one clock: performance.timeOrigin + performance.now() in every process); RSS per
// open stream and per idle reader (RSS after creating the streams, then with every reader
// connected and idle, each minus the one before, divided); twoplane's largest seq - durableSeq
// (append answers, and GET /v1/streams/{id} of a few streams every 500 ms) and its durable lag
// (p50 / p99 / max over every delta of every reader: from the delta's receipt to the receipt of
// the first `durable` or `end` frame that covers it, readers.mjs); whether GET /readyz,
// polled every 100 ms, always answered 200, and its slowest answer; the achieved against the
// asked rate of appends over the steady part (a producer that falls behind sends late and says
// so: the lateness p99 of the sends against their schedule); then each peer's CPU per delivered
// delta over twoplane's. Every reader checks every piece of text against the exact text at its
// place: any mismatch, short reader or producer error is printed loudly and the run exits 1.
// A case whose sockets do not fit the open-file limit (server side: S x R readers, the
// producers' connections, and electric's one open file per stream) is skipped and says why.
//
// Env: TWOPLANE_BIN, DS_BIN (ds-rust), DS_ELECTRIC_BIN; TWOPLANE_BASE_BIN (and TWOPLANE_BASE_LABEL):
// an older twoplane build run beside the current one as `twoplane-base`; BENCH_SIZES (comma list of stream counts:
// 100,1000,10000), BENCH_R (comma list: 1,2), BENCH_SERVERS (comma list of the keys above),
// BENCH_ROUNDS (1; means over rounds), BENCH_QUICK=1 (100 and 1,000 streams, R = 1, a quarter of
// the deltas), BENCH_DELTAS (n for every size), BENCH_PRODUCERS, BENCH_READER_PROCS,
// BENCH_PRODUCER_SOCKETS (keep-alive connections per producer process, 256), BENCH_DRAIN_S (how
// long readers may take after the last scheduled delta, 60), BENCH_WAIT_S (at most this long
// before each case waiting for a 1-minute load average under 1.0, 15), BENCH_PIDFILE (each
// server's pid and temporary directory are appended to it, for the script's cleanup).
import { spawn, fork } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { now, sleep, protocolOf, countBetween, quantile } from './protocol.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const PRODUCERS = Number(process.env.BENCH_PRODUCERS ?? 4);
const READER_PROCS = Number(process.env.BENCH_READER_PROCS ?? 4);
const PRODUCER_SOCKETS = Number(process.env.BENCH_PRODUCER_SOCKETS ?? 256);
const DRAIN_S = Number(process.env.BENCH_DRAIN_S ?? 60);
const WAIT_S = Number(process.env.BENCH_WAIT_S ?? 15);
const TICK = 100; // CLK_TCK on Linux
const MAX_SAMPLED = 500;
const list = (v) => (v ? v.split(',').map((x) => x.trim()).filter(Boolean) : null);

const SIZES = [
  { S: 100, rate: 50, n: 1000 },
  { S: 1000, rate: 5, n: 100 },
  { S: 10000, rate: 5, n: 100 },
]
  .map((z) => ({ ...z, n: Number(process.env.BENCH_DELTAS ?? (QUICK ? Math.ceil(z.n / 4) : z.n)) }))
  .filter((z) => (list(process.env.BENCH_SIZES) ?? (QUICK ? ['100', '1000'] : null) ?? [String(z.S)]).includes(String(z.S)));
const RS = (list(process.env.BENCH_R) ?? (QUICK ? ['1'] : ['1', '2'])).map(Number);

const SERVERS = [
  { key: 'twoplane', label: 'twoplane, a request per delta', kind: 'twoplane', mode: 'append' },
  { key: 'twoplane-body', label: 'twoplane, a streaming body per stream', kind: 'twoplane', mode: 'body' },
  { key: 'electric-mem', label: 'Electric durable-streams 0.1.5, --durability memory', kind: 'electric', durability: 'memory', mode: 'append' },
  { key: 'electric-wal', label: 'Electric durable-streams 0.1.5, --durability wal', kind: 'electric', durability: 'wal', mode: 'append' },
  { key: 'ds-rust', label: 'durable-streams-server 0.3.0 (memory)', kind: 'ds-rust', mode: 'append' },
  // An older build of twoplane beside the current one (TWOPLANE_BASE_BIN), for a before/after of
  // a change in one run; only when that variable is set.
  ...(process.env.TWOPLANE_BASE_BIN
    ? [{ key: 'twoplane-base', label: `twoplane at ${process.env.TWOPLANE_BASE_LABEL ?? 'TWOPLANE_BASE_BIN'}, a request per delta`, kind: 'twoplane', mode: 'append', bin: process.env.TWOPLANE_BASE_BIN }]
    : []),
].filter((s) => !process.env.BENCH_SERVERS || list(process.env.BENCH_SERVERS).includes(s.key));

const BINS = { twoplane: process.env.TWOPLANE_BIN, electric: process.env.DS_ELECTRIC_BIN, 'ds-rust': process.env.DS_BIN };
for (const s of SERVERS) {
  if (!BINS[s.kind]) {
    console.error(`bench: no binary for ${s.key}: set ${s.kind === 'twoplane' ? 'TWOPLANE_BIN' : s.kind === 'electric' ? 'DS_ELECTRIC_BIN' : 'DS_BIN'} (scripts/bench-conversations.sh does)`);
    process.exit(2);
  }
}

// ---------------------------------------------------------------------------------------------
// The server process: /proc readings, start, stop.

function cpuOf(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(f[11]) / TICK, system: Number(f[12]) / TICK };
}
// Context switches of every thread of the process (voluntary: it waited; involuntary: preempted).
function ctxOf(pid) {
  let n = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${task}/status`, 'utf8');
      n += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(st)?.[1] ?? 0) + Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(st)?.[1] ?? 0);
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return n;
}
const syscwOf = (pid) => Number(/syscw: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))[1]);
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
const openFileLimit = () => Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))[1]);
const portRange = () => {
  const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  return hi - lo + 1;
};

/** The addresses the process listens on (its socket inodes matched against /proc/net/tcp{,6}). */
function listenAddrs(pid) {
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const out = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9])) continue;
      out.push(f[1]);
    }
  }
  return out;
}
const LOOPBACK_LISTEN = /^0100007F:[0-9A-F]{4}$/; // 127.0.0.1, as /proc/net/tcp writes it

/** Is a Rust compiler running on this machine now? (The machine is shared; such rows are marked.) */
function rustcRunning() {
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'rustc') return true;
    } catch {
      // gone
    }
  }
  return false;
}

function get(port, path, timeoutMs = 5000) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (s) => (body += s));
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', () => resolve({ status: 0, body: '' }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: 0, body: e.message }));
  });
}

async function freePort() {
  return new Promise((resolve) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

const running = new Set();
const dirs = new Set();
function killAll() {
  for (const child of running) {
    try {
      child.kill('SIGKILL');
    } catch {
      // gone
    }
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => process.exit(130));

async function startServer(s, fdLimit) {
  const port = await freePort();
  const dir = mkdtempSync(join(os.tmpdir(), `twoplane-bench-conversations-${s.key}-`));
  let args = [];
  let env = { ...process.env };
  if (s.kind === 'twoplane') {
    const maxConn = String(fdLimit - 256);
    args = ['serve', '--listen', `127.0.0.1:${port}`, '--db', join(dir, 'x.db'), '--max-connections-per-ip', maxConn, '--max-subscribers-per-ip', maxConn];
    env.RUST_LOG = 'warn';
  } else if (s.kind === 'electric') {
    args = ['--host', '127.0.0.1', '--port', String(port), '--data-dir', join(dir, 'data'), '--durability', s.durability];
  } else {
    env = { ...env, DS_SERVER__BIND_ADDRESS: `127.0.0.1:${port}`, DS_STORAGE__DATA_DIR: join(dir, 'data'), DS_OBSERVABILITY__RUST_LOG: 'error', RUST_LOG: 'error' };
  }
  dirs.add(dir);
  if (process.env.BENCH_PIDFILE) appendFileSync(process.env.BENCH_PIDFILE, `dir ${dir}\n`);
  const child = spawn(s.bin ?? BINS[s.kind], args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  if (process.env.BENCH_PIDFILE) appendFileSync(process.env.BENCH_PIDFILE, `${child.pid}\n`);
  let log = '';
  const keep = (b) => {
    log = (log + b.toString()).slice(-4000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((r) => child.once('exit', (code, sig) => r(`${code ?? sig}`)));
  const srv = { s, port, child, dir, exited, log: () => log, exitedEarly: null };
  exited.then((how) => {
    running.delete(child);
    srv.exitedEarly ??= how;
  });
  const health = protocolOf(s.kind === 'twoplane' ? 'twoplane' : 'ds', s.kind === 'electric' ? '' : '/v1/stream').health;
  for (let i = 0; i < 200; i++) {
    if (srv.exitedEarly) break;
    const r = await get(port, health, 1000);
    if (r.status === 200) {
      const addrs = listenAddrs(child.pid);
      if (addrs.length === 0 || !addrs.every((a) => LOOPBACK_LISTEN.test(a))) {
        await stopServer(srv);
        throw new Error(`${s.key} listens on ${addrs.join(', ') || 'nothing found'}, not 127.0.0.1 only: stopped`);
      }
      return srv;
    }
    await sleep(50);
  }
  await stopServer(srv);
  throw new Error(`${s.key} did not start: ${log.slice(-1000)}`);
}

async function stopServer(srv) {
  srv.exitedEarly ??= 'stopped';
  if (running.has(srv.child)) {
    srv.child.kill('SIGTERM');
    const killed = await Promise.race([srv.exited.then(() => true), sleep(15_000).then(() => false)]);
    if (!killed) {
      srv.child.kill('SIGKILL');
      await srv.exited;
    }
  }
  rmSync(srv.dir, { recursive: true, force: true });
  dirs.delete(srv.dir);
}

// ---------------------------------------------------------------------------------------------
// Workers.

function startWorker(file) {
  const w = fork(join(HERE, file), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map();
  w.on('message', (m) => {
    const f = waiting.get(m.type);
    if (f) {
      waiting.delete(m.type);
      f(m);
    }
  });
  const gone = new Promise((r) => w.once('exit', r));
  return {
    w,
    gone,
    next: (type, ms) =>
      Promise.race([
        new Promise((r) => waiting.set(type, r)),
        gone.then(() => ({ type, lost: `the ${file} process exited` })),
        sleep(ms).then(() => ({ type, lost: `no ${type} within ${Math.round(ms / 1000)} s` })),
      ]),
    send: (m) => w.connected && w.send(m),
    stop: async () => {
      if (w.connected) w.send({ type: 'stop' });
      const done = await Promise.race([gone.then(() => true), sleep(3000).then(() => false)]);
      if (!done) w.kill('SIGKILL');
    },
  };
}

/** A deterministic generator (so every server gets the same start times). */
function lcg(seed) {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

// ---------------------------------------------------------------------------------------------
// One case: a server, a size, R.

async function runCase(s, z, R, round, fdLimit) {
  const { S, rate, n } = z;
  const interval = 1000 / rate;
  const producerSockets = s.mode === 'body' ? S : Math.min(S, PRODUCERS * PRODUCER_SOCKETS);
  const fdsNeeded = S * R + producerSockets + (s.kind === 'electric' ? S : 0) + 300;
  if (fdsNeeded > fdLimit) return { skipped: `needs about ${fdsNeeded} descriptors in the server, the open-file limit is ${fdLimit}` };
  const portsNeeded = S * R + producerSockets + 500;
  if (portsNeeded > portRange()) return { skipped: `needs about ${portsNeeded} loopback connections to one port, the ephemeral port range has ${portRange()}` };

  const srv = await startServer(s, fdLimit);
  const pid = srv.child.pid;
  const base = s.kind === 'electric' ? '' : '/v1/stream';
  const kind = s.kind === 'twoplane' ? 'twoplane' : 'ds';
  const tag = `c${process.pid}r${round}s${S}x${R}`;
  const random = lcg(S * 31 + R);
  const sampleEvery = Math.max(1, Math.ceil(S / MAX_SAMPLED));
  const streams = Array.from({ length: S }, (_, i) => ({ idx: i, id: `${tag}-${i}`, startMs: random() * 1000, sampled: i % sampleEvery === 0 }));
  const producers = [];
  const readers = [];
  const problems = [];
  const result = { S, R, rate, n };
  let compiling = false;
  const compileWatch = setInterval(() => {
    compiling ||= rustcRunning();
  }, 1000);
  try {
    await sleep(500);
    const rss0 = rssOf(pid);
    // Create every stream.
    for (let p = 0; p < PRODUCERS; p++) {
      const mine = streams.filter((st) => st.idx % PRODUCERS === p);
      if (mine.length === 0) continue;
      const w = startWorker('producers.mjs');
      producers.push(w);
      w.send({ type: 'setup', kind, base, mode: s.mode, port: srv.port, streams: mine, n, rate, maxSockets: PRODUCER_SOCKETS });
    }
    for (const m of await Promise.all(producers.map((w) => w.next('created', 300_000)))) {
      if (m.lost) problems.push(`producer: ${m.lost}`);
      else if (m.errorCount > 0) problems.push(`${m.errorCount} creates failed: ${m.errors.join('; ')}`);
    }
    if (problems.length) throw new Error(problems.join('; '));
    await sleep(1000);
    const rss1 = rssOf(pid);
    // Connect every reader; then let them idle.
    const all = [];
    for (const st of streams) for (let k = 0; k < R; k++) all.push({ idx: st.idx, id: st.id, k, sampled: st.sampled });
    for (let q = 0; q < READER_PROCS; q++) {
      const mine = all.filter((_, j) => j % READER_PROCS === q);
      if (mine.length === 0) continue;
      const w = startWorker('readers.mjs');
      readers.push(w);
      w.send({ type: 'setup', kind, base, port: srv.port, readers: mine, n });
    }
    for (const m of await Promise.all(readers.map((w) => w.next('connected', 300_000)))) {
      if (m.lost) problems.push(`readers: ${m.lost}`);
      else if (m.failed > 0) problems.push(`${m.failed} readers could not connect: ${m.reasons.join('; ')}`);
    }
    if (problems.length) throw new Error(problems.join('; '));
    await sleep(2000);
    const rss2 = rssOf(pid);
    result.rssPerStream = (rss1 - rss0) / S;
    result.rssPerReader = (rss2 - rss1) / (S * R);

    // Produce.
    const t0 = now() + 300;
    const lastDue = t0 + 1000 + (n - 1) * interval;
    let A = t0 + 1250;
    let B = t0 + (n - 1) * interval - 250;
    if (B - A < 1000) {
      A = t0;
      B = lastDue;
    }
    const readersDone = readers.map((w) => w.next('done', lastDue - now() + DRAIN_S * 1000));
    const produced = producers.map((w) => w.next('produced', lastDue - now() + DRAIN_S * 1000 + 120_000));
    for (const w of readers) w.send({ type: 'go', t0 });
    for (const w of producers) w.send({ type: 'go', t0 });

    // The probes: /readyz every 100 ms; a few streams' seq - durableSeq every 500 ms (twoplane).
    let probing = true;
    const ready = { polls: 0, bad: 0, slowest: 0, statuses: new Set() };
    let polledUndurable = 0;
    const probes = [];
    if (s.kind === 'twoplane') {
      probes.push(
        (async () => {
          while (probing) {
            const t = now();
            const r = await get(srv.port, '/readyz', 5000);
            const took = now() - t;
            ready.polls += 1;
            ready.slowest = Math.max(ready.slowest, took);
            if (r.status !== 200) {
              ready.bad += 1;
              let kind = '';
              try {
                kind = ` ${JSON.parse(r.body).kind}`;
              } catch {
                // no JSON body (a timeout, a refused connection)
              }
              ready.statuses.add(`${r.status}${kind}`);
            }
            await sleep(100 - took);
          }
        })(),
        (async () => {
          const watched = streams.filter((_, i) => i % Math.max(1, Math.floor(S / 5)) === 0).slice(0, 5);
          while (probing) {
            for (const st of watched) {
              const r = await get(srv.port, `/v1/streams/${st.id}`, 5000);
              try {
                const live = JSON.parse(r.body).live;
                if (live) polledUndurable = Math.max(polledUndurable, live.seq - live.durableSeq);
              } catch {
                // not answered: nothing to note
              }
            }
            await sleep(500);
          }
        })(),
      );
    }

    // The steady window's readings.
    const reading = () => ({ t: now(), ...cpuOf(pid), syscw: syscwOf(pid), ctx: ctxOf(pid) });
    const atA = sleep(A - now()).then(reading);
    const atB = sleep(B - now()).then(reading);

    const prod = await Promise.all(produced);
    const rdone = await Promise.all(readersDone);
    const ra = await atA;
    const rb = await atB;
    probing = false;
    await Promise.all(probes);
    for (const w of readers) w.send({ type: 'report' });
    const reports = await Promise.all(readers.map((w) => w.next('report', 60_000)));

    // Producers.
    let taken = 0;
    let firstSend = Infinity;
    let lastTaken = 0;
    const sends = {};
    result.maxUndurable = polledUndurable;
    result.lateP99 = 0;
    for (const m of prod) {
      if (m.lost) {
        problems.push(`producer: ${m.lost}`);
        continue;
      }
      if (m.errorCount > 0) problems.push(`${m.errorCount} producer errors: ${m.errors.join('; ')}`);
      taken += m.taken;
      firstSend = Math.min(firstSend, m.firstSend);
      lastTaken = Math.max(lastTaken, m.lastTaken);
      result.maxUndurable = Math.max(result.maxUndurable, m.maxUndurable);
      result.lateP99 = Math.max(result.lateP99, m.lateP99);
      Object.assign(sends, m.sends);
    }
    if (taken !== S * n) problems.push(`${S * n - taken} of ${S * n} deltas were not taken`);
    // Readers.
    let ok = 0;
    let mismatches = 0;
    let unfinished = 0;
    result.reconnects = 0;
    const lat = [];
    const lags = new Map();
    for (const d of rdone) if (d.lost) problems.push(`readers: ${d.lost}`);
    for (const m of reports) {
      if (m.lost) {
        problems.push(`readers: ${m.lost}`);
        continue;
      }
      ok += m.ok;
      mismatches += m.mismatches;
      unfinished += m.unfinished;
      result.reconnects += m.reconnects;
      for (const [bin, count] of m.durableLags ?? []) lags.set(bin, (lags.get(bin) ?? 0) + count);
      if (m.ok < m.readers) problems.push(`${m.readers - m.ok} readers without their exact text: ${m.failures.join('; ')}`);
      for (const [key, times] of Object.entries(m.times)) {
        const sent = sends[key.split('/')[0]];
        if (!sent) continue;
        for (let d = 0; d < Math.min(times.length, sent.length); d++) lat.push(times[d] - sent[d]);
      }
    }
    lat.sort((a, b) => a - b);
    result.readersOk = ok;
    result.readers = S * R;
    result.mismatches = mismatches;
    result.unfinished = unfinished;
    result.p50 = quantile(lat, 0.5);
    result.p99 = quantile(lat, 0.99);
    result.durableP50 = binQuantile(lags, 0.5);
    result.durableP99 = binQuantile(lags, 0.99);
    result.durableMax = lags.size ? Math.max(...lags.keys()) : NaN;
    // The steady window.
    const appended = countBetween(prod.filter((m) => !m.lost).map((m) => m.buckets), t0, ra.t, rb.t);
    const delivered = countBetween(reports.filter((m) => !m.lost).map((m) => m.buckets), t0, ra.t, rb.t);
    const user = rb.user - ra.user;
    const system = rb.system - ra.system;
    result.windowS = (rb.t - ra.t) / 1000;
    result.appendUser = (user * 1e6) / appended;
    result.appendSystem = (system * 1e6) / appended;
    result.deliverUser = (user * 1e6) / delivered;
    result.deliverSystem = (system * 1e6) / delivered;
    result.writes = (rb.syscw - ra.syscw) / delivered;
    result.switches = (rb.ctx - ra.ctx) / appended;
    result.cpuShare = (user + system) / result.windowS;
    result.achieved = appended / result.windowS;
    result.asked = S * rate;
    result.overall = taken / ((lastTaken - firstSend) / 1000);
    result.ready = s.kind === 'twoplane' ? ready : null;
    if (srv.exitedEarly) problems.push(`the server exited during the run (${srv.exitedEarly}): ${srv.log().slice(-500)}`);
  } catch (e) {
    problems.push(e.message);
  } finally {
    clearInterval(compileWatch);
    await Promise.all([...producers, ...readers].map((w) => w.stop()));
    await stopServer(srv);
  }
  result.compiling = compiling;
  result.problems = problems;
  return result;
}

// ---------------------------------------------------------------------------------------------
// The run.

const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const kib = (b) => `${f(b / 1024, 1)} KiB`;
const ratio = (x, y) => (Number.isFinite(x / y) ? `${(x / y).toFixed(2)}x` : '—');
/** The `q` quantile of a histogram of 1 ms bins (bin -> count), as the bin's upper edge. */
function binQuantile(bins, q) {
  const sorted = [...bins].sort((a, b) => a[0] - b[0]);
  const total = sorted.reduce((a, [, c]) => a + c, 0);
  if (total === 0) return NaN;
  let seen = 0;
  for (const [bin, count] of sorted) {
    seen += count;
    if (seen >= q * total) return bin + 1;
  }
  return NaN;
}

async function quiet() {
  for (let i = 0; i < WAIT_S; i++) {
    if (os.loadavg()[0] < 1.0) return;
    await sleep(1000);
  }
}

const fdLimit = openFileLimit();
console.log(`bench conversations: sizes ${SIZES.map((z) => `${z.S} streams x ${z.n} deltas at ${z.rate}/s`).join('; ')}; R ${RS.join(',')}; servers ${SERVERS.map((s) => s.key).join(',')}; ${ROUNDS} round(s); open-file limit ${fdLimit}`);
if (rustcRunning()) console.log('bench conversations: NOTE a rustc is running on this machine now; rows measured while one ran are marked *');

const table = {};
let failed = false;
for (let round = 0; round < ROUNDS; round++) {
  for (const z of SIZES) {
    for (const R of RS) {
      for (const s of SERVERS) {
        await quiet();
        let r;
        try {
          r = await runCase(s, z, R, round, fdLimit);
        } catch (e) {
          r = { problems: [e.message] };
        }
        const key = `${s.key}|${z.S}|${R}`;
        (table[key] ??= []).push(r);
        const head = `  round ${round + 1} ${s.key} ${z.S} streams x${R}:`;
        if (r.skipped) {
          console.log(`${head} SKIPPED: ${r.skipped}`);
          continue;
        }
        if (r.problems.length) {
          failed = true;
          console.log(`${head} !!!!! FAILED: ${r.problems.join(' | ')}`);
        }
        if (Number.isFinite(r.deliverUser)) {
          console.log(
            `${head} ${f(r.deliverUser + r.deliverSystem, 2)} us/delivered, ${f(r.appendUser + r.appendSystem, 2)} us/appended, ${f(r.writes, 3)} writes/delivered, p50/p99 ${f(r.p50)}/${f(r.p99)} ms, ${f(r.achieved, 0)} of ${r.asked}/s, server at ${f(r.cpuShare * 100, 0)} % of a core${Number.isFinite(r.durableP99) ? `, durable lag p99 ${f(r.durableP99, 0)} ms` : ''}${r.compiling ? ', * rustc ran' : ''}`,
          );
        }
      }
    }
  }
}

const good = (key) => (table[key] ?? []).filter((r) => !r.skipped && r.problems.length === 0 && Number.isFinite(r.deliverUser));
console.log('');
console.log(
  `Many conversations on one instance: S streams x R SSE readers, deltas of 4 characters, streams starting over 1 s; producers in ${PRODUCERS} processes, readers in ${READER_PROCS}; ${ROUNDS > 1 ? `means of ${ROUNDS} rounds` : 'one round'}; CPU over the steady part`,
);
console.log('');
console.log(
  '| streams x deltas at rate | R | server | CPU per appended delta, µs (user + sys) | CPU per delivered delta, µs (user + sys) | writes per delivered delta | context switches per appended delta | p50 / p99 send to receipt, ms | RSS per stream | RSS per idle reader | max seq − durableSeq; durable lag p50 / p99 / max, ms | /readyz | achieved / asked deltas/s (send lateness p99) | readers exact |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
const totals = {};
for (const z of SIZES) {
  for (const R of RS) {
    for (const s of SERVERS) {
      const key = `${s.key}|${z.S}|${R}`;
      const all = table[key] ?? [];
      const rs = good(key);
      const sizeCell = `${z.S} x ${z.n} at ${z.rate}/s`;
      if (rs.length === 0) {
        const why = all.find((r) => r.skipped)?.skipped ?? (all.find((r) => r.problems?.length) ? 'FAILED (see above)' : 'not run');
        console.log(`| ${sizeCell} | ${R} | ${s.label} | ${why} | | | | | | | | | | |`);
        continue;
      }
      const m = (k) => mean(rs.map((r) => r[k]));
      totals[key] = m('deliverUser') + m('deliverSystem');
      const ready = s.kind === 'twoplane' ? (rs.every((r) => r.ready.bad === 0) ? `always 200 (${rs.reduce((a, r) => a + r.ready.polls, 0)} polls), slowest ${f(Math.max(...rs.map((r) => r.ready.slowest)))} ms` : `NOT always 200: ${rs.map((r) => `${r.ready.bad} of ${r.ready.polls} (${[...r.ready.statuses].join(',')})`).join(', ')}, slowest ${f(Math.max(...rs.map((r) => r.ready.slowest)))} ms`) : 'n/a';
      const undurable =
        s.kind === 'twoplane'
          ? `${Math.max(...rs.map((r) => r.maxUndurable))}; ${f(m('durableP50'), 0)} / ${f(m('durableP99'), 0)} / ${f(Math.max(...rs.map((r) => r.durableMax)), 0)}`
          : 'n/a';
      const star = rs.some((r) => r.compiling) ? ' *' : '';
      console.log(
        `| ${sizeCell} | ${R} | ${s.label}${star} | ${f(m('appendUser') + m('appendSystem'), 2)} (${f(m('appendUser'), 2)} + ${f(m('appendSystem'), 2)}) | ${f(totals[key], 2)} (${f(m('deliverUser'), 2)} + ${f(m('deliverSystem'), 2)}) | ${f(m('writes'), 3)} | ${f(m('switches'), 2)} | ${f(m('p50'))} / ${f(m('p99'))} | ${kib(m('rssPerStream'))} | ${kib(m('rssPerReader'))} | ${undurable} | ${ready} | ${f(m('achieved'), 0)} / ${z.S * z.rate} (${f(m('lateP99'))} ms) | ${rs.reduce((a, r) => a + r.readersOk, 0)} of ${rs.reduce((a, r) => a + r.readers, 0)}${m('reconnects') > 0 ? `, ${f(m('reconnects'), 0)} reconnects` : ''} |`,
      );
    }
  }
}
console.log('');
console.log('Ratios (this run): server CPU per delivered delta, each peer over twoplane (a request per delta; over the streaming body in brackets)');
for (const z of SIZES) {
  for (const R of RS) {
    const tp = totals[`twoplane|${z.S}|${R}`];
    const tb = totals[`twoplane-body|${z.S}|${R}`];
    const parts = SERVERS.filter((s) => s.kind !== 'twoplane').map((s) => {
      const x = totals[`${s.key}|${z.S}|${R}`];
      return `${s.key} ${ratio(x, tp)}${tb ? ` (${ratio(x, tb)})` : ''}`;
    });
    if (tb && tp) parts.unshift(`twoplane-body ${ratio(tb, tp)}`);
    console.log(`  ${z.S} streams at ${z.rate}/s, R ${R}: ${parts.join(', ') || '—'}`);
  }
}
console.log('');
console.log(
  `Conditions: ${os.cpus()[0]?.model ?? '?'} x ${os.cpus().length}, Linux ${os.release()}, Node ${process.version}; twoplane on SQLite in ${os.tmpdir()}, electric's data dir there too; open-file limit ${fdLimit}; load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' / ')}${Object.values(table).flat().some((r) => r.compiling) ? '; * a rustc ran during that row (shared machine)' : ''}`,
);
if (failed) {
  console.log('');
  console.log('!!!!! SOME CASES FAILED: a mismatch, a short reader or a producer error (see the FAILED lines above)');
}
process.exit(failed ? 1 : 0);
