// One stream the AI SDK reads through twoplane/ai-sdk's transport (transport.js), over one or
// more connections to `GET .../ui-message-stream?from=N`: what it hands the SDK, and when.
//
// What it guarantees:
// - A chunk is handed on only with the rest of its group of events: the server writes an `id:`
//   (the offset in the stream's coordinate) on a group's last event only, and the chunks before
//   it wait for it. Every chunk handed on is known as this transport's (`ownerOf`), and one that
//   only rebuilds what the page held is marked replayed (`isReplayedChunk`).
// - A connection that breaks before `[DONE]` is reopened from the last complete group received,
//   after the package's backoff (backoff.js, without jitter), at most `reconnect.attempts` times;
//   what the SDK already has is not handed on again. After that the stream fails with a network
//   `TypeError`, which the SDK treats as a disconnect it may resume.
// - The offset the page has *processed* (a chunk counts once the SDK asks for the next one) is
//   reported to the transport (`confirm`), which records it in the page's `held` store.
// - A stop closes the connection and cancels any pending wait at once.
// - The chunks the page processed, group by group, are handed to the transport with the offset
//   they bring it to (`confirm`), which keeps them compacted (`compactChunks`) as the page's
//   snapshot of the message. A stream resumed from a snapshot (`prelude`) hands the SDK that
//   replay locally, and asks the server only for what follows (`&tail=1`).

import { Backoff } from '../backoff.js';
import { SseDecoder } from '../sse.js';
import { bearer } from './http.js';

/** Chunks the transport handed the SDK only to rebuild what the page already held. */
const REPLAYED = new WeakSet();
/** The chat (and its transport) each delivered chunk belongs to, for the transport's `fresh`. */
const OWNER = new WeakMap();

/** Whether `chunk` (a chunk object the transport delivered) rebuilds what the page already held. */
export function isReplayedChunk(chunk) {
  return chunk !== null && typeof chunk === 'object' && REPLAYED.has(chunk);
}

/** `chunk` (an object), marked as only rebuilding what the page held. */
export function markReplayed(chunk) {
  REPLAYED.add(chunk);
  return chunk;
}

/** `{ t, chatId }` of a chunk object a Follow delivered (`t` the transport's internals), or
 *  undefined. */
export function ownerOf(chunk) {
  return chunk !== null && typeof chunk === 'object' ? OWNER.get(chunk) : undefined;
}

/** The chunks that answer a tool call in its stream: after one, no page gives the call's output. */
export const TOOL_ANSWERS = ['tool-output-available', 'tool-output-error', 'tool-output-denied', 'tool-approval-request'];

