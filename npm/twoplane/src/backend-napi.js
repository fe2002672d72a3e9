// The Node-API backend: finds and loads the native addon (bindings/node), and adapts it to the
// backend interface of docs/js-backend.md. Conversion only; every rule is the core's.
//
// What it guarantees:
// - Loading never throws: `loadAddon()` answers `{ addon, file }` or `{ addon: null, error }`, so
//   the default Node entry can fall back to the wasm build where no addon exists for the platform.
// - Every value handed to the addon has the type its signature declares (numbers stay numbers,
//   anything else becomes NaN; strings are strings), so a conversion error inside Node-API cannot
//   happen through this adapter, and the process never aborts: the addon validates, never panics.
// - Every error thrown from here is a TwoplaneError whose `.kind` is the core's ErrorKind name
//   (the addon puts it on the error's `code`).
// - Text crosses as UTF-16 code units (the addon reads and writes strings with Node-API's UTF-16
//   calls), so unpaired surrogates survive both ways.

import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { TwoplaneError, converting } from './errors.js';
import { uiCalls } from './ui-calls.js';
import { ERROR_KINDS, MESSAGE_ACTIONS } from './codes.js';
import { packRows } from './rows.js';

const require = createRequire(import.meta.url);

/** The ErrorKind names the addon may put on `code` (generated from the core). */
const KINDS = new Set(ERROR_KINDS);

/** An addon error as a TwoplaneError. Node-API's own conversion failures (`NumberExpected`, ...)
 *  are argument errors; anything without a code (a user getter that threw while the addon read an
 *  argument object) is passed through untouched, since it is the caller's own exception. */
function toTwoplaneError(err) {
  if (err instanceof TwoplaneError) return err;
  if (err !== null && typeof err === 'object' && typeof err.code === 'string') {
    const kind = KINDS.has(err.code) ? err.code : 'invalid_argument';
    return new TwoplaneError(kind, String(err.message), { cause: err });
  }
  return err;
}

/** An addon call, its errors as TwoplaneErrors (toTwoplaneError). */
const call = converting(toTwoplaneError);

/** napi-rs platform suffixes, most likely first. On Linux both C libraries are tried in turn
 *  (a glibc build fails to load on musl and the other is tried), which is cheaper than asking
 *  `process.report` which one this is. */
function platformTriples() {
  const { platform, arch } = process;
  if (platform === 'linux') return [`linux-${arch}-gnu`, `linux-${arch}-musl`];
  if (platform === 'win32') return [`win32-${arch}-msvc`, `win32-${arch}-gnu`];
  if (platform === 'darwin') return [`darwin-${arch}`, 'darwin-universal'];
  return [`${platform}-${arch}`];
}

/**
 * Find the addon: `$TWOPLANE_NODE_ADDON` when set (an explicit path wins and is the only one
 * tried), else `native/twoplane.<platform>.node` inside this package (scripts/build-node.sh puts
 * it there). Never throws.
 */
export function loadAddon() {
  const explicit = typeof process.env.TWOPLANE_NODE_ADDON === 'string' && process.env.TWOPLANE_NODE_ADDON !== ''
    ? [process.env.TWOPLANE_NODE_ADDON]
    : null;
  const files = explicit ?? platformTriples().map((t) => fileURLToPath(new URL(`../native/twoplane.${t}.node`, import.meta.url)));
  const failures = [];
  for (const file of files) {
    try {
      return { addon: require(file), file };
    } catch (err) {
      failures.push(`${file}: ${err?.code ?? err?.message ?? err}`);
    }
  }
  return {
    addon: null,
    file: null,
    error: new TwoplaneError(
      'invalid_state',
      `no twoplane Node addon loads on ${process.platform}-${process.arch} (${failures.join('; ')}); ` +
        'run scripts/build-node.sh, or use the wasm build (`twoplane/wasm`)',
    ),
  };
}

