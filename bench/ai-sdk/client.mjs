// The clients of one benchmark run, in a process of their own (forked by run.mjs, so their CPU is
// never counted as a server's): the producer, which POSTs the turn's UI message stream at a
// steady rate, and the readers, which all join as the answer starts; most of them drop their
// connection mid-way and resume it, and read to the end.
//
// The driver sends `{ run }`, then `go` (it has read the servers' CPU); the client answers
// `done` when every request has finished, then, on `verify`, checks every reader's message with
// the SDK's own reader and sends the numbers.

import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { DefaultChatTransport, readUIMessageStream } from 'ai';
import { turnChunks, sseOf } from './chunks.mjs';
import { splitEvents, hasDataEvent, wholeChars, holdings, repeatedBytes } from './sse.mjs';

/** How each side is asked. `offset`: what a resume tells the server about what it holds. */
const ROUTES = {
  twoplane: {
    produce: (id) => `/v1/streams/${encodeURIComponent(id)}/ui-message-stream`,
    read: (id, held) =>
      `/v1/streams/${encodeURIComponent(id)}/ui-message-stream${held?.from != null ? `?from=${held.from}${held.tail ? '&tail=1' : ''}` : ''}`,
  },
  peer: {
    produce: (id) => `/api/chat/${encodeURIComponent(id)}`,
    read: (id, held) => `/api/chat/${encodeURIComponent(id)}/stream${held?.skip != null ? `?skip=${held.skip}` : ''}`,
  },
};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One GET: its bytes as they come, when its first data event completed, how it ended. */
function openLeg(base, path, prefix = Buffer.alloc(0)) {
  const leg = { path, sentAt: performance.now(), firstDataAt: null, endAt: null, status: 0, parts: [], bytes: 0 };
  leg.error = null;
  leg.ended = false;
  leg.dropped = false;
  let scan = prefix;
  let answered;
  leg.answered = new Promise((resolve) => (answered = resolve));
  leg.finished = new Promise((resolve) => {
    const req = http.get(`${base}${path}`, { agent: false }, (res) => {
      leg.status = res.statusCode;
      answered();
      res.on('data', (b) => {
        leg.parts.push(b);
        leg.bytes += b.length;
        if (leg.firstDataAt === null) {
          scan = Buffer.concat([scan, b]);
          if (hasDataEvent(scan)) {
            leg.firstDataAt = performance.now();
            scan = null;
          }
        }
      });
      res.on('end', () => {
        leg.ended = true;
        leg.endAt = performance.now();
      });
      res.on('error', (e) => (leg.error ??= e.message));
    });
    req.on('error', (e) => {
      if (!leg.dropped) leg.error ??= e.message;
    });
    req.on('close', () => {
      answered();
      resolve();
    });
    leg.req = req;
  });
  return leg;
}

/**
 * A reader's first request, as the answer starts. A server that has not opened the stream yet
 * answers 204 (the producer's request is still on its way in, or its first write to the store
 * is); the reader asks again 20 ms later, for up to 5 s, and `onRetry` counts it.
 */
async function joinLeg(base, path, onRetry) {
  const until = performance.now() + 5000;
  for (;;) {
    const leg = openLeg(base, path);
    await leg.answered;
    if (leg.status !== 204 || performance.now() > until) return leg;
    onRetry();
    await sleep(20);
  }
}

/** The producer: the turn's SSE text, one chunk every `rateMs`, then `[DONE]`. */
function produce(base, path, chunks, rateMs, t0) {
  return new Promise((resolve) => {
    const out = { status: 0, body: '', error: null, endAt: null };
    const req = http.request(
      `${base}${path}`,
      { method: 'POST', agent: false, headers: { 'content-type': 'text/event-stream', 'transfer-encoding': 'chunked' } },
      (res) => {
        out.status = res.statusCode;
        res.setEncoding('utf8');
        res.on('data', (s) => (out.body += s));
        res.on('end', () => {
          out.endAt = performance.now();
          resolve(out);
        });
      },
    );
    req.on('error', (e) => {
      out.error = e.message;
      resolve(out);
    });
    (async () => {
      for (let i = 0; i < chunks.length; i++) {
        const wait = t0 + i * rateMs - performance.now();
        if (wait > 0) await sleep(wait);
        req.write(sseOf(chunks[i]));
      }
      req.end('data: [DONE]\n\n');
    })();
  });
}

/** What a reader holds when it drops, and how it tells the server on its resume. */
function heldAt(leg, offset) {
  const buf = Buffer.concat(leg.parts);
  const whole = wholeChars(buf);
  const { events, rest } = splitEvents(buf.subarray(0, whole.bytes));
  const held = { buf: buf.subarray(0, whole.bytes), events, rest };
  if (offset === 'from' || offset === 'tail') {
    const last = [...events].reverse().find((e) => e.id !== null);
    held.from = Number(last?.id ?? 0);
    // With `tail`, the page replays from its own snapshot the whole groups it holds (the bytes up
    // to its last id), and asks the server for what follows only.
    if (offset === 'tail' && held.from > 0) {
      held.tail = true;
      held.buf = held.buf.subarray(0, last.end);
      held.events = events.filter((e) => e.end <= last.end);
      held.rest = last.end;
    }
  }
  if (offset === 'skip') held.skip = whole.chars;
  return held;
}

