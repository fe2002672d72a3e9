// One reader process of bench/conversations/run.mjs: SSE readers of a share of the streams.
//
// Over IPC it is told { type: 'setup', kind, base, port, readers: [{ idx, id, k, sampled }], n }
// and connects them (at most 100 waiting for a response head at once), answering `connected` when
// every one has its head (or failed). { type: 'go', t0 } starts the per-10 ms delivery counts.
// Each reader checks every piece of text it receives against the exact text at the place it
// lands, and is done when it holds all of it; a reader whose response ends early reconnects from what it
// holds (twoplane: `from=` the units held; Durable Streams: the last control event's offset and
// cursor), at most 20 times. A twoplane reader goes on after its text until the stream's `end`
// frame (whose `seq`, the durable length, must be the whole text), and notes for each delta the
// time from its receipt to the receipt of the first `durable` or `end` frame that covers it (the
// durable lag as a reader learns it), in 1 ms bins. When every reader has finished it answers
// `done`; { type: 'report' } asks for the results: mismatches, failures, reconnects, the receipt
// time of each delta of the sampled streams' readers, and the durable lags.
import http from 'node:http';
import { now, sleep, streamText, DELTA_LEN, protocolOf, SseSplitter, Buckets } from './protocol.mjs';

const MAX_RECONNECTS = 20;
const MAX_WAITING_HEADS = 100;

let job = null;
let proto = null;
let buckets = null;
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const readers = [];
let finished = 0;
let stopping = false;

function finish(r, verdict) {
  if (r.verdict) return;
  r.verdict = verdict;
  r.req?.destroy();
  finished += 1;
  if (finished === readers.length) process.send({ type: 'done' });
}

/** Text arrived for reader `r`: check it continues the expected text, note the deltas it completes. */
function received(r, text) {
  const t = now();
  const before = r.held;
  // Each piece must be the expected text at the place it lands: pieces in order, all matching,
  // up to exactly the expected length, are exactly the expected text.
  if (before + text.length > r.expected.length) return finish(r, `mismatch: ${before + text.length} units, ${r.expected.length} expected`);
  if (!r.expected.startsWith(text, before)) return finish(r, `mismatch at unit ${before + firstDiff(text, r.expected.slice(before, before + text.length))}`);
  r.held += text.length;
  const d0 = Math.floor(before / DELTA_LEN);
  const d1 = Math.floor(r.held / DELTA_LEN);
  if (d1 > d0) {
    if (buckets) buckets.add(t, d1 - d0);
    if (r.times) for (let d = d0; d < d1; d++) r.times.push(t);
    if (r.got) for (let d = d0; d < d1; d++) r.got.push(t);
  }
  // A twoplane reader waits for the stream's end frame (it says what is durable).
  if (r.held === r.expected.length && job.kind !== 'twoplane') finish(r, 'ok');
}

/** Durable lags, in 1 ms bins: bin -> count. */
const durableLags = new Map();

/** A frame said the first `seq` units are durable: each delta held and not yet covered gets its lag. */
function covered(r, seq) {
  const t = now();
  const upTo = Math.min(Math.floor(seq / DELTA_LEN), r.got.length);
  for (; r.covered < upTo; r.covered++) {
    const bin = Math.max(0, Math.floor(t - r.got[r.covered]));
    durableLags.set(bin, (durableLags.get(bin) ?? 0) + 1);
  }
}

function firstDiff(a, b) {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i;
}

function onEvent(r, event, data) {
  if (r.verdict) return;
  if (job.kind === 'twoplane') {
    let f;
    try {
      f = JSON.parse(data);
    } catch {
      return finish(r, `bad frame ${data.slice(0, 80)}`);
    }
    if (f.type === 'chunk') {
      const have = r.held;
      if (f.from > have) return finish(r, `gap: chunk from ${f.from}, ${have} held`);
      if (f.seq > have) received(r, f.text.slice(have - f.from));
    } else if (f.type === 'durable') {
      covered(r, f.seq);
    } else if (f.type === 'end' && r.held === r.expected.length && f.seq === r.held) {
      covered(r, f.seq);
      return finish(r, 'ok');
    } else if (f.type === 'end' || f.type === 'stale' || f.type === 'absent') {
      return finish(r, `${f.type} frame at ${r.held} of ${r.expected.length} units`);
    }
  } else if (event === 'data') {
    received(r, data);
  } else if (event === 'control') {
    try {
      const c = JSON.parse(data);
      if (c.streamNextOffset !== undefined) r.offset = c.streamNextOffset;
      if (c.streamCursor !== undefined) r.cursor = c.streamCursor;
      if (c.streamClosed && !r.verdict) finish(r, `closed at ${r.held} of ${r.expected.length} units`);
    } catch {
      finish(r, `bad control event ${data.slice(0, 80)}`);
    }
  }
}