const n = (x) => (typeof x === 'number' ? x : NaN);

const STOP = MESSAGE_ACTIONS.indexOf('stop');
const SPLICE = MESSAGE_ACTIONS.indexOf('splice');

// The addon's numeric message reader answers an action and the part it names in one number (one
// Node-API call fewer per frame): `code`, or `code + 16 * (part + 1)` (exact: a part is below
// 2^32). These unpack it.

/** The action code of a reader's answer `r`. */
const actionOf = (r) => (r < 0 ? STOP : r % 16);

/** The part named in a reader's answer `r`, or NaN. */
const partOf = (r) => (r < 16 ? NaN : Math.floor(r / 16) - 1);

/** Frames per native call of the batch encoder (see napiSseBatchEncoder). */
export const SSE_SLICE = 256;

/** The members Conform and MessageConform share: the same calls, with the same arguments, on
 *  either native pass. Each subclass keeps the handle as well (a private field is its own class's
 *  alone) for its per-frame calls, so `feed` stays one field read and one Node-API call. */
class ConformCalls {
  #h;

  constructor(h) {
    this.#h = h;
  }

  end() {
    return this.#h.end();
  }

  fail() {
    return this.#h.fail();
  }

  pos() {
    return this.#h.pos();
  }

  lastDurable() {
    return this.#h.lastDurable();
  }

  requested() {
    return this.#h.requested();
  }

  violation() {
    return this.#h.violation();
  }

  reason(streamIdJson, from, seq, typeJson) {
    return this.#h.reason(String(streamIdJson), String(from), String(seq), String(typeJson));
  }
}

/** The backend object (docs/js-backend.md) over a loaded addon. */
export function napiBackend(addon) {
  const NativeConform = addon.Conform;
  const NativeReader = addon.Reader;

  // Composition rather than extending the native classes: the per-frame methods add one
  // property read and one JS call to a Node-API call that costs hundreds of nanoseconds, and the
  // arguments are coerced to the declared types here, so nothing a caller passes can fail inside
  // Node-API.
  class Conform extends ConformCalls {
    #h;

    constructor(from) {
      const h = new NativeConform(n(from));
      super(h);
      this.#h = h;
    }

    feed(kind, idMatches, a, b, c) {
      return this.#h.feed(n(kind), idMatches === true, n(a), n(b), n(c));
    }
  }

  class Reader {
    #h;

    constructor(durableLen) {
      this.#h = call(() => new NativeReader(n(durableLen)));
    }

    feed(kind, idMatches, a, b, c) {
      return this.#h.feed(n(kind), idMatches === true, n(a), n(b), n(c));
    }

    at() {
      return this.#h.at();
    }

    stopCode() {
      return this.#h.stopCode();
    }

    accLen() {
      return this.#h.accLen();
    }

    resumeFrom() {
      return this.#h.resumeFrom();
    }
  }

  return {
    name: 'napi',
    Conform,
    Reader,
    ...napiMessageMembers(addon),
    splicePoint(durableLen, producedLen) {
      return call(() => addon.splicePointOf(n(durableLen), n(producedLen)));
    },
    assemblyOrder(seqs) {
      return call(() => addon.assemblyOrderOf(seqs instanceof Float64Array ? seqs : Float64Array.from(seqs, n)));
    },
    streamChunkId(streamId, seq) {
      return addon.streamChunkId(String(streamId), n(seq));
    },
    streamChunkIdText(streamId, seqText) {
      return addon.streamChunkIdText(String(streamId), String(seqText));
    },
    streamChunkTableDdl(tables, dialect) {
      return call(() => addon.streamChunkTableDdlOf(tables, dialect));
    },
    streamRequestFromHttp(url, lastEventId, requireAbsolute) {
      return call(() => addon.streamRequestOf(String(url), lastEventId === null || lastEventId === undefined ? null : String(lastEventId), requireAbsolute === true));
    },
    subscribeUrl(endpoint, streamId, from) {
      return call(() => addon.subscribeUrlOf(String(endpoint), String(streamId), n(from)));
    },
  };
}

