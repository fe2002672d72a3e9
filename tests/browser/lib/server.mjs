// The test fixture server (loopback only): static files for the pages, and an SSE endpoint that
// plays a scripted stream with connection drops.
//
// The stream (`/sse?streamId=…&from=…`) replays a fixed production from the requested offset
// (`Last-Event-ID` wins over `?from`, as docs/contract.md §5 says), the way the plane does: `open`, one
// chunk from the offset to the next delta boundary, then every later delta as its own chunk, 8% of
// them re-cut from an earlier offset (an overlap), a `durable` now and then. The bytes go out in
// small writes of random size (so UTF-8 sequences, CRLFs and events are split anywhere) with
// pauses, so a page sees the text grow. Connection i < drops is cut at a random byte (most cuts
// fall inside an event); the connection after the last drop runs to the end and seals with
// `end`, then lingers with keep-alive comments until the client hangs up, which it must do by
// itself (rule 3). Every connection is logged: what it asked for, and what it fully delivered.

import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const BROWSER_DIR = path.resolve(HERE, '..');
export const REPO = path.resolve(BROWSER_DIR, '../..');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** A small deterministic generator (xorshift32), so a failing seed can be replayed. */
export function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

const WORDS = ['The', ' model', ' says', ' hello', ',', ' world', '.', ' 漢字', 'かな', 'カタカナ', ' 中文', '한국어',
  ' 😀', '👩‍💻', '🎉🎉', ' naïve', ' café', '\n', ' — ', ' "quoted"', ' back\\slash', ' 𝄞', ' ok'];

/**
 * A production: `units` code units of text (emoji, CJK, combining sequences) cut into deltas of 1
 * to 7 code units at arbitrary positions, so deltas often split a surrogate pair in two.
 */
export function makeProduction(seed, units) {
  const r = rng(seed);
  let text = '';
  while (text.length < units) text += WORDS[Math.floor(r() * WORDS.length)];
  const deltas = [];
  for (let at = 0; at < text.length;) {
    const n = Math.min(text.length - at, 1 + Math.floor(r() * 7));
    deltas.push([at, at + n]);
    at += n;
  }
  return { text, deltas };
}

/** The SSE text one connection plays, event by event, from `from` (a join or resume offset). */
function eventsFrom(scenario, from, final, r) {
  const { text, deltas, streamId } = scenario;
  const events = [];
  const frame = (f) => {
    const id = f.type === 'open' ? f.from : f.type === 'chunk' || f.type === 'durable' || f.type === 'end' ? f.seq : undefined;
    return { text: `${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(f)}\n\n`, seq: f.type === 'chunk' ? f.seq : null };
  };
  events.push(frame({ type: 'open', streamId, from, seq: from, durableSeq: Math.min(from, scenario.join), ended: false }));
  let pos = from;
  let durable = Math.min(from, scenario.join);
  for (const [start, end] of deltas) {
    if (end <= pos) continue;
    let s = start;
    if (s < pos) s = pos; // the first chunk is coalesced from the offset itself
    else if (start > 0 && r() < 0.08) s = Math.max(0, start - 1 - Math.floor(r() * 5)); // an overlap
    events.push(frame({ type: 'chunk', from: s, seq: end, text: text.slice(s, end) }));
    pos = end;
    if (r() < 0.03 && pos > durable) {
      durable = Math.min(pos, durable + Math.floor(r() * 200));
      events.push(frame({ type: 'durable', seq: durable }));
    }
    if (r() < 0.01) events.push({ text: ': ping\n\n', seq: null });
  }
  if (final) {
    events.push(frame({ type: 'durable', seq: text.length }));
    events.push(frame({ type: 'end', seq: text.length, status: 'complete' }));
  }
  return events;
}

const LINE_ENDS = ['\n', '\r\n', '\r'];

/**
 * Start the fixture on 127.0.0.1 (a random port). `scenario` may be set or replaced at any time:
 * `{ streamId, text, deltas, join, drops, seed, linger }`.
 */