function connect(r, first) {
  return new Promise((resolve) => {
    const path = job.kind === 'twoplane' ? proto.read(r.id, r.held) : proto.read(r.id, r.offset, r.cursor);
    let headed = false;
    const req = http.get({ host: '127.0.0.1', port: job.port, path, agent, headers: { accept: 'text/event-stream' } }, (res) => {
      headed = true;
      if (res.statusCode !== 200) {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (s) => (body += s));
        res.on('end', () => finish(r, `read answered ${res.statusCode} ${body.slice(0, 120)}`));
        res.on('error', () => finish(r, `read answered ${res.statusCode}`));
        return resolve();
      }
      resolve();
      res.setEncoding('utf8');
      const sse = new SseSplitter((event, data) => onEvent(r, event, data));
      res.on('data', (s) => sse.push(s));
      const ended = () => {
        if (r.verdict || stopping || r.req !== req) return;
        reconnect(r);
      };
      res.on('end', ended);
      res.on('close', ended);
      res.on('error', ended);
    });
    r.req = req;
    req.on('error', (e) => {
      if (!headed) {
        if (first) finish(r, `connect: ${e.message}`);
        else reconnect(r);
        return resolve();
      }
    });
  });
}

async function reconnect(r) {
  if (r.verdict || stopping) return;
  r.req = null;
  if (r.reconnects >= MAX_RECONNECTS) return finish(r, `gave up after ${r.reconnects} reconnects at ${r.held} units`);
  r.reconnects += 1;
  await sleep(100);
  if (!r.verdict && !stopping) connect(r, false);
}

process.on('message', async (m) => {
  if (m === null || typeof m !== 'object') return;
  if (m.type === 'setup') {
    job = m;
    proto = protocolOf(job.kind, job.base);
    const texts = new Map();
    for (const x of job.readers) {
      if (!texts.has(x.idx)) texts.set(x.idx, streamText(x.idx, job.n));
      const got = job.kind === 'twoplane' ? [] : null;
      readers.push({ ...x, expected: texts.get(x.idx), held: 0, offset: '-1', cursor: '', times: x.sampled ? [] : null, got, covered: 0, reconnects: 0, verdict: null, req: null });
    }
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(MAX_WAITING_HEADS, readers.length) }, async () => {
        while (next < readers.length) await connect(readers[next++], true);
      }),
    );
    const failed = readers.filter((r) => r.verdict);
    process.send({ type: 'connected', failed: failed.length, reasons: failed.slice(0, 5).map((r) => `${r.id}/${r.k}: ${r.verdict}`) });
    if (readers.length === 0) process.send({ type: 'done' });
  } else if (m.type === 'go') {
    buckets = new Buckets(m.t0);
  } else if (m.type === 'report') {
    const bad = readers.filter((r) => r.verdict !== 'ok');
    const times = {};
    for (const r of readers) if (r.times) times[`${r.idx}/${r.k}`] = r.times;
    process.send({
      type: 'report',
      readers: readers.length,
      ok: readers.length - bad.length,
      mismatches: bad.filter((r) => r.verdict?.startsWith('mismatch') || r.verdict?.startsWith('gap')).length,
      unfinished: bad.filter((r) => r.verdict === null).length,
      failures: bad.slice(0, 8).map((r) => `${r.id}/${r.k}: ${r.verdict ?? `unfinished at ${r.held} of ${r.expected.length} units`}`),
      reconnects: readers.reduce((a, r) => a + r.reconnects, 0),
      buckets: buckets?.counts ?? [],
      times,
      durableLags: [...durableLags],
    });
  } else if (m.type === 'stop') {
    stopping = true;
    for (const r of readers) r.req?.destroy();
    process.exit(0);
  }
});

process.on('disconnect', () => process.exit(0));
setTimeout(() => process.exit(3), 6 * 60 * 60 * 1000).unref();