/** Resolves after `ms`, or at once when `signal` aborts. */
const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * `chunks` with adjacent deltas of one part merged (text, reasoning, a tool's input) and transient
 * data parts left out: a replay the SDK folds to the same message, in as few chunks as it takes.
 */
export function compactChunks(chunks) {
  const out = [];
  const field = { 'text-delta': 'delta', 'reasoning-delta': 'delta', 'tool-input-delta': 'inputTextDelta' };
  const key = { 'text-delta': 'id', 'reasoning-delta': 'id', 'tool-input-delta': 'toolCallId' };
  const plain = (c) => Object.keys(c).every((k) => k === 'type' || k === key[c.type] || k === field[c.type]);
  for (const c of chunks) {
    if (c === null || typeof c !== 'object') continue;
    if (typeof c.type === 'string' && c.type.startsWith('data-') && c.transient === true) continue;
    const last = out[out.length - 1];
    const f = field[c.type];
    if (f && last && last.type === c.type && last[key[c.type]] === c[key[c.type]] && plain(last) && plain(c)) {
      out[out.length - 1] = { ...last, [f]: `${last[f]}${c[f]}` };
      continue;
    }
    out.push(c);
  }
  return out;
}

/** The events of an SSE body, by the package's decoder (sse.js): `{ id, data }`, `id` undefined
 *  when the event has no `id:` of its own (only the last event of a group has one). */
async function* sseEvents(body) {
  const reader = body.getReader();
  const events = [];
  const decoder = new SseDecoder((data, _type, lastEventId, ownId) => events.push({ id: ownId ? lastEventId : undefined, data }));
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      decoder.push(value);
      yield* events.splice(0);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function networkError(message, cause) {
  // The SDK's `Chat` keeps a response it may resume when it fails with a TypeError that names the
  // network.
  const e = new TypeError(`network error: ${message}`);
  if (cause) e.cause = cause;
  return e;
}

export class Follow {
  /**
   * @param t the transport's internals
   * @param o { chatId, target, from, skip (true: the reader holds everything up to `from`, so
   *            those chunks are not sent; false: they are sent, marked replayed), record, signal,
   *            wait204 (ms to wait for a stream that is not open yet), prelude (chunks the
   *            page's snapshot holds, handed on first), awaitMore (ms during which an end with
   *            nothing past `from` is followed by another request, not taken as the end) }
   */
  constructor(t, o) {
    this.t = t;
    this.chatId = o.chatId;
    this.target = o.target;
    this.record = o.record; // the held record this stream advances (or null)
    this.expectId = o.target.streamId ?? o.record?.streamId;
    this.conn = { from: o.from, skip: o.skip, first: true, tail: Array.isArray(o.prelude) };
    this.wait204 = o.wait204 ?? 0;
    // Until when an end at `from` (nothing new) is not taken as the end: a continuation the page
    // sent may not have re-opened the stream yet (transport.js, `goesOn`).
    this.awaitFrom = o.from;
    this.awaitUntil = o.awaitMore > 0 ? Date.now() + o.awaitMore : 0;
    this.received = o.from; // the offset of the last complete batch received
    this.enqueuedEnd = o.skip ? o.from : undefined; // the offset the reader stands at
    this.buffer = [];
    // The chunks that tell a client tool from one the server answers, and who waits to know
    // (`fateOf`).
    this.calls = [];
    this.fates = [];
    // A replay the page's snapshot holds, handed the SDK before anything the server sends.
    if (Array.isArray(o.prelude) && o.prelude.length > 0) {
      for (const chunk of o.prelude) {
        REPLAYED.add(chunk);
        OWNER.set(chunk, { t: this.t, chatId: this.chatId });
        this.buffer.push({ chunk, local: true });
        this.note(chunk);
      }
      this.buffer[this.buffer.length - 1].end = o.from;
    }
    // The chunks handed the SDK since the last confirm, and how many of them end a group.
    this.handed = [];
    this.handedWhole = 0;
    this.pending = [];
    this.done = false;
    this.failure = null;
    this.stopped = false;
    this.openTools = new Set();
    this.ac = new AbortController();
    this.wakeUp = null;
    this.readable = new ReadableStream(
      { pull: (c) => this.pull(c), cancel: () => this.stop() },
      { highWaterMark: 0 },
    );
  }

  wake() {
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
    if (this.fates.length > 0) this.settle();
  }

  /** Keeps, in stream order, the chunks that say what became of a tool call (see `fateOf`). */
  note(chunk) {
    if (chunk === null || typeof chunk !== 'object') return;
    const t = chunk.type;
    if (typeof chunk.toolCallId === 'string' || t === 'finish-step' || t === 'finish') {
      this.calls.push({ type: t, toolCallId: chunk.toolCallId });
    }
  }

  /**
   * What the stream says of tool call `toolCallId` after its input: 'answered' (an output, an
   * error, a denial or an approval request follows it: the server or the SDK answers it),
   * 'unanswered' (its step or the stream ends without one: only a page can give its output), or
   * 'unknown' (the stream stopped or failed first). Resolves as soon as the chunks received say;
   * the connection is read on meanwhile, whether or not the SDK asks for the next chunk.
   */
  fateOf(toolCallId) {
    return new Promise((resolve) => {
      this.fates.push({ toolCallId, resolve });
      this.settle();
    });
  }

  settle() {
    this.fates = this.fates.filter(({ toolCallId, resolve }) => {
      let from = 0;
      for (let i = 0; i < this.calls.length; i += 1) {
        const c = this.calls[i];
        if (c.toolCallId === toolCallId && c.type === 'tool-input-available') from = i + 1;
      }
      for (let i = from; i < this.calls.length; i += 1) {
        const c = this.calls[i];
        if (c.toolCallId === toolCallId && TOOL_ANSWERS.includes(c.type)) return void resolve('answered');
        if (c.type === 'finish-step' || c.type === 'finish') return void resolve('unanswered');
      }
      if (this.done) return void resolve('unanswered');
      if (this.stopped || this.failure !== null) return void resolve('unknown');
      return true;
    });
  }

  stop() {
    if (this.stopped) return;
    this.stopped = true;
    this.ac.abort();
    this.wake();
  }

  /** Open the first connection: 'ok', or 'none' when the server has no stream (204). */
  async start() {
    const deadline = Date.now() + this.wait204;
    const poll = new Backoff(50, 500, { jitter: false });
    for (;;) {
      const res = await this.request(this.conn.from);
      if (res.status !== 204) {
        this.pump(res.body);
        return 'ok';
      }
      const delay = poll.next();
      if (Date.now() + delay > deadline) return 'none';
      await sleep(delay, this.ac.signal);
      if (this.stopped) return 'none';
    }
  }

  async request(from) {
    const { url, token, headers, credentials } = this.target;
    const u = `${url}${url.includes('?') ? '&' : '?'}from=${from}${this.conn.tail && from > 0 ? '&tail=1' : ''}`;
    let res;
    try {
      res = await this.t.fetch(u, {
        method: 'GET',
        headers: { accept: 'text/event-stream', ...bearer(token), ...headers },
        credentials,
        cache: 'no-store',
        signal: this.ac.signal,
      });
    } catch (e) {
      if (this.stopped) throw e;
      throw networkError(`twoplane: ${e?.message ?? e}`, e);
    }
    if (res.status === 204 || res.ok) return res;
    if (res.status === 404 && this.target.missingIsNone) {
      res.body?.cancel().catch(() => {});
      return new Response(null, { status: 204 });
    }
    const text = await res.text().catch(() => '');
    throw new Error(text.trim() || `twoplane: GET ${url}: ${res.status}`);
  }

  /** Read one connection to its end; reconnect when it ended before `[DONE]`. */
  async pump(body) {
    try {
      for await (const ev of sseEvents(body)) {
        if (this.stopped) return;
        if (ev.data === '[DONE]') {
          if (this.received <= this.awaitFrom && Date.now() < this.awaitUntil) {
            this.reconnect();
            return;
          }
          this.done = true;
          this.wake();
          return;
        }
        let chunk;
        try {
          chunk = JSON.parse(ev.data);
        } catch (e) {
          this.fail(new Error(`twoplane: an event is not JSON: ${ev.data.slice(0, 80)}`, { cause: e }));
          return;
        }
        if (ev.id === undefined) {
          this.pending.push(chunk);
          continue;
        }
        const at = Number(ev.id);
        const batch = this.pending;
        this.pending = [];
        batch.push(chunk);
        if (!this.batch(batch, at)) return;
      }
    } catch (e) {
      if (this.stopped) return;
    }
    if (!this.done && !this.stopped) this.reconnect();
  }

  /** A complete batch of chunks that brings the reader to `at`. False: the stream failed. */
  batch(chunks, at) {
    const c = this.conn;
    for (const chunk of chunks) {
      if (chunk?.type === 'start' && typeof chunk.messageId === 'string') {
        if (this.expectId !== undefined && chunk.messageId !== this.expectId) {
          if (c.first && !c.skip) {
            // The offset the page held was of another message: everything is new to it.
            c.from = -1;
          } else {
            this.fail(new Error(`twoplane: the stream of chat ${this.chatId} is now message ${chunk.messageId}, not ${this.expectId}`));
            return false;
          }
        }
        this.expectId = chunk.messageId;
        this.t.adopt(this, chunk.messageId);
        // A server that could not cut the tail sent the whole replay: the snapshot starts again.
        if (c.tail) this.restart = true;
      }
    }
    if (at <= c.from && c.skip) return true; // the reader holds these
    const replayed = c.from > 0 && at <= c.from;
    for (const chunk of chunks) {
      if (chunk !== null && typeof chunk === 'object') {
        if (replayed) REPLAYED.add(chunk);
        OWNER.set(chunk, { t: this.t, chatId: this.chatId });
        this.note(chunk);
        if (chunk.type === 'tool-input-start') this.openTools.add(chunk.toolCallId);
        else if (chunk.type === 'tool-input-available' || chunk.type === 'tool-input-error') this.openTools.delete(chunk.toolCallId);
      }
      this.buffer.push({ chunk });
    }
    if (chunks.length > 0) this.buffer[this.buffer.length - 1].end = at;
    this.received = Math.max(this.received, at);
    c.first = false;
    this.wake();
    return true;
  }

  fail(e) {
    if (this.failure === null) this.failure = e;
    this.ac.abort();
    this.wake();
  }

  /** The connection broke before `[DONE]`: open another from what was received. */
  async reconnect() {
    const { attempts, initialMs, maxMs } = this.t.reconnect;
    // Without jitter: the waits are the steps docs/ai-sdk.md gives (by default 250 ms doubling to
    // 4 s), as they were before this loop used the package's backoff.
    const backoff = new Backoff(initialMs, maxMs, { jitter: false });
    let last;
    for (let i = 0; i < attempts && !this.stopped; i += 1) {
      await sleep(backoff.next(), this.ac.signal);
      if (this.stopped) return;
      this.ac = new AbortController();
      this.pending = [];
      try {
        const res = await this.request(this.received);
        if (res.status === 204) {
          this.fail(new Error(`twoplane: the stream of chat ${this.chatId} is gone`));
          return;
        }
        this.conn = { from: this.received, skip: true, first: false };
        this.pump(res.body);
        return;
      } catch (e) {
        if (!(e instanceof TypeError)) {
          this.fail(e);
          return;
        }
        last = e;
      }
    }
    if (!this.stopped) {
      this.t.disconnected(this);
      this.fail(last ?? networkError('twoplane: the stream broke off'));
    }
  }

  /** The SDK asks for the next chunk: everything handed it before is processed. */
  async pull(controller) {
    if (this.enqueuedEnd !== undefined) {
      this.t.confirm(this, this.enqueuedEnd, this.handed.splice(0, this.handedWhole), this.restart === true);
      this.restart = false;
    }
    this.handedWhole = 0;
    while (this.buffer.length === 0 && !this.done && this.failure === null && !this.stopped) {
      await new Promise((r) => (this.wakeUp = r));
    }
    if (this.buffer.length > 0) {
      const item = this.buffer.shift();
      // What the page's snapshot already holds is not added to it again. The snapshot keeps its
      // own copy: the SDK keeps the objects it is handed and may change them later (ai 5, 6 and 7
      // make a data chunk the message's part and update its data in place when a later chunk
      // replaces it), and a snapshot that shared them would hold a later chunk's data in an
      // earlier one.
      if (!item.local) this.handed.push(structuredClone(item.chunk));
      if (item.end !== undefined) {
        this.enqueuedEnd = item.end;
        this.handedWhole = this.handed.length;
      }
      controller.enqueue(item.chunk);
    } else if (this.failure !== null) {
      controller.error(this.failure);
    } else {
      this.t.ended(this);
      controller.close();
    }
  }
}
