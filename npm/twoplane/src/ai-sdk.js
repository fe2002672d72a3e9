// `twoplane/ai-sdk`: the Vercel AI SDK (`ai` 5, 6 and 7) on `twoplane serve`. The only entry of
// the package that imports `ai` (an optional peer dependency).
//
// Producing: `produceUIMessageStream` sends a UI message stream (chunk objects, or the SSE text
// `consumeSseStream` receives) to `POST /v1/streams/{id}/ui-message-stream` as one streaming
// request, and resolves with how the stream ended; when a reader cancelled (`409 cancelled`) it
// cancels its source, so the model is no longer read. `createTwoplaneProducer(...).responseOptions`
// is the one-line form for a route: the options of `toUIMessageStreamResponse` (the message id is
// the stream id, the SSE copy goes to twoplane, the page learns the stream and its read token from
// two response headers).
//
// Reading: `TwoplaneChatTransport` is a `ChatTransport` for `useChat`/`Chat`. It sends with the
// SDK's own `DefaultChatTransport`; once the route's answer names its twoplane stream, it reads the
// stream from twoplane (`GET .../ui-message-stream`) instead of the route's body, so that every
// chunk it hands the SDK has a place in the stream's coordinate (the `id:` that ends its group of
// events: the server writes it on a group's last event only, and a group is handed on whole).
// Guarantees:
// - A resume asks for the message from the offset the page holds (`?from=N`); the chunks that
//   rebuild what the page holds (the SDK's `Chat` starts every resume from an empty state) are
//   marked as replayed, and `fresh(handler)` keeps `onToolCall`/`onData` from seeing them, so no
//   callback fires twice for what the page had. `N` is how far the page's `Chat` has *processed*
//   the stream (a chunk counts once the SDK asks for the next one), recorded in a `held` store the
//   app may persist (`webStorageHeld(sessionStorage)`) to carry it across a reload.
// - A dropped connection is reopened by the transport from the last complete batch it received
//   (the chunks the SDK already has are not sent to it again), a bounded number of times; nothing
//   is asked of the server. After that the stream fails with a network `TypeError`, which the SDK
//   treats as a disconnect it may resume.
// - A stop (the `abortSignal` the SDK aborts in `stop()`) is a cancel: `POST .../cancel`, unless
//   the same chat started another request at once (a resume that replaced an earlier one).

import { DefaultChatTransport } from 'ai';
import { TwoplaneError } from './errors.js';
import { SseDecoder } from './sse.js';

/** Chunks the transport handed the SDK only to rebuild what the page already held. */
const REPLAYED = new WeakSet();
/** The chat (and its transport) each delivered chunk belongs to, for `fresh`. */
const OWNER = new WeakMap();

/** Whether `chunk` (a chunk object the transport delivered) rebuilds what the page already held. */
export function isReplayedChunk(chunk) {
  return chunk !== null && typeof chunk === 'object' && REPLAYED.has(chunk);
}

const enc = (s) => encodeURIComponent(s);
const trimSlash = (s) => String(s ?? '').replace(/\/+$/, '');
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

// ---------------------------------------------------------------------------------------------
// Producing

function encodePiece(value, encoder) {
  if (typeof value === 'string') return encoder.encode(value);
  if (value instanceof Uint8Array) return value;
  if (value !== null && typeof value === 'object') return encoder.encode(`data: ${JSON.stringify(value)}\n\n`);
  throw new TwoplaneError('invalid_argument', 'a UI message stream yields chunk objects, SSE text or bytes');
}

async function answerOf(res) {
  const text = await res.text().catch(() => '');
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}

/** `{ cancelled, seq, durableSeq }` of a stream by `GET /v1/streams/{id}`, or null. */
async function streamState(doFetch, url, streamId, producerToken) {
  try {
    const res = await doFetch(`${trimSlash(url)}/v1/streams/${enc(streamId)}`, {
      headers: producerToken ? { authorization: `Bearer ${producerToken}` } : {},
    });
    if (!res.ok) return null;
    const s = await res.json();
    const cancelled = s.live?.cancelled === true || s.stored?.status === 'cancelled';
    const seq = s.live?.seq ?? s.stored?.seq;
    return { cancelled, seq, durableSeq: s.live?.durableSeq ?? s.stored?.seq };
  } catch {
    return null;
  }
}

