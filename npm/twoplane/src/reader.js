// StreamReader: the live-plane reader for browsers and Node, with no framework.
//
// What it guarantees (docs/contract.md §4 and §8; the decisions are the backend's numeric message
// reader, twoplane_core::message::MessageReaderCore):
// 1. It joins at the durable message's length when constructed (`durable`, a DurableMessage, or
//    `durableText`, a message whose part 0 is that text), and nothing later moves that join.
// 2. Its message starts as that durable message.
// 3. On `end`, `stale` or `absent` (and on a gap or a malformed or foreign frame) it stops for
//    good: it closes its connection, cancels any pending reconnect, and ignores every later frame.
// 4. What it holds is keyed to its stream id: `rendered(durable, otherId)` is the durable text
//    alone, `renderedMessage(durable, otherId)` the durable message alone.
// 5. A delta is spliced into its part's body at its own offset; a delta past the end of the
//    message or of its body stops it as a gap, one that breaks a part rule as malformed.
// A stream of today's six frames is a message that only ever has part 0: every verdict, change
// and update is the one the text reader gave (tests/vectors/reader.json and the reader's
// differential test replay through this reader).
// Beyond the rules:
// - A dropped connection (network error, server close without a terminal, a cut mid-event) is
//   followed by exactly one new connection after a backoff, from the accumulator's length, with
//   `Last-Event-ID` naming it (fetch transport). An incomplete event is never applied.
// - Per-frame cost does not grow with the response or with the number of parts: every body is a
//   list of pieces that is only joined when read (message-state.js), and `onUpdate` reports each
//   splice as a part, a cut position and the text appended after it, which a UI applies to a DOM
//   text node in O(change); every other change as its action, part and frame.
// - Exceptions thrown by the app's callbacks are reported (rethrown asynchronously), never
//   mistaken for a dropped connection.

//
// The pieces live in their own modules: the accumulator (accumulator.js), the reconnect delay
// (backoff.js) and the two transports (transport-fetch.js, transport-eventsource.js); this file
// decides, with the message state (message-state.js) and the backend's numeric reader, what each
// frame does, and owns the connection's life.

import { TwoplaneError } from './errors.js';
import { num } from './frames.js';
import { MESSAGE_ACTIONS, STOP_REASONS } from './codes.js';
import { ACT_IGNORE, ACT_SPLICE, ACT_STOP } from './message-state.js';
import { isDurableMessage, messageState } from './message.js';
import { Backoff } from './backoff.js';
import { runFetch } from './transport-fetch.js';
import { runEventSource } from './transport-eventsource.js';

/** Report an app callback's exception without letting it unwind into the reader. */
function report(err) {
  if (typeof globalThis.reportError === 'function') globalThis.reportError(err);
  else queueMicrotask(() => { throw err; });
}

