// What bench/conversations' processes share: the text each stream carries, the paths and headers
// of each server's protocol, the clock, and a small SSE event splitter.
//
// twoplane (docs/server.md, "Producer API" and "The SSE endpoint"):
//   POST /v1/streams/{id}/open {"create":true}, then POST /v1/streams/{id}/append?offset=N per
//   delta (answer {"seq","durableSeq"}) or one chunked POST /v1/streams/{id}/body, then
//   POST /v1/streams/{id}/close; readers GET /api/stream?streamId={id}&from={units held}
//   (open reads: the server listens on loopback and has no read-token secret).
// Durable Streams (both Rust servers; the shapes checked against @durable-streams/client 0.2.7,
// installed by this folder's package.json: src/idempotent-producer.ts and src/stream-api.ts):
//   PUT {base}/{id} with the stream's content type creates it; the IdempotentProducer sends each
//   batch as POST {base}/{id} with `content-type`, `Producer-Id`, `Producer-Epoch` (0 unless
//   restarted) and `Producer-Seq` (0, 1, 2, ... one per batch), the batch's bytes concatenated for
//   a non-JSON stream, and closes with the same headers (the next seq) plus `Stream-Closed: true`.
//   Its batches linger 5 ms: a delta every 20 ms or more is a batch of one, so one POST per delta
//   is what that client sends here. Readers GET {base}/{id}?offset=-1&live=sse; `event: data`
//   carries the text, `event: control` the `streamNextOffset` (and `streamCursor`) a reconnect
//   resumes from (`?offset=...&live=sse&cursor=...`, as the client does). Both servers end an SSE
//   response after 60 s, so their readers reconnect.

export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** Delta `i` of stream `s`: 4 lowercase letters (so UTF-8 bytes, UTF-16 units and characters agree). */
export function deltaText(s, i) {
  let out = '';
  for (let k = 0; k < 4; k++) out += String.fromCharCode(97 + ((s * 7 + i * 3 + k) % 26));
  return out;
}
export const DELTA_LEN = 4;

/** The whole text of stream `s` after `n` deltas. */
export function streamText(s, n) {
  let out = '';
  for (let i = 0; i < n; i++) out += deltaText(s, i);
  return out;
}

/** The server kinds' protocols. `base` is the Durable Streams servers' stream path prefix. */
export const PROTOCOLS = {
  twoplane: {
    health: '/healthz',
    create: (id) => ({ method: 'POST', path: `/v1/streams/${id}/open`, body: '{"create":true}', headers: { 'content-type': 'application/json' } }),
    append: (id, offset, i, text) => ({ method: 'POST', path: `/v1/streams/${id}/append?offset=${offset}`, body: text, headers: { 'content-type': 'text/plain; charset=utf-8' } }),
    body: (id) => ({ method: 'POST', path: `/v1/streams/${id}/body`, headers: { 'content-type': 'text/plain; charset=utf-8' } }),
    close: (id) => ({ method: 'POST', path: `/v1/streams/${id}/close`, body: '', headers: {} }),
    read: (id, from) => `/api/stream?streamId=${id}&from=${from}`,
  },
  ds: (base) => ({
    health: base === '' ? '/health' : '/healthz',
    create: (id) => ({ method: 'PUT', path: `${base}/${id}`, body: '', headers: { 'content-type': 'text/plain' } }),
    append: (id, offset, i, text) => ({ method: 'POST', path: `${base}/${id}`, body: text, headers: dsProducerHeaders(id, i) }),
    close: (id, n) => ({ method: 'POST', path: `${base}/${id}`, body: '', headers: { ...dsProducerHeaders(id, n), 'stream-closed': 'true' } }),
    read: (id, offset, cursor) => `${base}/${id}?offset=${encodeURIComponent(offset)}&live=sse${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
  }),
};

function dsProducerHeaders(id, seq) {
  return { 'content-type': 'text/plain', 'producer-id': `p-${id}`, 'producer-epoch': '0', 'producer-seq': String(seq) };
}

export function protocolOf(kind, base) {
  return kind === 'twoplane' ? PROTOCOLS.twoplane : PROTOCOLS.ds(base);
}

/**
 * Feeds SSE bytes (as strings) and calls `onEvent(event, data, id)` per complete event. LF, CRLF
 * and CR line ends; comments skipped; one leading space after the colon removed (the WHATWG
 * rule; the Durable Streams servers write `data:` without it, twoplane with it).
 */
export class SseSplitter {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buf = '';
    this.event = '';
    this.data = null;
    this.id = null;
  }
  push(chunk) {
    this.buf += chunk;
    let start = 0;
    for (;;) {
      const nl = this.buf.indexOf('\n', start);
      const cr = this.buf.indexOf('\r', start);
      let end = nl;
      if (cr >= 0 && (nl < 0 || cr < nl)) end = cr;
      if (end < 0) break;
      // A CR at the very end may be half of a CRLF: wait for the next byte.
      if (end === cr && cr === this.buf.length - 1) break;
      const line = this.buf.slice(start, end);
      start = end + (end === cr && this.buf[cr + 1] === '\n' ? 2 : 1);
      this.line(line);
    }
    this.buf = this.buf.slice(start);
  }
  line(line) {
    if (line === '') {
      if (this.data !== null) this.onEvent(this.event || 'message', this.data, this.id);
      this.event = '';
      this.data = null;
      return;
    }
    if (line[0] === ':') return;
    const c = line.indexOf(':');
    const field = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? '' : line.slice(c + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'data') this.data = this.data === null ? value : `${this.data}\n${value}`;
    else if (field === 'event') this.event = value;
    else if (field === 'id') this.id = value;
  }
}

/** Counts per 10 ms bucket since `epoch` (the run's t0), bounded in length. */
export class Buckets {
  constructor(epoch, maxMs = 30 * 60 * 1000) {
    this.epoch = epoch;
    this.max = Math.ceil(maxMs / 10);
    this.counts = [];
  }
  add(t, n = 1) {
    const b = Math.min(this.max, Math.max(0, Math.floor((t - this.epoch) / 10)));
    while (this.counts.length <= b) this.counts.push(0);
    this.counts[b] += n;
  }
}

/** Sum of bucket counts between two clock times (whole buckets; 10 ms each). */
export function countBetween(bucketLists, epoch, a, b) {
  const lo = Math.floor((a - epoch) / 10);
  const hi = Math.floor((b - epoch) / 10);
  let sum = 0;
  for (const counts of bucketLists) for (let i = Math.max(0, lo); i < Math.min(hi, counts.length); i++) sum += counts[i];
  return sum;
}

export function quantile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}