/**
 * Produce one UI message stream into `twoplane serve` (one message: the stream `streamId`).
 * Never rejects: resolves with `{ status, readerCancelled, seq?, durableSeq?, chunks?, kind?,
 * message?, httpStatus? }`.
 */
export async function produceUIMessageStream({ url, streamId, stream, producerToken, fetch: fetchFn, signal, headers } = {}) {
  if (typeof streamId !== 'string' || streamId === '') throw new TwoplaneError('invalid_argument', 'streamId must be a non-empty string');
  if (!stream || typeof stream.getReader !== 'function') throw new TwoplaneError('invalid_argument', 'stream must be a ReadableStream');
  const doFetch = fetchFn ?? globalThis.fetch;
  const source = stream.getReader();
  const encoder = new TextEncoder();
  let sourceDone = false;
  const body = new ReadableStream(
    {
      async pull(controller) {
        const { value, done } = await source.read();
        if (done) {
          sourceDone = true;
          controller.close();
        } else {
          controller.enqueue(encodePiece(value, encoder));
        }
      },
      cancel(reason) {
        return source.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
  const stopSource = () => {
    if (!sourceDone) source.cancel(new Error('twoplane: the stream ended')).catch(() => {});
  };
  let res;
  try {
    res = await doFetch(`${trimSlash(url)}/v1/streams/${enc(streamId)}/ui-message-stream`, {
      method: 'POST',
      headers: {
        'content-type': 'text/event-stream',
        ...(producerToken ? { authorization: `Bearer ${producerToken}` } : {}),
        ...headers,
      },
      body,
      duplex: 'half',
      signal,
    });
  } catch (e) {
    stopSource();
    // A server that answers `409 cancelled` while the body is still being sent may close the
    // connection under it (the request then fails here): ask the stream how it stands.
    const stream = await streamState(doFetch, url, streamId, producerToken);
    if (stream?.cancelled) return { status: 'cancelled', readerCancelled: true, seq: stream.seq, durableSeq: stream.durableSeq, kind: 'cancelled' };
    return { status: 'failed', readerCancelled: false, kind: 'network', message: String(e?.cause?.message ?? e?.message ?? e) };
  }
  const answer = await answerOf(res);
  if (res.ok) {
    return { status: answer.status, readerCancelled: false, seq: answer.seq, durableSeq: answer.durableSeq, chunks: answer.chunks };
  }
  stopSource();
  const base = { seq: answer.seq, durableSeq: answer.durableSeq, kind: answer.kind ?? 'http', message: answer.message, httpStatus: res.status };
  if (res.status === 409 && answer.kind === 'cancelled') return { status: 'cancelled', readerCancelled: true, ...base };
  return { status: 'failed', readerCancelled: false, ...base };
}

/**
 * What a route needs to produce into `twoplane serve`: `responseOptions(streamId)` for
 * `toUIMessageStreamResponse`, `produce`, `open`, `readToken`.
 */
export function createTwoplaneProducer({
  url,
  producerToken,
  readTokenSecret,
  readTokenTtlSeconds = 600,
  signToken,
  fetch: fetchFn,
} = {}) {
  if (typeof url !== 'string' || url === '') throw new TwoplaneError('invalid_argument', 'url must be the base URL of twoplane serve');
  const base = trimSlash(url);
  const doFetch = (...a) => (fetchFn ?? globalThis.fetch)(...a);
  const auth = producerToken ? { authorization: `Bearer ${producerToken}` } : {};

  function readToken(streamId, { userId, ttlSeconds } = {}) {
    if (readTokenSecret === undefined || readTokenSecret === null) return undefined;
    if (typeof signToken !== 'function') {
      throw new TwoplaneError('invalid_state', 'minting read tokens needs the Node entry of twoplane/ai-sdk (node:crypto) or a signToken option');
    }
    return signToken({ secret: readTokenSecret, streamId, ttlSeconds: ttlSeconds ?? readTokenTtlSeconds, userId });
  }

  async function open(streamId) {
    const res = await doFetch(`${base}/v1/streams/${enc(streamId)}/open`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: '{"create":true}',
    });
    if (res.ok) return;
    const answer = await answerOf(res);
    if (res.status === 409 && answer.kind === 'already_open') return;
    throw new TwoplaneError(answer.kind ?? 'http', `twoplane: open ${streamId}: ${res.status} ${answer.message ?? ''}`.trim());
  }

  const controllers = new Map(); // streamId -> AbortController of `signal(streamId)`

  /** An AbortSignal aborted when a reader cancels the stream (give it to `streamText`). */
  function signal(streamId) {
    let c = controllers.get(streamId);
    if (!c) {
      c = new AbortController();
      controllers.set(streamId, c);
    }
    return c.signal;
  }

  async function produce(streamId, stream, options = {}) {
    const outcome = await produceUIMessageStream({ url: base, streamId, stream, producerToken, fetch: fetchFn, ...options });
    const c = controllers.get(streamId);
    controllers.delete(streamId);
    if (outcome.readerCancelled) c?.abort(new TwoplaneError('cancelled', `a reader cancelled stream ${streamId}`));
    return outcome;
  }

  async function responseOptions(streamId, { userId, ttlSeconds, headers, onEnd } = {}) {
    await open(streamId);
    const token = readToken(streamId, { userId, ttlSeconds });
    let settle;
    const done = new Promise((r) => (settle = r));
    return {
      generateMessageId: () => streamId,
      consumeSseStream: ({ stream }) => {
        produce(streamId, stream).then((outcome) => {
          settle(outcome);
          onEnd?.(outcome);
        });
      },
      headers: {
        ...headers,
        'x-twoplane-stream': streamId,
        ...(token ? { 'x-twoplane-token': token } : {}),
      },
      done,
    };
  }

  return { url: base, open, produce, readToken, responseOptions, signal };
}

// ---------------------------------------------------------------------------------------------
// What a page holds

/** The default `held` store: in memory, so it lasts as long as the page. */
export function memoryHeld() {
  const map = new Map();
  return {
    get: (chatId) => map.get(chatId),
    set: (chatId, held) => void map.set(chatId, held),
    delete: (chatId) => void map.delete(chatId),
  };
}

/** A `held` store in a Web Storage (`sessionStorage`, `localStorage`): survives a reload. */
export function webStorageHeld(storage, prefix = 'twoplane:held:') {
  return {
    get(chatId) {
      const raw = storage.getItem(prefix + chatId);
      if (raw === null) return undefined;
      try {
        return JSON.parse(raw);
      } catch {
        return undefined;
      }
    },
    set: (chatId, held) => storage.setItem(prefix + chatId, JSON.stringify(held)),
    delete: (chatId) => storage.removeItem(prefix + chatId),
  };
}

// ---------------------------------------------------------------------------------------------
// Reading: the SSE events of a response

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

// ---------------------------------------------------------------------------------------------
// Reading: one stream the SDK reads, over one or more connections

class Follow {
  /**
   * @param t the transport's internals
   * @param o { chatId, target, from, skip (true: the reader holds everything up to `from`, so
   *            those chunks are not sent; false: they are sent, marked replayed), record, signal,
   *            wait204 (ms to wait for a stream that is not open yet) }
   */
  constructor(t, o) {
    this.t = t;
    this.chatId = o.chatId;
    this.target = o.target;
    this.record = o.record; // the held record this stream advances (or null)
    this.expectId = o.target.streamId ?? o.record?.streamId;
    this.conn = { from: o.from, skip: o.skip, first: true };
    this.wait204 = o.wait204 ?? 0;
    this.received = o.from; // the offset of the last complete batch received
    this.enqueuedEnd = o.skip ? o.from : undefined; // the offset the reader stands at
    this.buffer = [];
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
    for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
      const res = await this.request(this.conn.from);
      if (res.status !== 204) {
        this.pump(res.body);
        return 'ok';
      }
      if (Date.now() + delay > deadline) return 'none';
      await sleep(delay, this.ac.signal);
      if (this.stopped) return 'none';
    }
  }

  async request(from) {
    const { url, token, headers, credentials } = this.target;
    const u = `${url}${url.includes('?') ? '&' : '?'}from=${from}`;
    let res;
    try {
      res = await this.t.fetch(u, {
        method: 'GET',
        headers: { accept: 'text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
        credentials,
        cache: 'no-store',
        signal: this.ac.signal,
      });
    } catch (e) {
      if (this.stopped) throw e;
      throw networkError(`twoplane: ${e?.message ?? e}`, e);
    }
    if (res.status === 204 || res.ok) return res;
    const text = await res.text().catch(() => '');
    throw new Error(text.trim() || `twoplane: GET ${url}: ${res.status}`);
  }

  /** Read one connection to its end; reconnect when it ended before `[DONE]`. */
  async pump(body) {
    try {
      for await (const ev of sseEvents(body)) {
        if (this.stopped) return;
        if (ev.data === '[DONE]') {
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
      }
    }
    if (at <= c.from && c.skip) return true; // the reader holds these
    const replayed = c.from > 0 && at <= c.from;
    for (const chunk of chunks) {
      if (chunk !== null && typeof chunk === 'object') {
        if (replayed) REPLAYED.add(chunk);
        OWNER.set(chunk, { t: this.t, chatId: this.chatId });
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
    let delay = initialMs;
    let last;
    for (let i = 0; i < attempts && !this.stopped; i += 1) {
      await sleep(delay, this.ac.signal);
      if (this.stopped) return;
      delay = Math.min(delay * 2, maxMs);
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
    if (this.enqueuedEnd !== undefined) this.t.confirm(this, this.enqueuedEnd);
    while (this.buffer.length === 0 && !this.done && this.failure === null && !this.stopped) {
      await new Promise((r) => (this.wakeUp = r));
    }
    if (this.buffer.length > 0) {
      const item = this.buffer.shift();
      if (item.end !== undefined) this.enqueuedEnd = item.end;
      controller.enqueue(item.chunk);
    } else if (this.failure !== null) {
      controller.error(this.failure);
    } else {
      this.t.ended(this);
      controller.close();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The ChatTransport

const RECONNECT = { attempts: 6, initialMs: 250, maxMs: 4000 };

/**
 * A `ChatTransport` that sends with the SDK's `DefaultChatTransport` and reads and resumes from
 * twoplane by offset. See the module header and docs/ai-sdk.md.
 */
export class TwoplaneChatTransport {
  #sender;
  #fetch;
  #api;
  #endpoint;
  #stream;
  #held;
  #memory = new Map(); // chatId -> { gen, follow, lastFollow, disconnected }
  #responses = new WeakMap(); // abortSignal -> the route's response headers
  #reconnect;
  #replayFlag;
  #cancelOnStop;

  constructor(options = {}) {
    const { endpoint = '', stream, held, reconnect, cancelOnStop = true, fetch: fetchFn, ...send } = options;
    this.#cancelOnStop = cancelOnStop;
    this.#fetch = fetchFn ?? ((...a) => globalThis.fetch(...a));
    this.#api = send.api ?? '/api/chat';
    this.#endpoint = trimSlash(endpoint);
    this.#stream = stream;
    this.#held = held ?? memoryHeld();
    this.#reconnect = { ...RECONNECT, ...reconnect };
    const responses = this.#responses;
    const doFetch = this.#fetch;
    this.#sender = new DefaultChatTransport({
      ...send,
      fetch: async (input, init) => {
        const res = await doFetch(input, init);
        if (init?.signal) responses.set(init.signal, res.headers);
        return res;
      },
    });
    // ai 5's transports have no resumeStreamIsReplay: its Chat never resets a resumed state.
    this.#replayFlag = this.#sender.resumeStreamIsReplay !== undefined;
  }

  /** ai 6 and 7: a resume's first `start` resets the SDK's state (the transport replays). */
  get resumeStreamIsReplay() {
    return true;
  }

  /** What the page holds of a chat's current stream: `{ streamId, token?, offset, toolCalls }`. */
  async held(chatId) {
    return (await this.#held.get(chatId)) ?? undefined;
  }

  /** Whether `chunk` only rebuilds what the page already held (see `fresh`). */
  isReplayed(chunk) {
    return isReplayedChunk(chunk);
  }

  /**
   * `handler` (an `onToolCall` or `onData`) called only for what is new to the page: never for a
   * chunk that rebuilds what it held, and never twice for one tool call of a chat.
   */
  fresh(handler) {
    return (arg, ...rest) => {
      const chunk = arg !== null && typeof arg === 'object' && 'toolCall' in arg ? arg.toolCall : arg;
      if (isReplayedChunk(chunk)) return undefined;
      const owner = chunk !== null && typeof chunk === 'object' ? OWNER.get(chunk) : undefined;
      if (owner && owner.t === this.#internals && arg !== chunk && typeof chunk.toolCallId === 'string') {
        const m = this.#mem(owner.chatId);
        const record = m.record;
        if (record) {
          if (record.toolCalls.includes(chunk.toolCallId)) return undefined;
          record.toolCalls.push(chunk.toolCallId);
          this.#save(owner.chatId, record);
        }
      }
      return handler(arg, ...rest);
    };
  }

  #mem(chatId) {
    let m = this.#memory.get(chatId);
    if (!m) {
      m = { gen: 0, follow: null, lastFollow: null, disconnected: false, record: null };
      this.#memory.set(chatId, m);
    }
    return m;
  }

  #save(chatId, record) {
    try {
      const r = this.#held.set(chatId, { ...record, toolCalls: [...record.toolCalls] });
      if (r && typeof r.catch === 'function') r.catch(() => {});
    } catch {
      // a full storage: the page holds less than it could say
    }
  }

  // What a Follow calls back into.
  #internals = {
    fetch: (...a) => this.#fetch(...a),
    reconnect: null,
    adopt: (follow, streamId) => {
      const m = this.#mem(follow.chatId);
      if (follow.record === null || follow.record.streamId !== streamId) {
        const token = follow.target.token;
        follow.record = { streamId, ...(token ? { token } : {}), offset: 0, toolCalls: [] };
        m.record = follow.record;
        this.#save(follow.chatId, follow.record);
      }
    },
    confirm: (follow, offset) => {
      const r = follow.record;
      if (r && r.streamId === follow.expectId && offset > r.offset) {
        r.offset = offset;
        this.#save(follow.chatId, r);
      }
    },
    disconnected: (follow) => {
      const m = this.#mem(follow.chatId);
      if (m.follow === follow) m.disconnected = true;
    },
    ended: () => {},
  };

  #target(chatId, streamId, token) {
    if (streamId === undefined) return { url: `${trimSlash(this.#api)}/${enc(chatId)}/stream` };
    return {
      url: `${this.#endpoint}/v1/streams/${enc(streamId)}/ui-message-stream`,
      cancelUrl: `${this.#endpoint}/v1/streams/${enc(streamId)}/cancel`,
      streamId,
      token,
    };
  }

  #begin(chatId) {
    const m = this.#mem(chatId);
    m.gen += 1;
    if (m.follow) {
      m.lastFollow = m.follow;
      m.follow.stop();
      m.follow = null;
    }
    return m;
  }

  /** The SDK aborted a request: a stop is a cancel, unless the chat went on with another request. */
  #onAbort(chatId, gen, follow, target) {
    follow?.stop();
    if (!this.#cancelOnStop) return;
    setTimeout(() => {
      const m = this.#mem(chatId);
      if (m.gen !== gen) return;
      const url = target.cancelUrl ?? cancelUrlOf(target.url);
      const token = target.token;
      this.#fetch(url, {
        method: 'POST',
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...target.headers },
        credentials: target.credentials,
        keepalive: true,
      }).then(
        (res) => res.body?.cancel().catch(() => {}),
        () => {},
      );
    }, 0);
  }

  #follow(m, chatId, target, { from, skip, record, signal, wait204 }) {
    this.#internals.reconnect = this.#reconnect;
    const follow = new Follow(this.#internals, { chatId, target, from, skip, record, wait204 });
    m.follow = follow;
    m.disconnected = false;
    m.record = record;
    const gen = m.gen;
    if (signal) {
      if (signal.aborted) follow.stop();
      else signal.addEventListener('abort', () => this.#onAbort(chatId, gen, follow, target), { once: true });
    }
    return follow;
  }

  async sendMessages(options) {
    const { chatId } = options;
    const m = this.#begin(chatId);
    const signal = options.abortSignal ?? new AbortController().signal;
    const stream = await this.#sender.sendMessages({ ...options, abortSignal: signal });
    const headers = this.#responses.get(signal);
    this.#responses.delete(signal);
    const streamId = headers?.get('x-twoplane-stream') ?? null;
    if (streamId === null) return stream; // a route that does not produce into twoplane
    stream.cancel().catch(() => {});
    const token = headers.get('x-twoplane-token') ?? undefined;
    const record = { streamId, ...(token ? { token } : {}), offset: 0, toolCalls: [] };
    this.#save(chatId, record);
    const target = (await this.#resolve(chatId, { streamId, token })) ?? this.#target(chatId, streamId, token);
    const follow = this.#follow(m, chatId, target, { from: 0, skip: false, record, signal, wait204: 10_000 });
    if ((await follow.start()) === 'none') {
      follow.stop();
      throw new Error(`twoplane: stream ${streamId} did not open`);
    }
    return follow.readable;
  }

  async #resolve(chatId, known) {
    if (typeof this.#stream !== 'function') return undefined;
    const t = await this.#stream({ chatId, ...known });
    if (t === undefined) return undefined;
    if (t === null) return null;
    return { ...t, streamId: t.streamId ?? known.streamId, token: t.token ?? known.token };
  }

  async reconnectToStream(options) {
    const { chatId, abortSignal } = options;
    const m = this.#begin(chatId);
    const held = m.record ?? (await this.#held.get(chatId)) ?? null;
    let target = await this.#resolve(chatId, { streamId: held?.streamId, token: held?.token });
    if (target === null) return null;
    target ??= this.#target(chatId, held?.streamId, held?.token);
    const record = held && (target.streamId === undefined || target.streamId === held.streamId) ? { ...held, toolCalls: [...(held.toolCalls ?? [])] } : null;
    let from = record?.offset ?? 0;
    let skip = false;
    // ai 5's Chat goes on from the state it has (after a disconnect, or when the held message has a
    // tool input still streaming): then the chunks it holds must not be sent again.
    const last = m.lastFollow;
    if (!this.#replayFlag && last && last.enqueuedEnd !== undefined && (m.disconnected || last.openTools.size > 0)) {
      from = last.enqueuedEnd;
      skip = true;
    }
    const follow = this.#follow(m, chatId, target, { from, skip, record, signal: abortSignal });
    if ((await follow.start()) === 'none') {
      follow.stop();
      return null;
    }
    return follow.readable;
  }

  /** Stop every stream this transport follows (ai 7's optional `close`). Nothing is cancelled. */
  close() {
    for (const m of this.#memory.values()) m.follow?.stop();
  }
}

function cancelUrlOf(url) {
  const [path, query] = url.split('?');
  const p = path.endsWith('/ui-message-stream') ? `${path.slice(0, -'/ui-message-stream'.length)}/cancel` : `${trimSlash(path)}/cancel`;
  return query ? `${p}?${query}` : p;
}