async function runPhase(run) {
  const { side, offset, base, streamId, readers, resumers, rateMs, joinAtMs, dropFromMs, dropToMs, gapMs } = run;
  const routes = ROUTES[side];
  const chunks = turnChunks(streamId);
  const t0 = performance.now() + 20;
  const cpu0 = process.cpuUsage();
  const producing = produce(base, routes.produce(streamId), chunks, rateMs, t0);
  const list = [];
  for (let i = 0; i < readers; i++) {
    const r = { i, resumes: i >= readers - resumers, join: null, resume: null, held: null, joinRetries: 0 };
    list.push(r);
    r.done = (async () => {
      await sleep(t0 + joinAtMs + i * 2 - performance.now());
      r.join = await joinLeg(base, routes.read(streamId, null), () => r.joinRetries++);
      if (!r.resumes) return r.join.finished;
      const k = i - (readers - resumers);
      const dropAt = dropFromMs + (resumers > 1 ? (k * (dropToMs - dropFromMs)) / (resumers - 1) : 0);
      await sleep(t0 + dropAt - performance.now());
      r.join.dropped = true;
      r.join.req.destroy();
      await r.join.finished;
      r.held = heldAt(r.join, offset);
      await sleep(gapMs);
      const prefix = offset === 'skip' ? r.held.buf.subarray(r.held.rest) : Buffer.alloc(0);
      // (`tail` holds whole groups only: nothing of a partial event is carried into the resume.)
      r.resume = openLeg(base, routes.read(streamId, r.held), prefix);
      return r.resume.finished;
    })();
  }
  const deadline = sleep(rateMs * chunks.length + 60_000).then(() => 'timeout');
  const produced = await producing;
  const all = await Promise.race([Promise.all(list.map((r) => r.done)), deadline]);
  if (all === 'timeout') for (const r of list) (r.resume ?? r.join)?.req.destroy();
  const endAt = performance.now();
  const cpu = process.cpuUsage(cpu0);
  return { chunks, list, produced, t0, endAt, timedOut: all === 'timeout', clientCpuMs: (cpu.user + cpu.system) / 1000 };
}

/** The message the SDK builds from an SSE body, read as `useChat`'s transport reads a response. */
async function sdkMessage(body) {
  const transport = new DefaultChatTransport({
    api: 'http://bench.invalid/api/chat',
    fetch: async () => new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } }),
  });
  const stream = await transport.sendMessages({
    chatId: 'bench',
    messages: [],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  let last;
  for await (const m of readUIMessageStream({ stream })) last = m;
  return JSON.stringify(last);
}

const dataEvents = (events) => events.filter((e) => e.data !== null && e.data !== '[DONE]').length;

async function analyse(run, phase) {
  const { offset } = run;
  const expected = await sdkMessage(phase.chunks.map(sseOf).join('') + 'data: [DONE]\n\n');
  const problems = [];
  const readers = [];
  let delivered = 0;
  for (const r of phase.list) {
    const out = { resumes: r.resumes, joinRetries: r.joinRetries };
    const join = r.join;
    const joinBuf = Buffer.concat(join.parts);
    out.joinTtfbMs = join.firstDataAt === null ? null : join.firstDataAt - join.sentAt;
    out.joinBytes = join.bytes;
    let body;
    if (!r.resumes) {
      if (join.status !== 200 || !join.ended || join.error) problems.push(`reader ${r.i}: ${join.status} ${join.error ?? ''}`);
      delivered += dataEvents(splitEvents(joinBuf).events);
      body = joinBuf;
    } else {
      delivered += dataEvents(r.held.events);
      const leg = r.resume;
      const legBuf = Buffer.concat(leg.parts);
      if (leg.status !== 200 || !leg.ended || leg.error) {
        problems.push(`reader ${r.i}: resume ${leg.status} ${leg.error ?? ''} ${leg.ended ? '' : '(did not end)'}`);
      }
      const continues = offset === 'skip' || (offset === 'tail' && r.held.tail === true);
      const whole = continues ? Buffer.concat([r.held.buf, legBuf]) : legBuf;
      const clip = continues ? r.held.buf.length : 0;
      const { events } = splitEvents(whole, continues ? r.held.rest : 0);
      delivered += dataEvents(events);
      out.resumeTtfbMs = leg.firstDataAt === null ? null : leg.firstDataAt - leg.sentAt;
      out.resumeBytes = leg.bytes;
      out.repeatedBytes = repeatedBytes(events, holdings(r.held.events), { continues, clip });
      out.heldBytes = r.held.buf.length;
      out.resumeEvents = dataEvents(events);
      body = whole;
    }
    try {
      const got = await sdkMessage(body);
      if (got !== expected) problems.push(`reader ${r.i}: the SDK built another message than the turn's`);
    } catch (e) {
      problems.push(`reader ${r.i}: the SDK refused the stream: ${e?.message ?? e}`);
    }
    readers.push(out);
  }
  if (phase.produced.status !== 200) problems.push(`producer: ${phase.produced.status} ${phase.produced.error ?? ''} ${phase.produced.body}`);
  if (phase.timedOut) problems.push('some readers did not finish within 60 s of the end');
  return {
    readers,
    delivered,
    problems,
    streamBytes: Buffer.byteLength(phase.chunks.map(sseOf).join('') + 'data: [DONE]\n\n'),
    producerMs: phase.produced.endAt - phase.t0,
    phaseMs: phase.endAt - phase.t0,
    clientCpuMs: phase.clientCpuMs,
  };
}

let run;
let phase;
process.on('message', async (msg) => {
  try {
    if (msg.run) {
      run = msg.run;
      process.send({ ready: true });
    } else if (msg.go) {
      phase = await runPhase(run);
      process.send({ done: true });
    } else if (msg.verify) {
      process.send({ result: await analyse(run, phase) });
    }
  } catch (e) {
    process.send({ failed: String(e?.stack ?? e) });
  }
});