export function createStreamReader(backend, { spliceStreamText }) {
  /** What `onUpdate` receives for a splice: part `part`'s body was cut at `cut` and `appended`
   *  was appended after it. `text` is that whole body, joined only if read (read it during the
   *  callback: later it is the body as it is then). */
  class ReaderUpdate {
    #state;

    constructor(state, part, cut, appended) {
      this.#state = state;
      this.action = 'splice';
      this.part = part;
      this.cut = cut;
      this.appended = appended;
    }

    get text() {
      return this.#state.body(this.part);
    }
  }

  class StreamReader {
    #endpoint;
    #streamId;
    #transport;
    #fetch;
    #headers;
    #EventSource;
    #withCredentials;
    #backoff;
    #onUpdate;
    #onStop;
    #onFrame;

    #state;
    #joinOffset;

    #started = false;
    #stopped = null;
    #connections = 0;
    // Each connection gets a generation; callbacks of a connection that is no longer current
    // (dropped, replaced, or the reader stopped) see a different number and do nothing.
    #generation = 0;
    // The resume point the current connection started from: a connection that grew the text
    // resets the backoff, one that did not (even if it delivered an `open`) lets it grow.
    #connectedFrom = 0;
    #retryMs = null;
    #timer = null;
    // What closes the current connection (either transport), or null.
    #connection = null;

    constructor(options = {}) {
      const {
        endpoint,
        streamId,
        durableText,
        durable,
        transport = 'fetch',
        fetch,
        EventSource,
        withCredentials = false,
        headers,
        backoff = {},
        onUpdate,
        onStop,
        onFrame,
      } = options ?? {};
      if (typeof streamId !== 'string') throw new TwoplaneError('invalid_argument', 'streamId must be a string');
      const joined = durable !== undefined && durable !== null;
      if (joined && durableText !== undefined) throw new TwoplaneError('invalid_argument', 'durable and durableText are exclusive: pass one');
      if (joined && !isDurableMessage(durable)) throw new TwoplaneError('invalid_argument', 'durable must be a DurableMessage (from assembleDurableMessage)');
      if (durableText !== undefined && typeof durableText !== 'string') throw new TwoplaneError('invalid_argument', 'durableText must be a string');
      if (transport !== 'fetch' && transport !== 'eventsource') {
        throw new TwoplaneError('invalid_argument', `transport must be "fetch" or "eventsource", not ${JSON.stringify(transport)}`);
      }
      this.#endpoint = endpoint === undefined ? undefined : String(endpoint);
      this.#streamId = streamId;
      this.#transport = transport;
      this.#fetch = fetch;
      this.#EventSource = EventSource;
      this.#withCredentials = Boolean(withCredentials);
      try {
        // Checked now, so a bad header is the caller's error and not an endless reconnect loop.
        this.#headers = new Headers(headers ?? undefined);
      } catch (err) {
        throw new TwoplaneError('invalid_argument', `headers: ${err?.message ?? err}`, { cause: err });
      }
      const initialMs = num(backoff?.initialMs);
      const maxMs = num(backoff?.maxMs);
      this.#backoff = new Backoff(initialMs >= 0 ? initialMs : 250, maxMs >= 0 ? maxMs : 5000);
      this.#onUpdate = typeof onUpdate === 'function' ? onUpdate : null;
      this.#onStop = typeof onStop === 'function' ? onStop : null;
      this.#onFrame = typeof onFrame === 'function' ? onFrame : null;
      // Rules 1 and 2: the join offset and the seed are the durable message as it is right now.
      this.#state = joined ? messageState(backend, durable) : messageState(backend, undefined, durableText ?? '');
      this.#joinOffset = this.#state.len;
    }

    /** Part 0's body: the durable text joined at, spliced with every chunk since (for a stream of
     *  today's frames, the whole accumulated text). */
    get text() {
      return this.#state.body(0);
    }

    /** Part 0's body length, without joining it. */
    get length() {
      return this.#state.bodyLength(0);
    }

    /** The message held, in the stored document's shape (docs/contract.md §8): the same object
     *  until something changes, never mutated once handed out. */
    get message() {
      return this.#state.message;
    }

    /** Every part by number, part 0 included, each `{ type, text|inputText, ...attributes }`. */
    get parts() {
      return this.#state.parts;
    }

    get streamId() {
      return this.#streamId;
    }

    /** The durable length the reader joined at (the durable message's `len`). */
    get joinOffset() {
      return this.#joinOffset;
    }

    /** Where the next connection resumes (the length of the message held). */
    get resumeFrom() {
      return this.#state.len;
    }

    /** null while live, else why it stopped: end, stale, absent, gap, foreign_stream, malformed,
     *  refused (the server answered a status that retrying will not change: 204 or a 4xx other
     *  than 408 and 429; or the URL cannot be requested at all) or closed. */
    get stopped() {
      return this.#stopped;
    }

    /** How many connections it has opened. */
    get connections() {
      return this.#connections;
    }

    /** What to render for `streamId` given the durable text now: `spliceStreamText(durableNow,
     *  this.text)` for this reader's stream, the durable text alone for any other (rule 4). */
    rendered(durableNow, streamId = this.#streamId) {
      const d = typeof durableNow === 'string' ? durableNow : '';
      if (streamId !== this.#streamId) return d;
      // When the durable text is at least as long, it wins whole: no need to join the pieces.
      if (backend.splicePoint(d.length, this.length) < 0) return d;
      return spliceStreamText(d, this.text);
    }

    /** What to render for `streamId` given the durable message now (a DurableMessage, possibly
     *  newer than the one joined with): both are prefixes of one produced message, so the longer
     *  one (by `len`) says more, and a tie goes to the store; for any other stream, the durable
     *  message alone (rule 4). Without a durable message, the store has the empty message. */
    renderedMessage(durableNow, streamId = this.#streamId) {
      const d = isDurableMessage(durableNow) ? durableNow : null;
      const len = d === null ? 0 : d.len;
      if (streamId !== this.#streamId || len >= this.#state.len) return d === null ? { parts: [] } : d.message;
      return this.#state.message;
    }

    /** Open the subscription. Returns the reader. */
    start() {
      if (this.#started || this.#stopped !== null) return this;
      if (this.#endpoint === undefined) throw new TwoplaneError('invalid_argument', 'endpoint is required to start()');
      if (this.#transport === 'fetch' && typeof (this.#fetch ?? globalThis.fetch) !== 'function') {
        throw new TwoplaneError('invalid_argument', 'no fetch available: pass options.fetch');
      }
      if (this.#transport === 'eventsource' && typeof (this.#EventSource ?? globalThis.EventSource) !== 'function') {
        throw new TwoplaneError('invalid_argument', 'no EventSource available: pass options.EventSource');
      }
      this.#started = true;
      this.#connect();
      return this;
    }

    /** Stop for good and close the connection. `onStop` is not called: the app asked. */
    close() {
      if (this.#stopped !== null) return;
      this.#stopped = 'closed';
      this.#teardown();
    }

    /**
     * Apply one frame, for apps that bring their own transport (a WebSocket, a test). Returns
     * whether the reader is still live afterwards.
     */
    push(frame) {
      if (this.#stopped !== null) return false;
      if (this.#onFrame !== null) this.#emitFrame(frame);
      // One numeric call decides (the hot path, a chunk, reads the frame's numbers and its text
      // once); the state applies the action, and the text never leaves JavaScript.
      const state = this.#state;
      const code = state.feed(frame, this.#streamId);
      if (code === ACT_IGNORE) return true;
      if (code === ACT_STOP) {
        this.#stop(STOP_REASONS[state.stopCode()] ?? 'malformed', frame);
        return false;
      }
      if (this.#onUpdate !== null) {
        const part = state.part;
        if (code === ACT_SPLICE) this.#emitUpdate(new ReaderUpdate(state, part, state.at, state.text));
        else this.#emitUpdate(Number.isNaN(part) ? { action: MESSAGE_ACTIONS[code], frame } : { action: MESSAGE_ACTIONS[code], part, frame });
      }
      return true;
    }

    #emitFrame(frame) {
      try {
        this.#onFrame(frame);
      } catch (err) {
        report(err);
      }
    }

    #emitUpdate(update) {
      try {
        this.#onUpdate(update);
      } catch (err) {
        report(err);
      }
    }

    // ---- connections

    #stop(reason, frame) {
      this.#stopped = reason;
      this.#teardown();
      if (this.#onStop !== null) {
        try {
          this.#onStop(reason, frame);
        } catch (err) {
          report(err);
        }
      }
    }

    #teardown() {
      this.#generation++;
      if (this.#timer !== null) {
        clearTimeout(this.#timer);
        this.#timer = null;
      }
      if (this.#connection !== null) {
        // Rule 3: an EventSource reconnects on any close, even a clean one, unless closed.
        this.#connection.close();
        this.#connection = null;
      }
    }

    #connect() {
      if (this.#stopped !== null) return;
      const gen = ++this.#generation;
      const from = this.#state.len;
      const reconnect = this.#connections > 0;
      this.#connections++;
      this.#connectedFrom = from;
      // The core builds the URL (twoplane_core::request::subscribe_url_units), for every runtime:
      // one call per connection, nothing next to the network round trip it starts.
      let url;
      try {
        url = backend.subscribeUrl(this.#endpoint, this.#streamId, from);
      } catch {
        // Not reachable with a resume point (always an offset); were it, a URL that cannot be
        // built will not change by asking again, and a reconnect timer must not throw.
        this.#stop('refused', undefined);
        return;
      }
      // The reader's side of this connection: everything it reports is ignored once the reader
      // has moved on to another generation.
      const conn = {
        attach: (handle) => {
          this.#connection = handle;
        },
        isCurrent: () => gen === this.#generation,
        onData: (data) => this.#onData(gen, data),
        onRetry: (ms) => {
          this.#retryMs = ms;
        },
        onDropped: () => this.#dropped(gen),
        onRefused: () => this.#stop('refused', undefined),
      };
      if (this.#transport === 'eventsource') {
        runEventSource(url, { EventSource: this.#EventSource ?? globalThis.EventSource, withCredentials: this.#withCredentials }, conn);
      } else {
        const options = {
          fetch: this.#fetch ?? globalThis.fetch,
          headers: this.#headers,
          withCredentials: this.#withCredentials,
          lastEventId: reconnect ? from : null,
        };
        runFetch(url, options, conn).catch(() => this.#dropped(gen));
      }
    }

    /** The connection of generation `gen` ended without a terminal frame: back off, reconnect. */
    #dropped(gen) {
      if (gen !== this.#generation || this.#stopped !== null) return;
      this.#generation++;
      this.#connection = null;
      if (this.#state.len > this.#connectedFrom) this.#backoff.reset();
      const wait = this.#backoff.next(this.#retryMs);
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#connect();
      }, wait);
    }

    #onData(gen, data) {
      if (gen !== this.#generation) return;
      let frame;
      try {
        frame = JSON.parse(data);
      } catch {
        // Not JSON: an unknown frame, which stops the reader as malformed.
        frame = undefined;
      }
      this.push(frame);
    }
  }

  return StreamReader;
}
