// The facade: every public name of `twoplane`, built over one backend object.
//
// What it guarantees:
// - Rules live in the backend (the Rust core); this file only moves values. Per-frame calls pass
//   numbers: a frame's kind code, whether its stream id matches, and its offsets or text length,
//   with every value that is not a number passed as NaN (so strings fail the integer checks as
//   `Number.isInteger` fails them). The frame objects and the text never leave JavaScript.
// - `StreamRelayConform.feed` returns the very object it accepted (extra fields survive) and turns
//   any input, hostile or not, into the contract's behaviour: never a throw, except one from the
//   app's own `onViolation`. Its class is relay.js's, shared with MessageRelayConform.
// - Frames built here and in relay.js (the synthesized `open`, the terminating `stale`) have the
//   key order of docs/contract.md §1, so `JSON.stringify` of them is byte-identical to the core's
//   encoder.
// - Every error thrown carries a stable `.kind` and is a `TwoplaneError`.
//
// THE BACKEND CONTRACT (docs/js-backend.md is the full reference). `buildApi(backend)` needs an
// object with exactly these members; numbers are JS numbers, and every code is the core's, as
// generated into codes.js (KIND_*: open 0, chunk 1, durable 2, end 3, stale 4, absent 5, anything
// else 6; VERDICT_*; ACTION_*; STOP_REASONS):
//   name                                  "wasm" | "napi"
//   new Conform(from)                     numeric conform pass; methods:
//     feed(kind, idMatches, a, b, c)      open: a=from b=seq c=durableSeq; chunk: a=from b=seq
//                                         c=text length or NaN; durable/end: a=seq. Returns the
//                                         verdict: 0 drop, 1 pass, 2 open then pass, 3 violation,
//                                         4 terminate
//     end(), fail()                       verdict codes as above
//     pos(), lastDurable(), requested()   numbers for the stale / synthesized open built here
//     violation()                         code of the last violation
//     reason(streamIdJson, from, seq, typeJson)  reason text of the last violation (lossless)
//   new Reader(durableLen)                numeric reader; methods:
//     feed(kind, idMatches, a, b, c)      open: a=from; chunk: a=from b=seq c=text length or NaN.
//                                         Returns 0 ignore, 1 splice, 2 stop
//     at(), stopCode(), accLen(), resumeFrom()
//   splicePoint(durableLen, producedLen)  -1 when durable wins, else where the tail starts
//   assemblyOrder(Float64Array)           Uint32Array of chunk indices in assembly order
//   streamChunkId(streamId, seq)          string (seq a number)
//   streamChunkIdText(streamId, seqText)  string (seq was not a number; JavaScript printed it)
//   streamChunkTableDdl(tables, dialect)  string[]; throws an error with `.kind`
//   streamRequestFromHttp(url, lastEventId|null, requireAbsolute)  { streamId, from }; a
//                                         relative url with requireAbsolute throws `invalid_url`
//   subscribeUrl(endpoint, streamId, from)  the URL a reader subscribes with (string)
// Messages made of parts (docs/contract.md §8; message.js; the codes of codes.js, MKIND_* and
// MESSAGE_ACTIONS):
//   messageFrame(json, asEvent)           the core's JSON (or SSE event) of a frame's JSON text,
//                                         strictly decoded; throws an error with `.kind`
//   messageResumePoint(json)              the frame's SSE id, or -1; throws as above
//   messageErrorField(json)               the field a refused frame's error names, or null
//   new MessageConform(from)              as Conform, with part numbers; methods:
//     feed(kind, idMatches, a, b, c, part, at)  as Conform.feed; events: a=from b=seq; part and
//                                         at NaN when absent
//     open(idMatches, from, seq, durableSeq, parts)  an open whose `parts` is present
//                                         (Float64Array, NaN for non-numbers)
//     end(), fail(), pos(), lastDurable(), requested(), violation(), reason(...)  as Conform
//   assembleMessage(body|null, stored|null, seq, rows)  the durable message (rows: [{ seq, text,
//                                         parts }]); throws with `.kind`; methods: document(),
//                                         len(), partTable() (empty: none), reader()
//     reader() -> feed(kind, idMatches, a, b, c, part, at) (MessageAction code), part(), at(),
//                 apply(frameJson), document(), resumeFrom(), stopCode()
// A backend may be mixed per operation (the Node entry may take some members from the addon and
// some from the wasm build): the facade never assumes two members come from the same binding,
// except that a Conform's or Reader's methods come with its constructor.

import { TwoplaneError, asTwoplaneError } from './errors.js';
import { createStreamReader } from './reader.js';
import { SseDecoder, encodeSseEvent } from './sse.js';
import { field, frameKindCode, num, textLen } from './frames.js';
import { buildMessageApi } from './message.js';
import { relayConformClass } from './relay.js';
import { KIND_CHUNK, KIND_DURABLE, KIND_END, KIND_OPEN, KIND_UNKNOWN } from './codes.js';

/** The status column's value while a stream is live. */
export const STREAM_STATUS_STREAMING = 'streaming';

/** The SSE response headers (docs/contract.md §5), in the contract's order. */
export const STREAM_SSE_HEADERS = Object.freeze({
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
});


/** `frameResumePoint` (docs/contract.md §2): the SSE `id:` of a frame, or undefined. */
export function frameResumePoint(frame) {
  switch (frameKindCode(frame)) {
    case KIND_OPEN: return frame.from;
    case KIND_CHUNK:
    case KIND_DURABLE:
    case KIND_END: return frame.seq;
    default: return undefined;
  }
}

