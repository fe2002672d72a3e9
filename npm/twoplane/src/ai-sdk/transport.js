// `TwoplaneChatTransport`, twoplane/ai-sdk's `ChatTransport` for `useChat`/`Chat`. It sends with
// the SDK's own `DefaultChatTransport`; once the route's answer names its twoplane stream
// (`x-twoplane-stream`), it reads the stream from twoplane (`GET .../ui-message-stream`, a Follow
// of follow.js) instead of the route's body, so every chunk it hands the SDK has a place in the
// stream's coordinate.
//
// What it guarantees:
// - A resume asks for the message from the offset the page holds (`?from=N`); the chunks that
//   rebuild what the page holds (the SDK's `Chat` starts every resume from an empty state) are
//   marked as replayed, and `fresh(handler)` keeps `onToolCall`/`onData` from seeing them, so no
//   callback fires twice for what the page had. `N` is how far the page's `Chat` has *processed*
//   the stream, recorded in a `held` store (held.js) the app may persist
//   (`webStorageHeld(sessionStorage)`) to carry it across a reload.
// - A stop (the `abortSignal` the SDK aborts in `stop()`) is a cancel: `POST .../cancel`, unless
//   the same chat started another request at once (a resume that replaced an earlier one), or
//   `cancelOnStop` is false.

import { DefaultChatTransport } from 'ai';
import { Follow, compactChunks, isReplayedChunk, ownerOf } from './follow.js';
import { memoryHeld } from './held.js';
import { bearer, segment, trimSlash } from './http.js';

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
      const owner = ownerOf(chunk);
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
        follow.record = { streamId, ...(token ? { token } : {}), offset: 0, toolCalls: [], snapshot: [] };
        m.record = follow.record;
        this.#save(follow.chatId, follow.record);
      }
    },
    confirm: (follow, offset, processed, restart) => {
      const r = follow.record;
      if (!r || r.streamId !== follow.expectId) return;
      // The snapshot is the message as the page processed it, group by group, compacted.
      if (restart) r.snapshot = [];
      const grew = processed.length > 0 && Array.isArray(r.snapshot);
      if (grew) r.snapshot = compactChunks([...r.snapshot, ...processed]);
      if (offset > r.offset || grew) {
        r.offset = Math.max(r.offset, offset);
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
    if (streamId === undefined) return { url: `${trimSlash(this.#api)}/${segment(chatId)}/stream` };
    return {
      url: `${this.#endpoint}/v1/streams/${segment(streamId)}/ui-message-stream`,
      cancelUrl: `${this.#endpoint}/v1/streams/${segment(streamId)}/cancel`,
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
        headers: { ...bearer(token), ...target.headers },
        credentials: target.credentials,
        keepalive: true,
      }).then(
        (res) => res.body?.cancel().catch(() => {}),
        () => {},
      );
    }, 0);
  }

  #follow(m, chatId, target, { from, skip, record, signal, wait204, prelude }) {
    this.#internals.reconnect = this.#reconnect;
    const follow = new Follow(this.#internals, { chatId, target, from, skip, record, wait204, prelude });
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
    // A continuation (a client tool's output or an approval sent back) goes on with the message
    // the page holds: its stream is followed from where the turn starts, and the SDK, which goes
    // on from the state it has, is handed only what follows.
    const from = Number.parseInt(headers.get('x-twoplane-from') ?? '0', 10) || 0;
    // A new turn's snapshot starts empty; a continuation's page holds more than the stream says
    // (a client tool's output), so it keeps none, and a resume gets the server's replay.
    const record = { streamId, ...(token ? { token } : {}), offset: from, toolCalls: [], ...(from === 0 ? { snapshot: [] } : {}) };
    this.#save(chatId, record);
    const target = (await this.#resolve(chatId, { streamId, token })) ?? this.#target(chatId, streamId, token);
    const follow = this.#follow(m, chatId, target, { from, skip: from > 0, record, signal, wait204: 10_000 });
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
    // A snapshot of what the page processed: replayed here, and only the tail asked for.
    const snapshot = !skip && from > 0 && Array.isArray(record?.snapshot) && record.snapshot.length > 0 ? record.snapshot : undefined;
    if (record && !skip && snapshot === undefined) record.snapshot = [];
    const prelude = snapshot?.map((c) => structuredClone(c));
    const follow = this.#follow(m, chatId, target, { from, skip, record, signal: abortSignal, prelude });
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
