// Server-sent events in JavaScript: the incremental decoder the reader's fetch transport runs,
// and the one-frame encoder for JavaScript servers.
//
// Why the decoder is JavaScript and not the core's `SseDecoder`: it runs on every network read,
// and its input and output are text. Handing the bytes to WebAssembly and the event data back
// would copy every byte twice and allocate a string per event on the way out, while the browser's
// own TextDecoder and string search are native code already; the only thing the core would decide
// (how the WHATWG rules split lines and fields) is a fixed published algorithm that the shared
// vectors (tests/vectors/sse.json) pin for both implementations. The rules of the *contract*
// (what a frame means) stay in the core.
//
// Guarantees (WHATWG event-stream parsing): LF, CR and CRLF line ends, including a CRLF split
// across reads; one leading BOM dropped (also when split across reads); comment lines ignored;
// multi-line `data` joined with LF; an `id` holding NUL ignored; `retry` honoured only for a
// non-empty run of ASCII digits; an event or line left incomplete at the end of the stream is
// discarded, never dispatched. Bytes may be split anywhere, inside a UTF-8 sequence included;
// invalid UTF-8 becomes U+FFFD exactly as decoding the whole stream at once would.

const LF = 10;
const CR = 13;

export class SseDecoder {
  #onEvent;
  #utf8 = null;
  #atStart = true;
  #pending = '';
  #afterCR = false;
  #data = '';
  #eventType = '';
  #idBuffer = '';
  #ownId = false;

  /** The last event ID as of the latest dispatch (what a reconnect would send). */
  lastEventId = '';
  /** The reconnection time from the latest valid `retry` field, or null. */
  retry = null;

  /** `onEvent(data, type, lastEventId, ownId)` is called for every dispatched event, in order;
   *  `ownId` says whether the event had an `id` field of its own (one that was not ignored), where
   *  `lastEventId` alone cannot tell an event's own id from the one an earlier event left. */
  constructor(onEvent) {
    this.#onEvent = onEvent;
  }

  /** The next piece of the stream: bytes (Uint8Array or ArrayBuffer) or already-decoded text. */
  push(chunk) {
    let text;
    if (typeof chunk === 'string') {
      text = chunk;
      if (this.#atStart && text.length > 0) {
        this.#atStart = false;
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      }
    } else {
      // The WHATWG decoder drops one leading BOM by itself (ignoreBOM: false), across reads too.
      this.#utf8 ??= new TextDecoder('utf-8');
      text = this.#utf8.decode(chunk, { stream: true });
      this.#atStart = false;
    }
    this.#scan(text);
  }

  /** The end of the stream: whatever is incomplete is discarded. The decoder can then read a new
   *  stream; `lastEventId` and `retry` keep their values. */
  end() {
    if (this.#utf8 !== null) {
      // Flushes a truncated UTF-8 sequence; it can only belong to the unterminated last line,
      // which is discarded below anyway.
      this.#utf8.decode();
      this.#utf8 = null;
    }
    this.#atStart = true;
    this.#pending = '';
    this.#afterCR = false;
    this.#data = '';
    this.#eventType = '';
    this.#idBuffer = '';
    this.#ownId = false;
  }

  #scan(text) {
    const n = text.length;
    let i = 0;
    if (this.#afterCR && n > 0) {
      this.#afterCR = false;
      if (text.charCodeAt(0) === LF) i = 1;
    }
    // Positions of the next CR and LF, searched once and reused until passed, so a read with many
    // lines and no CR costs one failed CR search, not one per line.
    let nextLF = -2;
    let nextCR = -2;
    while (i < n) {
      if (nextLF !== -1 && nextLF < i) nextLF = text.indexOf('\n', i);
      if (nextCR !== -1 && nextCR < i) nextCR = text.indexOf('\r', i);
      let end;
      if (nextLF === -1) end = nextCR;
      else if (nextCR === -1) end = nextLF;
      else end = nextLF < nextCR ? nextLF : nextCR;
      if (end === -1) {
        this.#pending += text.slice(i);
        return;
      }
      let line = text.slice(i, end);
      if (this.#pending !== '') {
        line = this.#pending + line;
        this.#pending = '';
      }
      i = end + 1;
      if (text.charCodeAt(end) === CR) {
        if (i < n) {
          if (text.charCodeAt(i) === LF) i++;
        } else {
          this.#afterCR = true;
        }
      }
      this.#line(line);
    }
  }

  #line(line) {
    if (line.length === 0) {
      this.#dispatch();
      return;
    }
    const colon = line.indexOf(':');
    if (colon === 0) return; // a comment
    let name;
    let value;
    if (colon < 0) {
      name = line;
      value = '';
    } else {
      name = line.slice(0, colon);
      const start = line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1;
      value = line.slice(start);
    }
    switch (name) {
      case 'data':
        this.#data += value + '\n';
        break;
      case 'id':
        if (!value.includes('\0')) {
          this.#idBuffer = value;
          this.#ownId = true;
        }
        break;
      case 'event':
        this.#eventType = value;
        break;
      case 'retry':
        if (value.length > 0 && /^[0-9]+$/.test(value)) this.retry = Number(value);
        break;
    }
  }

  #dispatch() {
    this.lastEventId = this.#idBuffer;
    const ownId = this.#ownId;
    this.#ownId = false;
    if (this.#data === '') {
      this.#eventType = '';
      return;
    }
    const data = this.#data.slice(0, -1);
    const type = this.#eventType === '' ? 'message' : this.#eventType;
    this.#data = '';
    this.#eventType = '';
    this.#onEvent(data, type, this.lastEventId, ownId);
  }
}

/**
 * One frame as one SSE event (docs/contract.md §5): `id: <resume point>\n` when the frame has one,
 * then `data: <JSON.stringify(frame)>\n\n`. `resumePoint` is the facade's frameResumePoint.
 */
export function encodeSseEvent(frame, resumePoint) {
  const id = resumePoint(frame);
  const data = `data: ${JSON.stringify(frame)}\n\n`;
  return id === undefined ? data : `id: ${id}\n${data}`;
}
