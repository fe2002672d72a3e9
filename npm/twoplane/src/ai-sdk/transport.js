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
// - A continuation (a client tool's output or an approval sent back) resumes with what the page
//   added to the message itself, which no stream carries: the held snapshot gets the chunks that
//   say it when the continuation leaves, and a resume of a continuation the page sent but never
//   saw answered waits (10 s) for the stream to go on instead of ending where the page stood.
// - A stop (the `abortSignal` the SDK aborts in `stop()`) is a cancel: `POST .../cancel`, unless
//   the same chat started another request at once (a resume that replaced an earlier one), or
//   `cancelOnStop` is false.

import { DefaultChatTransport } from 'ai';
import { Follow, TOOL_ANSWERS, compactChunks, isReplayedChunk, markReplayed, ownerOf } from './follow.js';
import { memoryHeld } from './held.js';
import { resumeSeed } from './probe.js';
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
      const owner = ownerOf(chunk);
      const call = owner && owner.t === this.#internals && arg !== chunk && typeof chunk.toolCallId === 'string';
      if (call && this.#mayReoffer(owner.chatId, chunk.toolCallId)) {
        return this.#reoffer(owner.chatId, chunk.toolCallId).then((again) => (again ? handler(arg, ...rest) : undefined));
      }
      if (isReplayedChunk(chunk)) return undefined;
      if (call) {
        const m = this.#mem(owner.chatId);
        const record = m.record;
        if (record) {
          if (record.toolCalls.includes(chunk.toolCallId)) return undefined;
          record.toolCalls.push(chunk.toolCallId);
          m.ranHere.add(chunk.toolCallId);
          this.#save(owner.chatId, record);
        }
      }
      return handler(arg, ...rest);
    };
  }

  /**
   * Whether a client tool's call may be offered once more: its `onToolCall` ran on a page that went
   * away before the continuation left (`#goingOn` records the output the page gave, and marks
   * `goesOn`), and what that page processed holds no answer to it. Once per call (`reoffered`), and
   * only with the transport's own record (a `snapshot` to tell an answered call by): a store that
   * dropped it cannot say, and the call is not run again.
   */
  #mayReoffer(chatId, toolCallId) {
    const m = this.#mem(chatId);
    const r = m.record;
    if (!r || m.ranHere.has(toolCallId) || !r.toolCalls.includes(toolCallId) || r.goesOn === true) return false;
    if (!Array.isArray(r.snapshot) || r.snapshot.length === 0) return false;
    if ((r.reoffered ?? []).includes(toolCallId)) return false;
    return !r.snapshot.some((c) => c?.toolCallId === toolCallId && TOOL_ANSWERS.includes(c.type));
  }

  /**
   * Offers the call again only when the stream says no one else answers it: the page may have died
   * inside `onToolCall` of a tool the server runs, before the SDK read its output, and that call
   * must not run twice. The SDK awaits `onToolCall`, and the stream is read on meanwhile (Follow's
   * `fateOf`), so the wait ends with the call's output or its step's end.
   */
  async #reoffer(chatId, toolCallId) {
    const m = this.#mem(chatId);
    const fate = m.follow ? await m.follow.fateOf(toolCallId) : 'unknown';
    if (fate !== 'unanswered' || m.record === null || !this.#mayReoffer(chatId, toolCallId)) return false;
    const r = m.record;
    r.reoffered = [...(r.reoffered ?? []), toolCallId];
    m.ranHere.add(toolCallId);
    this.#save(chatId, r);
    return true;
  }

  /**
   * The messages a page starts its `Chat` with, given those the app kept: without a last assistant
   * message whose stream the page holds, since the resume rebuilds that message from its stream.
   * Why the transport does this and does not rely on the SDK's reset: an SDK whose resume builds
   * on the page's last message and never resets it ('held', probe.js: 5.x before 5.0.233, 6.x
   * before 6.0.250, 7.x before 7.0.62) would get that message's parts a second time, and the
   * transport cannot see the page's messages to send only what they lack (`reconnectToStream` is
   * given the chat id alone). On the other releases the result is the same either way. What the
   * page added to the message it drops (a client tool's output, an approval) goes into the
   * resume, as the chunks that say it. Only a store that answers at once (`memoryHeld`,
   * `webStorageHeld`) can be asked here: with an asynchronous store the messages are returned as
   * they are.
   */
  restore(chatId, messages) {
    const list = Array.isArray(messages) ? messages : [];
    const last = list.at(-1);
    if (last?.role !== 'assistant') return list;
    const m = this.#mem(chatId);
    let held = m.record;
    if (!held) {
      try {
        const r = this.#held.get(chatId);
        held = r && typeof r.then !== 'function' ? r : null;
      } catch {
        held = null;
      }
    }
    if (!held || held.streamId !== last.id) return list;
    m.restored = structuredClone(last);
    return list.slice(0, -1);
  }

  #mem(chatId) {
    let m = this.#memory.get(chatId);
    if (!m) {
      // ranHere: the tool calls whose onToolCall ran on this page
      m = { gen: 0, follow: null, lastFollow: null, disconnected: false, record: null, restored: null, ranHere: new Set() };
      this.#memory.set(chatId, m);
    }
    return m;
  }

  #save(chatId, record) {
    try {
      const r = this.#held.set(chatId, { ...record, toolCalls: [...record.toolCalls], ...(record.reoffered ? { reoffered: [...record.reoffered] } : {}) });
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
        // The page saw the stream go on: a continuation it sent is answered.
        if (offset > r.offset) delete r.goesOn;
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
    // The app's resume route, for a page that holds no stream: an app without one (a 404) has
    // nothing to resume, as a 204 says.
    if (streamId === undefined) return { url: `${trimSlash(this.#api)}/${segment(chatId)}/stream`, missingIsNone: true };
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

  #follow(m, chatId, target, { from, skip, record, signal, wait204, prelude, awaitMore }) {
    this.#internals.reconnect = this.#reconnect;
    const follow = new Follow(this.#internals, { chatId, target, from, skip, record, wait204, prelude, awaitMore });
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
    const goingOn = await this.#goingOn(chatId, m, options.messages);
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
    // A new turn's snapshot starts empty. A continuation's is the page's message where the turn
    // starts: the snapshot it held of the stream, with what the page added to it itself (see
    // #goingOn). Without one, a resume gets the server's replay, which lacks those.
    const snapshot = from === 0 ? [] : goingOn && goingOn.streamId === streamId && goingOn.offset === from ? goingOn.snapshot : undefined;
    const record = { streamId, ...(token ? { token } : {}), offset: from, toolCalls: [], ...(snapshot ? { snapshot } : {}) };
    this.#save(chatId, record);
    const target = (await this.#resolve(chatId, { streamId, token })) ?? this.#target(chatId, streamId, token);
    const follow = this.#follow(m, chatId, target, { from, skip: from > 0, record, signal, wait204: 10_000 });
    if ((await follow.start()) === 'none') {
      follow.stop();
      throw new Error(`twoplane: stream ${streamId} did not open`);
    }
    return follow.readable;
  }

  /**
   * A request whose messages end in the assistant message the page holds the stream of is a
   * continuation. The page's message then holds what no stream carries: the output it gave a
   * client-side tool, the approval it gave (the SDK does not send them back in the continuation's
   * stream). The SDK's `Chat` rebuilds a resumed message from the chunks alone, so without them a
   * page reloaded after this request would lose them. They are added to the held snapshot as the
   * chunks that say them, before the request leaves: a page that goes away before the answer comes
   * still has them. `goesOn` marks that a continuation was sent whose answer the page has not seen:
   * a resume then waits for the stream to go on past its end (Follow's `awaitMore`).
   */
  async #goingOn(chatId, m, messages) {
    const last = Array.isArray(messages) ? messages.at(-1) : undefined;
    if (last?.role !== 'assistant') return null;
    const prior = m.record ?? (await this.#held.get(chatId)) ?? null;
    if (!prior || prior.streamId !== last.id || !Array.isArray(prior.snapshot) || prior.snapshot.length === 0) return null;
    const snapshot = withFacts(prior.snapshot, last);
    const record = { ...prior, toolCalls: [...(prior.toolCalls ?? [])], snapshot, goesOn: true };
    m.record = record;
    this.#save(chatId, record);
    return record;
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
    // Where the SDK's Chat starts this resume (probe.js). Within a page the transport knows what
    // the page's message holds (what the last stream handed it); a Chat that goes on from that
    // message must not get it again, and one that starts from nothing must. 'held': always goes on
    // from the page's last message. 'streaming-tool' (ai 5 from 5.0.233): after a disconnect, or
    // when that message has a tool input still streaming. After a reload the page holds nothing
    // of the message when it started from `restore(...)`, which drops it.
    const seed = await resumeSeed();
    const last = m.lastFollow;
    const restored = m.restored;
    m.restored = null;
    if (last && last.enqueuedEnd !== undefined && (seed === 'held' || (seed === 'streaming-tool' && (m.disconnected || last.openTools.size > 0)))) {
      from = last.enqueuedEnd;
      skip = true;
    }
    // A snapshot of what the page processed: replayed here, and only the tail asked for; with what
    // the page added to the message itself, when the app gave it back (`restore`).
    let snapshot = !skip && from > 0 && Array.isArray(record?.snapshot) && record.snapshot.length > 0 ? record.snapshot : undefined;
    if (snapshot && restored && restored.id === record.streamId) snapshot = withFacts(snapshot, restored);
    if (record && !skip && snapshot === undefined) record.snapshot = [];
    const prelude = snapshot?.map((c) => structuredClone(c));
    // A continuation was sent and the page went away before its answer: the stream may not have
    // gone on yet when this asks, so an end where the page stands is not taken as the end at once.
    const awaitMore = record?.goesOn === true && !skip ? 10_000 : 0;
    const follow = this.#follow(m, chatId, target, { from, skip, record, signal: abortSignal, prelude, awaitMore });
    if ((await follow.start()) === 'none') {
      follow.stop();
      // The page dropped the message (`restore`) and twoplane no longer has its stream: what the
      // page processed of it is given back, so the page does not lose it.
      if (restored && prelude) return replayOnly(prelude);
      return null;
    }
    return follow.readable;
  }

  /** Stop every stream this transport follows (ai 7's optional `close`). Nothing is cancelled. */
  close() {
    for (const m of this.#memory.values()) m.follow?.stop();
  }
}

/**
 * The chunks that say what the page added to `message` itself, which `snapshot` (the chunks of
 * its stream) does not hold: a client-side tool's output or error (`addToolOutput`), an approval
 * given (`addToolApprovalResponse`; ai 7's `tool-approval-response` chunk, which ai 5 and 6 do not
 * know and ignore).
 */
function pageFacts(message, snapshot) {
  const has = (type, key, value) => snapshot.some((c) => c?.type === type && c[key] === value);
  const facts = [];
  for (const p of Array.isArray(message.parts) ? message.parts : []) {
    if (typeof p?.type !== 'string' || !(p.type.startsWith('tool-') || p.type === 'dynamic-tool')) continue;
    if (typeof p.toolCallId !== 'string' || p.providerExecuted === true) continue;
    const answered = ['tool-output-available', 'tool-output-error', 'tool-output-denied'].some((t) => has(t, 'toolCallId', p.toolCallId));
    if (p.state === 'output-available' && !answered) {
      facts.push({ type: 'tool-output-available', toolCallId: p.toolCallId, output: p.output });
    } else if (p.state === 'output-error' && !answered) {
      facts.push({ type: 'tool-output-error', toolCallId: p.toolCallId, errorText: p.errorText });
    } else if (p.state === 'approval-responded' && typeof p.approval?.id === 'string' && !has('tool-approval-response', 'approvalId', p.approval.id)) {
      const { id, approved, reason } = p.approval;
      facts.push({ type: 'tool-approval-response', approvalId: id, approved, ...(reason != null ? { reason } : {}) });
    }
  }
  return facts;
}

/**
 * `snapshot` (a message's chunks) with the chunks that say what the page added to `message` itself
 * (pageFacts), each placed right after the last chunk of its tool call, where the stream would have
 * said it: the SDK finds a tool's part by its call within the current step, so a fact placed after
 * a later `start-step` would not find it. Compacted.
 */
function withFacts(snapshot, message) {
  const out = [...snapshot];
  for (const fact of pageFacts(message, snapshot)) {
    const toolCallId =
      fact.toolCallId ?? out.find((c) => c?.type === 'tool-approval-request' && c.approvalId === fact.approvalId)?.toolCallId;
    let at = -1;
    if (typeof toolCallId === 'string') for (let i = 0; i < out.length; i += 1) if (out[i]?.toolCallId === toolCallId) at = i;
    if (at < 0) out.push(fact);
    else out.splice(at + 1, 0, fact);
  }
  return compactChunks(out);
}

/** A resume that is only `chunks`, marked replayed: a message the page held and twoplane no longer
 *  has. */
function replayOnly(chunks) {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < chunks.length) c.enqueue(markReplayed(chunks[i++]));
      else c.close();
    },
  });
}

function cancelUrlOf(url) {
  const [path, query] = url.split('?');
  const p = path.endsWith('/ui-message-stream') ? `${path.slice(0, -'/ui-message-stream'.length)}/cancel` : `${trimSlash(path)}/cancel`;
  return query ? `${p}?${query}` : p;
}
