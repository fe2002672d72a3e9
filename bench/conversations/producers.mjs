// One producer process of bench/conversations/run.mjs: produces a share of the streams.
//
// Over IPC it is told { type: 'setup', kind, base, mode, port, streams: [{ idx, id, startMs,
// sampled }], n, rate, maxSockets } and answers `created` once every stream exists (twoplane's
// open with create, a Durable Streams PUT). Then { type: 'go', t0 }: stream `idx` sends delta i
// at t0 + startMs + i / rate (or as soon as its previous request has answered, when it is behind),
// one request per delta (`append`: twoplane's append?offset=N, a Durable Streams POST with the
// idempotent producer's headers) or as one chunk each of a single streaming body (`body`, twoplane
// only), then closes the stream. It answers `produced` with what it measured: deltas taken,
// per-10 ms counts of them, the send time of each delta of a sampled stream, how late the sends
// were against the schedule, the largest seq - durableSeq twoplane answered, and every error.
import http from 'node:http';
import { RawPool } from './rawhttp.mjs';
import { now, sleep, deltaText, DELTA_LEN, protocolOf, Buckets } from './protocol.mjs';

let job = null;
let pool_ = null;

/** One request on the keep-alive pool (rawhttp.mjs); `onSent` is called as it is written. */
function request(port, spec, onSent) {
  return pool_.request(spec, onSent);
}

/** Runs `fn` over `items` with at most `limit` at once. */
async function pool(items, limit, fn) {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await fn(item);
    }
  });
  await Promise.all(workers);
}

const out = {
  taken: 0,
  requests: 0,
  errors: [],
  errorCount: 0,
  maxUndurable: 0,
  lateness: [],
  sends: {},
  closed: 0,
  firstSend: Infinity,
  lastTaken: 0,
};

function fail(st, what) {
  out.errorCount += 1;
  if (out.errors.length < 10) out.errors.push(`${st.id}: ${what}`);
}

function noteAnswer(body) {
  try {
    const a = JSON.parse(body);
    if (Number.isFinite(a.seq) && Number.isFinite(a.durableSeq)) out.maxUndurable = Math.max(out.maxUndurable, a.seq - a.durableSeq);
  } catch {
    // not JSON: nothing to note
  }
}

async function produceRequests(st, proto, t0, interval, buckets) {
  const sends = st.sampled ? (out.sends[st.idx] = []) : null;
  for (let i = 0; i < job.n; i++) {
    const due = t0 + st.startMs + i * interval;
    const wait = due - now();
    if (wait > 0) await sleep(wait);
    const late = now() - due;
    if (out.lateness.length < 200_000) out.lateness.push(late);
    let sentAt = 0;
    const r = await request(job.port, proto.append(st.id, i * DELTA_LEN, i, deltaText(st.idx, i)), () => {
      sentAt = now();
    });
    out.requests += 1;
    if (r.status !== 200 && r.status !== 204) {
      fail(st, `append ${i}: ${r.status} ${r.body.slice(0, 200)}`);
      return false;
    }
    const t = now();
    if (sends) sends.push(sentAt || t);
    out.firstSend = Math.min(out.firstSend, sentAt || t);
    out.lastTaken = Math.max(out.lastTaken, t);
    out.taken += 1;
    buckets.add(t);
    if (job.kind === 'twoplane') noteAnswer(r.body);
  }
  return true;
}

/** One chunked request body per stream (twoplane's /body): each delta one write, one chunk. */
function produceBody(st, proto, t0, interval, buckets) {
  const sends = st.sampled ? (out.sends[st.idx] = []) : null;
  return new Promise((resolve) => {
    const spec = proto.body(st.id);
    let settled = false;
    const done = (ok, what) => {
      if (settled) return;
      settled = true;
      if (!ok) fail(st, what);
      resolve(ok);
    };
    const req = http.request({ host: '127.0.0.1', port: job.port, method: spec.method, path: spec.path, agent: bodyAgent, headers: spec.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (s) => (body += s));
      res.on('end', () => {
        if (res.statusCode !== 200) return done(false, `body: ${res.statusCode} ${body.slice(0, 200)}`);
        noteAnswer(body);
        done(true);
      });
    });
    req.on('error', (e) => done(false, `body: ${e.message}`));
    req.setNoDelay(true);
    out.requests += 1;
    (async () => {
      for (let i = 0; i < job.n && !settled; i++) {
        const due = t0 + st.startMs + i * interval;
        const wait = due - now();
        if (wait > 0) await sleep(wait);
        const t = now();
        if (out.lateness.length < 200_000) out.lateness.push(t - due);
        // Written at once: the body has its own connection; when the socket is full, wait for it.
        const flushed = req.write(deltaText(st.idx, i));
        if (sends) sends.push(t);
        out.firstSend = Math.min(out.firstSend, t);
        out.lastTaken = Math.max(out.lastTaken, t);
        out.taken += 1;
        buckets.add(t);
        if (!flushed) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })();
  });
}

process.on('message', async (m) => {
  if (m === null || typeof m !== 'object') return;
  if (m.type === 'setup') {
    job = m;
    pool_ = new RawPool(job.port, job.maxSockets);
    const proto = protocolOf(job.kind, job.base);
    const createErrors = [];
    await pool(job.streams, 32, async (st) => {
      const r = await request(job.port, proto.create(st.id));
      if (r.status >= 300 || r.status === 0) createErrors.push(`${st.id}: create ${r.status} ${r.body.slice(0, 200)}`);
    });
    process.send({ type: 'created', errors: createErrors.slice(0, 10), errorCount: createErrors.length });
  } else if (m.type === 'go') {
    const proto = protocolOf(job.kind, job.base);
    const buckets = new Buckets(m.t0);
    const interval = 1000 / job.rate;
    await Promise.all(
      job.streams.map(async (st) => {
        const ok = job.mode === 'body' ? await produceBody(st, proto, m.t0, interval, buckets) : await produceRequests(st, proto, m.t0, interval, buckets);
        if (!ok) return;
        const r = await request(job.port, proto.close(st.id, job.n));
        if (r.status === 200 || r.status === 204) out.closed += 1;
        else fail(st, `close: ${r.status} ${r.body.slice(0, 200)}`);
      }),
    );
    out.lateness.sort((a, b) => a - b);
    const q = (p) => out.lateness[Math.min(out.lateness.length - 1, Math.floor(p * out.lateness.length))] ?? NaN;
    process.send({
      type: 'produced',
      taken: out.taken,
      requests: out.requests,
      closed: out.closed,
      errors: out.errors,
      errorCount: out.errorCount,
      maxUndurable: out.maxUndurable,
      lateP50: q(0.5),
      lateP99: q(0.99),
      lateMax: out.lateness.at(-1) ?? NaN,
      firstSend: out.firstSend,
      lastTaken: out.lastTaken,
      buckets: buckets.counts,
      sends: out.sends,
    });
  } else if (m.type === 'stop') {
    process.exit(0);
  }
});

const bodyAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
process.on('disconnect', () => process.exit(0));
// Never outlive the run by much, whatever happens to the coordinator.
setTimeout(() => process.exit(3), 6 * 60 * 60 * 1000).unref();