/** One frame's numbers fed to a numeric conform pass (`Conform`); returns the verdict. The hot
 *  path, a chunk, takes one numeric call: the relay leg feeds thousands of these per second and
 *  a plain-JavaScript pass is the yardstick. */
function feedStreamFrame(core, frame, streamId) {
  if (frame !== null && frame !== undefined && frame.type === 'chunk') {
    return core.feed(KIND_CHUNK, false, num(frame.from), num(frame.seq), textLen(frame.text));
  }
  const kind = frameKindCode(frame);
  switch (kind) {
    case KIND_OPEN:
      return core.feed(KIND_OPEN, frame.streamId === streamId, num(frame.from), num(frame.seq), num(frame.durableSeq));
    case KIND_DURABLE:
    case KIND_END:
      return core.feed(kind, false, num(frame.seq), NaN, NaN);
    default:
      return core.feed(kind, false, NaN, NaN, NaN);
  }
}

export function buildApi(backend) {
  const { splicePoint } = backend;

  /** `durable` then `produced` from `durable.length` when produced is longer, else `durable`. */
  function spliceStreamText(durable, produced) {
    const d = typeof durable === 'string' ? durable : durable == null ? '' : String(durable);
    const p = typeof produced === 'string' ? produced : produced == null ? '' : String(produced);
    const at = splicePoint(d.length, p.length);
    return at < 0 ? d : d + p.slice(at);
  }

  /** `message.body` then the chunks' texts in ascending `seq`, stable; missing text is empty. */
  function assembleDurableText(message, chunks = []) {
    const body = field(message, 'body');
    let out = typeof body === 'string' ? body : '';
    const list = Array.isArray(chunks) ? chunks : [];
    const n = list.length;
    if (n === 0) return out;
    const seqs = new Float64Array(n);
    for (let i = 0; i < n; i++) seqs[i] = num(field(list[i], 'seq'));
    const order = backend.assemblyOrder(seqs);
    for (let i = 0; i < order.length; i++) {
      const text = field(list[order[i]], 'text');
      if (typeof text === 'string') out += text;
    }
    return out;
  }

  /** `"<streamId>:<seq>"`, each part printed as a template literal prints it: a `seq` that is not
   *  a number keeps its own text (`undefined` gives `"<id>:undefined"`, `"05"` stays `"05"`), as
   *  in the TypeScript original, and a Symbol throws a TypeError there as it did there. */
  function streamChunkId(streamId, seq) {
    const id = `${streamId}`;
    return typeof seq === 'number' ? backend.streamChunkId(id, seq) : backend.streamChunkIdText(id, `${seq}`);
  }

  /** The chunk table's migration (docs/contract.md §6): `[CREATE TABLE ..., CREATE INDEX ...]`. */
  function streamChunkTableDdl(tables, dialect) {
    try {
      return backend.streamChunkTableDdl(tables, dialect);
    } catch (err) {
      throw asTwoplaneError(err);
    }
  }

  /** `{ streamId, from }` of a subscribe GET. Takes a fetch `Request`-like object
   *  (`{ url, headers: { get(name) } }`), whose URL must be absolute (a relative one throws
   *  `invalid_url`, as `new URL(url)` threw in the original), or a Node `IncomingMessage`
   *  (`{ url, headers: {...} }`, headers as a plain object), whose URL is the origin-relative path
   *  Node gives it. */
  function streamRequestFromHttp(req) {
    const url = field(req, 'url');
    const headers = field(req, 'headers');
    let lastEventId = null;
    let nodeStyle = false;
    if (headers !== null && headers !== undefined) {
      if (typeof headers.get === 'function') {
        lastEventId = headers.get('last-event-id');
      } else {
        nodeStyle = true;
        const h = headers['last-event-id'];
        lastEventId = Array.isArray(h) ? (h.length > 0 ? h[0] : null) : h;
      }
    }
    try {
      return backend.streamRequestFromHttp(url === undefined || url === null ? '' : String(url), lastEventId ?? null, !nodeStyle);
    } catch (err) {
      throw asTwoplaneError(err);
    }
  }

  /**
   * The relay conform pass (docs/contract.md §3). The verdict comes from the backend; the class
   * (relay.js) keeps the frames, builds the two frames the contract synthesizes, and calls
   * `onViolation`.
   */
  const StreamRelayConform = relayConformClass(
    'StreamRelayConform',
    (from) => new backend.Conform(from),
    feedStreamFrame,
    (core) => core.feed(KIND_UNKNOWN, false, NaN, NaN, NaN),
  );

  const StreamReader = createStreamReader(backend, { spliceStreamText });
  // Messages made of parts (docs/contract.md §8): their own names, over their own members of the
  // backend, so nothing above changes for a single text.
  const message = buildMessageApi(backend);

  return {
    backend: backend.name,
    STREAM_STATUS_STREAMING,
    STREAM_SSE_HEADERS,
    frameResumePoint,
    spliceStreamText,
    assembleDurableText,
    streamChunkId,
    streamChunkTableDdl,
    streamRequestFromHttp,
    StreamRelayConform,
    StreamReader,
    SseDecoder,
    encodeSseEvent: (frame) => encodeSseEvent(frame, frameResumePoint),
    // Many frames as their events, concatenated: `frames.map(encodeSseEvent).join('')`. The Node
    // entries replace it with the addon's batch encoder where that measured faster.
    encodeSseEvents(frames) {
      if (!Array.isArray(frames)) throw new TwoplaneError('invalid_argument', 'encodeSseEvents takes an array of frames');
      let out = '';
      for (let i = 0; i < frames.length; i++) out += encodeSseEvent(frames[i], frameResumePoint);
      return out;
    },
    TwoplaneError,
    ...message,
  };
}