export async function startServer({ staticRoots = {} } = {}) {
  const roots = {
    '/vectors/': path.join(REPO, 'tests/vectors'),
    '/lib/': path.join(BROWSER_DIR, 'lib'),
    '/pages/': path.join(BROWSER_DIR, 'pages'),
    '/twoplane/': path.join(BROWSER_DIR, 'node_modules/twoplane'),
    '/bench/': path.join(REPO, 'bench/js'),
    // bench/js/core.mjs imports the plain-JavaScript model of the Node tests.
    '/tests/js/': path.join(REPO, 'tests/js'),
    ...staticRoots,
  };
  const state = { scenario: null, connections: [], open: new Set() };

  async function serveStatic(req, res, url) {
    for (const [prefix, dir] of Object.entries(roots)) {
      if (!url.pathname.startsWith(prefix)) continue;
      const rel = decodeURIComponent(url.pathname.slice(prefix.length)) || 'index.html';
      const file = path.resolve(dir, rel);
      if (file !== dir && !file.startsWith(dir + path.sep)) break;
      try {
        const body = await readFile(file);
        res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
        res.end(body);
      } catch {
        res.writeHead(404).end('not found');
      }
      return;
    }
    res.writeHead(404).end('not found');
  }

  function serveSse(req, res, url) {
    const sc = state.scenario;
    const index = state.connections.length;
    const header = req.headers['last-event-id'];
    const fromParam = url.searchParams.get('from');
    const raw = header ?? fromParam ?? '0';
    const parsed = Number.parseInt(raw, 10);
    const from = Number.isFinite(parsed) && parsed > 0 ? parsed : 0;
    const log = {
      index,
      streamId: url.searchParams.get('streamId'),
      fromParam,
      lastEventId: header ?? null,
      from,
      cutAt: null,
      midEvent: null,
      delivered: from,
      sealed: false,
      clientClosed: false,
    };
    state.connections.push(log);
    if (sc === null || log.streamId !== sc.streamId) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' });
      res.end(`data: ${JSON.stringify({ type: 'absent' })}\n\n`);
      return;
    }
    const r = rng(sc.seed * 7919 + index * 104729 + 1);
    const final = index >= sc.drops;
    const events = eventsFrom(sc, from, final, r);
    const eol = LINE_ENDS[index % LINE_ENDS.length];
    // Bytes of the whole connection, and where each event's blank line ends in them.
    let body = index === 1 ? '\uFEFF' : ''; // a BOM on one connection: the decoder must drop it
    const ends = [];
    for (const ev of events) {
      body += eol === '\n' ? ev.text : ev.text.replace(/\n/g, eol);
      // With CRLF line ends the event is complete one byte early: the CR of its blank line
      // already ends that line, so a cut between that CR and its LF still dispatches it.
      ends.push({ at: Buffer.byteLength(body, 'utf8') - (eol === '\r\n' ? 1 : 0), seq: ev.seq });
    }
    const bytes = Buffer.from(body, 'utf8');
    let cut = bytes.length;
    if (!final) {
      // Somewhere after the first few events, before most of the rest: progress on every
      // connection, and a drop that usually lands inside an event.
      const lo = ends[Math.min(2, ends.length - 1)].at;
      cut = Math.min(bytes.length - 1, lo + Math.floor(r() * Math.max(1, (bytes.length - lo) * 0.5)));
      log.cutAt = cut;
      log.midEvent = !ends.some((e) => e.at === cut);
      for (const e of ends) if (e.at <= cut && e.seq !== null) log.delivered = Math.max(log.delivered, e.seq);
    } else {
      log.delivered = sc.text.length;
    }
    state.open.add(res);
    req.on('close', () => {
      log.clientClosed = true;
      state.open.delete(res);
    });
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    let at = 0;
    let writes = 0;
    const pump = () => {
      if (log.clientClosed) return;
      while (at < cut) {
        const n = Math.min(cut - at, 1 + Math.floor(r() * 48));
        res.write(bytes.subarray(at, at + n));
        at += n;
        writes++;
        if (writes % 6 === 0) {
          setTimeout(pump, Math.floor(r() * 3));
          return;
        }
      }
      if (!final) {
        // The drop: whatever was written goes out, then the connection dies without a terminal
        // (and without the last chunk of the chunked encoding).
        res.write('', () => res.socket?.destroy());
        return;
      }
      log.sealed = true;
      // Linger like a sealed stream does: only the client closing ends this connection.
      const linger = setInterval(() => {
        if (log.clientClosed) clearInterval(linger);
        else res.write(`: ping${eol}${eol}`);
      }, 50);
      setTimeout(() => {
        clearInterval(linger);
        if (!log.clientClosed) res.end();
      }, sc.linger ?? 3000);
    };
    pump();
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (url.pathname === '/sse') return serveSse(req, res, url);
    if (url.pathname === '/favicon.ico') return res.writeHead(204).end();
    if (url.pathname === '/expected.json') {
      const sc = state.scenario;
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      return res.end(JSON.stringify(sc === null ? null : { streamId: sc.streamId, text: sc.text, join: sc.join, drops: sc.drops }));
    }
    return serveStatic(req, res, url);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    origin: `http://127.0.0.1:${port}`,
    state,
    /** Install a scenario and forget earlier connections. */
    play(scenario) {
      state.scenario = scenario;
      state.connections = [];
    },
    async close() {
      for (const res of state.open) res.socket?.destroy();
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A scenario: `units` code units from `seed`, joined at `join`, dropped `drops` times. */
export function scenario({ seed = 1, units = 6000, join = 101, drops = 5, streamId = 'msg:1 ü/漢', linger } = {}) {
  const { text, deltas } = makeProduction(seed, units);
  return { seed, text, deltas, join, drops, streamId, linger };
}
