// StreamReader: the live-plane reader for browsers and Node, with no framework.
//
// What it guarantees (docs/contract.md §4; the decisions are the backend's numeric Reader):
// 1. It joins at the durable text's length when constructed, and nothing later moves that join.
// 2. Its accumulator starts as that durable text.
// 3. On `end`, `stale` or `absent` (and on a gap or a malformed or foreign frame) it stops for
//    good: it closes its connection, cancels any pending reconnect, and ignores every later frame.
// 4. Its text is keyed to its stream id: `rendered(durable, otherId)` is the durable text alone.
// 5. A chunk is spliced at its own `from`; a chunk past the accumulator's end stops it as a gap.
// Beyond the rules:
// - A dropped connection (network error, server close without a terminal, a cut mid-event) is
//   followed by exactly one new connection after a backoff, from the accumulator's length, with
//   `Last-Event-ID` naming it (fetch transport). An incomplete event is never applied.
// - Per-frame cost does not grow with the response: the accumulator is a list of pieces that is
//   only joined when someone reads `.text`, and `onUpdate` reports each change as a cut position
//   and the text appended after it, which a UI applies to a DOM text node in O(change).
// - Exceptions thrown by the app's callbacks are reported (rethrown asynchronously), never
//   mistaken for a dropped connection.

//
// The pieces live in their own modules: the accumulator (accumulator.js), the reconnect delay
// (backoff.js) and the two transports (transport-fetch.js, transport-eventsource.js); this file
// decides, with the backend's Reader, what each frame does, and owns the connection's life.

import { TwoplaneError } from './errors.js';
import { frameKindCode, num, textLen } from './frames.js';
import { ACTION_SPLICE, ACTION_STOP, KIND_CHUNK, KIND_OPEN, KIND_UNKNOWN, STOP_REASONS } from './codes.js';
import { Accumulator } from './accumulator.js';
import { Backoff } from './backoff.js';
import { runFetch } from './transport-fetch.js';
import { runEventSource } from './transport-eventsource.js';

/** Report an app callback's exception without letting it unwind into the reader. */
function report(err) {
  if (typeof globalThis.reportError === 'function') globalThis.reportError(err);
  else queueMicrotask(() => { throw err; });
}

export function createStreamReader(backend, { spliceStreamText }) {
  /** What `onUpdate` receives: the accumulator was cut at `cut` and `appended` was appended
   *  after it. `text` is the whole accumulator, joined only if read (read it during the callback:
   *  later it is the accumulator as it is then). */
  class ReaderUpdate {
    #reader;

    constructor(reader, cut, appended) {
      this.#reader = reader;
      this.cut = cut;
      this.appended = appended;
    }

    get text() {
      return this.#reader.text;
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

    #core;
    #joinOffset;
    #acc;

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
        durableText = '',
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
      if (typeof durableText !== 'string') throw new TwoplaneError('invalid_argument', 'durableText must be a string');
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
      // Rules 1 and 2: the join offset and the seed are the durable text as it is right now.
      this.#joinOffset = durableText.length;
      this.#core = new backend.Reader(durableText.length);
      this.#acc = new Accumulator(durableText);
    }

    /** The accumulated text: the durable text joined at, spliced with every chunk since. */
    get text() {
      return this.#acc.text;
    }

    /** The accumulator's length, without joining it. */
    get length() {
      return this.#acc.length;
    }

    get streamId() {
      return this.#streamId;
    }

    /** The durable length the reader joined at. */
    get joinOffset() {
      return this.#joinOffset;
    }

    /** Where the next connection resumes (the accumulator's length). */
    get resumeFrom() {
      return this.#core.resumeFrom();
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
      if (backend.splicePoint(d.length, this.#acc.length) < 0) return d;
      return spliceStreamText(d, this.text);
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
      let action;
      let text;
      try {
        // The hot path, a chunk: one numeric call decides, and the text never leaves JavaScript.
        if (frame !== null && frame !== undefined && frame.type === 'chunk') {
          text = frame.text;
          action = this.#core.feed(KIND_CHUNK, false, num(frame.from), num(frame.seq), textLen(text));
        } else {
          action = this.#feedOther(frame);
        }
      } catch {
        // A getter that throws (a Proxy, say) makes the frame unreadable: an unknown frame.
        action = this.#core.feed(KIND_UNKNOWN, false, NaN, NaN, NaN);
      }
      if (action === ACTION_SPLICE) {
        const at = this.#core.at();
        this.#acc.splice(at, text);
        if (this.#onUpdate !== null) this.#emitUpdate(at, text);
        return true;
      }
      if (action === ACTION_STOP) {
        this.#stop(STOP_REASONS[this.#core.stopCode()] ?? 'malformed', frame);
        return false;
      }
      return true;
    }

    #feedOther(frame) {
      const kind = frameKindCode(frame);
      if (kind === KIND_OPEN) return this.#core.feed(KIND_OPEN, frame.streamId === this.#streamId, num(frame.from), NaN, NaN);
      return this.#core.feed(kind, false, NaN, NaN, NaN);
    }

    #emitFrame(frame) {
      try {
        this.#onFrame(frame);
      } catch (err) {
        report(err);
      }
    }

    #emitUpdate(at, text) {
      try {
        this.#onUpdate(new ReaderUpdate(this, at, text));
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
      const from = this.#core.resumeFrom();
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
      if (this.#core.resumeFrom() > this.#connectedFrom) this.#backoff.reset();
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