/** The message members of the backend (facade.js) over the addon's classes; arguments coerced
 *  to the declared types here, as for Conform and Reader. */
function napiMessageMembers(addon) {
  /** The numeric reader (docs/js-backend.md): the addon answers the action and its part in one
   *  number; a splice's offset is asked for next. Both are left in `part` and `at`. */
  class MessageReaderCore {
    #h;
    part = NaN;
    at = NaN;

    constructor(len, parts, ended) {
      this.#h = call(() => new addon.MessageReaderCore(n(len), Float64Array.from(parts, n), Float64Array.from(ended, n)));
    }

    feed(kind, idMatches, a, b, c, part, at) {
      const r = this.#h.feed(n(kind), idMatches === true, n(a), n(b), n(c), n(part), n(at));
      const code = actionOf(r);
      this.part = partOf(r);
      this.at = code === SPLICE ? this.#h.at() : NaN;
      return code;
    }

    stopCode() {
      return this.#h.stopCode();
    }

    resumeFrom() {
      return this.#h.resumeFrom();
    }
  }

  class MessageConform extends ConformCalls {
    #h;

    constructor(from) {
      const h = new addon.MessageConform(n(from));
      super(h);
      this.#h = h;
    }

    feed(kind, idMatches, a, b, c, part, at) {
      return this.#h.feed(n(kind), idMatches === true, n(a), n(b), n(c), n(part), n(at));
    }

    open(idMatches, from, seq, durableSeq, parts) {
      return this.#h.open(idMatches === true, n(from), n(seq), n(durableSeq), parts);
    }
  }

  // The addon's DurableMessage and MessageReader are used as they are: their methods take
  // strings or nothing, and apply() is the one that can fail (wrapped here).
  class MessageReader {
    #h;

    constructor(native) {
      this.#h = native;
    }

    feed(kind, idMatches, a, b, c, part, at) {
      return this.#h.feed(n(kind), idMatches === true, n(a), n(b), n(c), n(part), n(at));
    }

    part() {
      return this.#h.part();
    }

    at() {
      return this.#h.at();
    }

    apply(json) {
      call(() => this.#h.apply(String(json)));
    }

    document() {
      return this.#h.document();
    }

    resumeFrom() {
      return this.#h.resumeFrom();
    }

    stopCode() {
      return this.#h.stopCode();
    }
  }

  class Message {
    #h;

    constructor(native) {
      this.#h = native;
    }

    document() {
      return this.#h.document();
    }

    len() {
      return this.#h.len();
    }

    partTable() {
      return this.#h.partTable();
    }

    reader() {
      return new MessageReader(this.#h.reader());
    }
  }

  const str = (s) => (typeof s === 'string' ? s : null);
  return {
    MessageConform,
    MessageReaderCore,
    messageFrame(json, asEvent) {
      return call(() => addon.messageFrameEncode(String(json), asEvent === true));
    },
    messageResumePoint(json) {
      return call(() => addon.messageFrameResumePoint(String(json)));
    },
    messageErrorField(json) {
      return call(() => addon.messageFrameErrorField(String(json))) ?? null;
    },
    assembleMessage(body, stored, seq, rows) {
      const p = packRows(rows);
      return new Message(call(() => addon.assembleDurableMessageOf(str(body), str(stored), n(seq), p.seqs, p.texts, p.textLens, p.parts, p.partsLens)));
    },
  };
}

/**
 * The batch SSE encoder over the addon: `encodeSseEvents(frames)` is exactly
 * `frames.map(encodeSseEvent).join('')`, i.e. for every frame
 * `id: ${frameResumePoint(frame)}\n` (when defined) then `data: ${JSON.stringify(frame)}\n\n`.
 *
 * How: V8 serializes the whole array in one `JSON.stringify` call (the elements' JSON is the
 * very text `JSON.stringify(frame)` gives, extra fields, key order and lone-surrogate escapes
 * included), the resume points go over as one Float64Array, and the addon cuts the array text
 * into its elements and frames each as an event in one pass. Frames whose array serialization
 * could differ from the standalone one (not an object, a `toJSON` method, which sees a different
 * key) or whose resume point is not a finite number (`String(x)` of anything else is JavaScript's
 * to print) take the one-frame path, so the output is the same for every input.
 */
export function napiSseBatchEncoder(addon, frameResumePoint, encodeSseEvent) {
  const slow = (frames) => {
    let out = '';
    for (let i = 0; i < frames.length; i++) out += encodeSseEvent(frames[i]);
    return out;
  };
  // One scratch array for the resume points, reused: a fresh typed array of more than a few
  // elements is allocated off the V8 heap and costs more than encoding a small batch. A getter
  // of a frame may call the encoder again while the array is in use: that call gets its own.
  const scratch = new Float64Array(SSE_SLICE);
  let busy = false;
  /** One slice of at most SSE_SLICE frames through the addon, or the one-frame path. */
  const slice = (frames) => {
    if (busy) return sliceWith(frames, new Float64Array(SSE_SLICE));
    busy = true;
    try {
      return sliceWith(frames, scratch);
    } finally {
      busy = false;
    }
  };
  const sliceWith = (frames, ids) => {
    const count = frames.length;
    for (let i = 0; i < count; i++) {
      const frame = frames[i];
      if (typeof frame !== 'object' || frame === null || typeof frame.toJSON === 'function') return slow(frames);
      const id = frameResumePoint(frame);
      if (id === undefined) ids[i] = NaN;
      else if (typeof id === 'number' && Number.isFinite(id)) ids[i] = id;
      else return slow(frames);
    }
    const json = JSON.stringify(frames);
    try {
      return addon.encodeSseJson(json, ids, count);
    } catch {
      // Only reachable if the array text and the frame count disagree (a getter that changes
      // what it returns between reads): the one-frame path is the definition, so use it.
      return slow(frames);
    }
  };
  return function encodeSseEvents(frames) {
    if (!Array.isArray(frames)) {
      throw new TwoplaneError('invalid_argument', 'encodeSseEvents takes an array of frames');
    }
    const count = frames.length;
    if (count === 0) return '';
    if (typeof frames.toJSON === 'function') return slow(frames);
    if (count <= SSE_SLICE) return slice(frames);
    // Long batches go in slices: past a few hundred frames the texts outgrow V8's young
    // generation and every call pays for fresh pages; the slices' results concatenate as ropes.
    let out = '';
    for (let i = 0; i < count; i += SSE_SLICE) out += slice(frames.slice(i, i + SSE_SLICE));
    return out;
  };
}


/**
 * The AI SDK's UI message stream mapped by the core, in bulk, for Node servers that map a stream
 * themselves (`twoplane serve` does the same on its routes). Chunks and frames cross as JSON text:
 * `JSON.stringify` escapes a lone surrogate and `JSON.parse` restores it, so nothing is replaced.
 *
 * - `uiIngest(streamId, chunks)`: a whole stream's chunks as the message frames it makes,
 *   `{ frames, aborted }` (`aborted`: the stream ended with an `abort` chunk).
 * - `uiResume(streamId, frames, { from, status, error })`: the chunks a reader joining that
 *   message at offset `from` reads, the stream having ended with `status` (and `error`).
 */
export function napiUiCalls(addon) {
  // Strings pass as they are: the addon reads the id and the JSON as UTF-16 code units itself
  // (bindings/node/src/ui.rs).
  return uiCalls({
    str: (s) => s,
    ingest: (id, json) => call(() => addon.uiIngest(id, json)),
    resume: (id, json, at, status, error) => call(() => addon.uiResume(id, json, at, status, error)),
  });
}
