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

import { TwoplaneError } from './errors.js';
import { frameKindCode, num, textLen } from './frames.js';
import { SseDecoder } from './sse.js';
import { ACTION_SPLICE, ACTION_STOP, KIND_CHUNK, KIND_OPEN, KIND_UNKNOWN, STOP_REASONS } from './codes.js';

/** Report an app callback's exception without letting it unwind into the reader. */
function report(err) {
  if (typeof globalThis.reportError === 'function') globalThis.reportError(err);
  else queueMicrotask(() => { throw err; });
}

/** A 4xx other than timeout / rate limit, or 204, will not change by asking again. */
function isRefusal(status) {
  return status === 204 || (status >= 400 && status < 500 && status !== 408 && status !== 429);
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
    #initialMs;
    #maxMs;
    #onUpdate;
    #onStop;
    #onFrame;

    #core;
    #joinOffset;
    // The accumulator, #len code units: the strings of #blocks, then the pieces of #parts (one per
    // chunk since the last read of `.text`, which joins everything into a single block). A block
    // is a flat string (made by a join) that nothing is ever concatenated onto, so cutting one is
    // an O(1) slice: V8 copies a string only to flatten a rope, and there is no rope to flatten.
    #blocks;
    #parts = [];
    #len;

    #started = false;
    #stopped = null;
    #connections = 0;
    // Each connection gets a generation; callbacks of a connection that is no longer current
    // (dropped, replaced, or the reader stopped) see a different number and do nothing.
    #generation = 0;
    #failures = 0;
    // The resume point the current connection started from: a connection that grew the text
    // resets the backoff, one that did not (even if it delivered an `open`) lets it grow.
    #connectedFrom = 0;
    #retryMs = null;
    #timer = null;
    #abort = null;
    #es = null;

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
      this.#initialMs = initialMs >= 0 ? initialMs : 250;
      this.#maxMs = maxMs >= 0 ? maxMs : 5000;
      this.#onUpdate = typeof onUpdate === 'function' ? onUpdate : null;
      this.#onStop = typeof onStop === 'function' ? onStop : null;
      this.#onFrame = typeof onFrame === 'function' ? onFrame : null;
      // Rules 1 and 2: the join offset and the seed are the durable text as it is right now.
      this.#joinOffset = durableText.length;
      this.#core = new backend.Reader(durableText.length);
      this.#blocks = durableText.length > 0 ? [durableText] : [];
      this.#len = durableText.length;
    }

    /** The accumulated text: the durable text joined at, spliced with every chunk since. */
    get text() {
      this.#fold();
      const blocks = this.#blocks;
      if (blocks.length === 0) return '';
      if (blocks.length > 1) {
        const whole = blocks.join('');
        blocks.length = 1;
        blocks[0] = whole;
      }
      return blocks[0];
    }

    /** The accumulator's length, without joining it. */
    get length() {
      return this.#len;
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
      if (backend.splicePoint(d.length, this.#len) < 0) return d;
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
        this.#splice(at, text);
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

    // ---- the accumulator

    #splice(at, text) {
      let len = this.#len;
      // A chunk that continues the text (nearly all of them) only appends.
      if (len !== at) len = this.#cut(at);
      // Pieces are only joined when someone reads `.text`: an app that renders incrementally
      // never pays for a join at all.
      if (text.length > 0) this.#parts.push(text);
      this.#len = len + text.length;
    }

    /** Cut the accumulator back to `at` (< its length): whole pieces and blocks from the end,
     *  then part of one. Costs O(what is removed), never O(length). */
    #cut(at) {
      const parts = this.#parts;
      let len = this.#len;
      while (len > at && parts.length > 0) {
        const last = parts[parts.length - 1];
        const start = len - last.length;
        if (start >= at) {
          parts.pop();
          len = start;
        } else {
          parts[parts.length - 1] = last.slice(0, at - start);
          len = at;
        }
      }
      const blocks = this.#blocks;
      while (len > at) {
        const last = blocks[blocks.length - 1];
        const start = len - last.length;
        if (start >= at) {
          blocks.pop();
          len = start;
        } else {
          blocks[blocks.length - 1] = last.slice(0, at - start);
          len = at;
        }
      }
      return len;
    }

    #fold() {
      const parts = this.#parts;
      if (parts.length === 0) return;
      const block = parts.length === 1 ? parts[0] : parts.join('');
      this.#blocks.push(block);
      parts.length = 0;
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
      if (this.#abort !== null) {
        this.#abort.abort();
        this.#abort = null;
      }
      if (this.#es !== null) {
        // Rule 3: an EventSource reconnects on any close, even a clean one, unless closed.
        this.#es.close();
        this.#es = null;
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
      const url = backend.subscribeUrl(this.#endpoint, this.#streamId, from);
      if (this.#transport === 'eventsource') this.#runEventSource(gen, url);
      else this.#runFetch(gen, url, from, reconnect).catch(() => this.#dropped(gen));
    }

    /** The connection of generation `gen` ended without a terminal frame: back off, reconnect. */
    #dropped(gen) {
      if (gen !== this.#generation || this.#stopped !== null) return;
      this.#generation++;
      this.#abort = null;
      if (this.#core.resumeFrom() > this.#connectedFrom) this.#failures = 0;
      // At least 1 ms, so a server's `retry: 0` still backs off when it keeps failing.
      const base = Math.max(1, this.#retryMs ?? this.#initialMs);
      const delay = Math.min(this.#maxMs, base * 2 ** this.#failures);
      this.#failures++;
      // Between half and all of the delay, so readers dropped together by one server restart do
      // not all come back in the same millisecond.
      const wait = delay / 2 + (Math.random() * delay) / 2;
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

    async #runFetch(gen, url, from, reconnect) {
      const controller = new AbortController();
      this.#abort = controller;
      const headers = new Headers(this.#headers);
      if (!headers.has('accept')) headers.set('accept', 'text/event-stream');
      if (reconnect) headers.set('last-event-id', String(from));
      const fetchFn = this.#fetch ?? globalThis.fetch;
      const decoder = new SseDecoder((data, type) => {
        if (type === 'message') this.#onData(gen, data);
      });
      let response;
      try {
        response = await fetchFn(url, { headers, signal: controller.signal, cache: 'no-store', credentials: this.#withCredentials ? 'include' : 'same-origin' });
      } catch {
        this.#dropped(gen);
        return;
      }
      if (gen !== this.#generation) {
        response.body?.cancel().catch(() => {});
        return;
      }
      if (!response.ok || response.status === 204) {
        response.body?.cancel().catch(() => {});
        if (isRefusal(response.status)) this.#stop('refused', undefined);
        else this.#dropped(gen);
        return;
      }
      try {
        const body = response.body;
        if (body && typeof body.getReader === 'function') {
          const chunks = body.getReader();
          for (;;) {
            const { value, done } = await chunks.read();
            if (done) break;
            if (gen !== this.#generation) {
              chunks.cancel().catch(() => {});
              return;
            }
            decoder.push(value);
            if (decoder.retry !== null) this.#retryMs = decoder.retry;
            if (gen !== this.#generation) {
              // A terminal frame in this read stopped the reader.
              chunks.cancel().catch(() => {});
              return;
            }
          }
        } else {
          // A fetch without streaming bodies: the whole response at once (still correct, just
          // not live).
          decoder.push(await response.text());
        }
      } catch {
        decoder.end();
        this.#dropped(gen);
        return;
      }
      // The server closed the stream without a terminal frame: whatever was incomplete is
      // discarded, and the reader comes back from its own resume point.
      decoder.end();
      this.#dropped(gen);
    }

    #runEventSource(gen, url) {
      const ES = this.#EventSource ?? globalThis.EventSource;
      let es;
      try {
        es = new ES(url, this.#withCredentials ? { withCredentials: true } : undefined);
      } catch {
        // A URL the EventSource refuses (a syntax error) will not change by asking again.
        this.#stop('refused', undefined);
        return;
      }
      this.#es = es;
      es.onmessage = (ev) => this.#onData(gen, ev.data);
      es.onerror = () => {
        if (gen !== this.#generation) return;
        // An EventSource would reconnect by itself, from the id of the last event it saw and
        // without backoff. The reader takes over instead, so every reconnect starts from its own
        // resume point and backs off the same way as the fetch transport.
        es.close();
        this.#es = null;
        this.#dropped(gen);
      };
    }
  }

  return StreamReader;
}
