// The WebAssembly backend: adapts the wasm-bindgen exports of bindings/wasm to the backend
// interface of docs/js-backend.md. Conversion only: numbers pass straight through, text crosses
// as UTF-16 code units (never through wasm-bindgen's lossy `&str`, except the URL and header of a
// subscribe request, where the URL standard already replaces lone surrogates), and a failure
// comes back as a TwoplaneError whose `.kind` the core chose.

import { TwoplaneError, converting } from './errors.js';
import { fromUnits, toUnits } from './units.js';
import { JS_TYPES, MESSAGE_ACTIONS } from './codes.js';
import { packRows } from './rows.js';

/** Core errors cross as `"<kind>: <message>"` (the core's Display); rebuild the typed error. */
function coreError(raw) {
  const text = String(raw);
  const at = text.indexOf(': ');
  return at > 0 ? new TwoplaneError(text.slice(0, at), text.slice(at + 2)) : new TwoplaneError('invalid_argument', text);
}

/** A call into the module, its errors as TwoplaneErrors (coreError). */
export const callCore = converting(coreError);

/** The core's JsType code of a value (twoplane_core::ddl_args::JsType). */
function typeCode(v) {
  return JS_TYPES.indexOf(v === null ? 'null' : typeof v);
}

const isObject = (v) => typeof v === 'object' && v !== null;

/** The members Conform and MessageConform share (all but `feed`, and the message pass's `open`),
 *  over the module's exports named `<prefix>End`, `<prefix>Fail`, ... and `<prefix>Reason`: the
 *  same calls on either pass, as ConformCalls in backend-napi.js. Each subclass keeps the handle
 *  as well (a private field is its own class's alone), so `feed` stays one field read and one
 *  export call. */
function conformCalls(glue, raw, prefix) {
  const end = raw[`${prefix}End`];
  const fail = raw[`${prefix}Fail`];
  const pos = raw[`${prefix}Pos`];
  const lastDurable = raw[`${prefix}LastDurable`];
  const requested = raw[`${prefix}Requested`];
  const violation = raw[`${prefix}Violation`];
  const reason = glue[`${prefix}Reason`];
  return class ConformCalls {
    #h;

    constructor(h) {
      this.#h = h;
    }

    end() {
      return end(this.#h);
    }

    fail() {
      return fail(this.#h);
    }

    pos() {
      return pos(this.#h);
    }

    lastDurable() {
      return lastDurable(this.#h);
    }

    requested() {
      return requested(this.#h);
    }

    violation() {
      return violation(this.#h);
    }

    reason(streamIdJson, from, seq, typeJson) {
      return fromUnits(reason(this.#h, toUnits(streamIdJson), toUnits(from), toUnits(seq), toUnits(typeJson)));
    }
  };
}

/**
 * The backend object over an initialized wasm-bindgen module namespace (`glue`) and the
 * instance's raw exports (`raw`, what its init returned). The per-frame methods call the raw
 * exports, which take and return plain numbers, so no generated wrapper sits in between; all
 * else goes through the glue, which moves arrays.
 */
export function wasmBackend(glue, raw = glue) {
  // Instances live in the module's slabs (bindings/wasm/src/lib.rs); these classes hold a handle
  // and free the slot when the object is collected. The per-frame methods are one export call
  // with numbers only; the kind and the id match travel as one number (kind | 8 on a match).
  const conforms = new FinalizationRegistry((h) => glue.conformDrop(h));
  const readers = new FinalizationRegistry((h) => glue.readerDrop(h));

  class Conform extends conformCalls(glue, raw, 'conform') {
    #h;

    constructor(from) {
      const h = glue.conformNew(from);
      super(h);
      this.#h = h;
      conforms.register(this, h);
    }

    feed(kind, idMatches, a, b, c) {
      return raw.conformFeed(this.#h, idMatches ? kind | 8 : kind, a, b, c);
    }
  }

  class Reader {
    #h;
    #at = -1;

    constructor(durableLen) {
      this.#h = callCore(() => glue.readerNew(typeof durableLen === 'number' ? durableLen : NaN));
      readers.register(this, this.#h);
    }

    // The module answers a splice with its offset in the same call (>= 0), -1 to ignore and
    // -2 to stop; this maps it onto the action codes 1, 0, 2.
    feed(kind, idMatches, a, b, c) {
      const r = raw.readerFeed(this.#h, idMatches ? kind | 8 : kind, a, b, c);
      if (r >= 0) {
        this.#at = r;
        return 1;
      }
      return r === -1 ? 0 : 2;
    }

    at() {
      return this.#at;
    }

    stopCode() {
      return raw.readerStopCode(this.#h);
    }

    accLen() {
      return raw.readerAccLen(this.#h);
    }

    resumeFrom() {
      return raw.readerResumeFrom(this.#h);
    }
  }

  const messages = wasmMessageMembers(glue, raw);

  return {
    name: 'wasm',
    Conform,
    Reader,
    ...messages,
    splicePoint: glue.splicePoint,
    assemblyOrder(seqs) {
      return glue.assemblyOrder(seqs);
    },
    streamChunkId(streamId, seq) {
      return fromUnits(glue.streamChunkId(toUnits(streamId), seq));
    },
    streamChunkIdText(streamId, seqText) {
      return fromUnits(glue.streamChunkIdText(toUnits(streamId), toUnits(seqText)));
    },
    // Reads the values the core's checks look at (bindings/wasm/src/lib.rs, in DdlArgs order:
    // tables, dialect, dialect.name, tables.chunks, tables.columns and the four column names) in
    // the order the addon reads them; the core decides what is refused and how.
    streamChunkTableDdl(tables, dialect) {
      const dialectName = isObject(dialect) ? dialect.name : undefined;
      const chunks = isObject(tables) ? tables.chunks : undefined;
      const columns = isObject(tables) ? tables.columns : undefined;
      const col = (name) => (isObject(columns) ? columns[name] : undefined);
      const values = [tables, dialect, dialectName, chunks, columns, col('chunkKey'), col('chunkStream'), col('chunkSeq'), col('chunkText')];
      const types = new Uint32Array(values.length);
      const lens = new Uint32Array(values.length);
      let text = '';
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        types[i] = typeCode(v);
        if (typeof v === 'string') {
          lens[i] = v.length;
          text += v;
        }
      }
      return callCore(() => glue.streamChunkTableDdl(types, toUnits(text), lens));
    },
    streamRequestFromHttp(url, lastEventId, requireAbsolute) {
      const header = lastEventId === null || lastEventId === undefined ? undefined : String(lastEventId);
      const r = callCore(() => glue.streamRequestFromHttp(String(url), header, requireAbsolute === true));
      const out = { streamId: r.streamId, from: r.from };
      r.free();
      return out;
    },
    subscribeUrl(endpoint, streamId, from) {
      return callCore(() => glue.subscribeUrl(String(endpoint), toUnits(String(streamId)), typeof from === 'number' ? from : NaN));
    },
  };
}

/** The message members of the backend (facade.js): handles into the module's slabs, freed when
 *  their object is collected, as for Conform and Reader. The id match rides on the kind code as
 *  `kind | 256` (message kind codes pass 8, the six-frame calls' bit). */
function wasmMessageMembers(glue, raw) {
  const readerCores = new FinalizationRegistry((h) => glue.messageReaderCoreDrop(h));
  const conforms = new FinalizationRegistry((h) => glue.messageConformDrop(h));
  const messages = new FinalizationRegistry((h) => glue.messageDrop(h));
  const readers = new FinalizationRegistry((h) => glue.messageReaderDrop(h));

  class MessageConform extends conformCalls(glue, raw, 'messageConform') {
    #h;

    constructor(from) {
      const h = glue.messageConformNew(from);
      super(h);
      this.#h = h;
      conforms.register(this, h);
    }

    feed(kind, idMatches, a, b, c, part, at) {
      return raw.messageConformFeed(this.#h, idMatches ? kind | 256 : kind, a, b, c, part, at);
    }

    open(idMatches, from, seq, durableSeq, parts) {
      return glue.messageConformOpen(this.#h, idMatches, from, seq, durableSeq, parts);
    }
  }

  // The module leaves the part an action names and a splice's offset in a slot of its memory
  // that never moves; a view of it is made again when the memory grew (which detaches the old
  // view's buffer, leaving it empty).
  const outAt = glue.messageReaderCoreOut();
  let out = new Float64Array(raw.memory.buffer, outAt, 2);
  const STOP = MESSAGE_ACTIONS.indexOf('stop');

  /** The numeric reader (docs/js-backend.md): one export call per frame, numbers only; the part
   *  the action names and a splice's offset, read from the out slot, are left in `part` and `at`. */
  class MessageReaderCore {
    #h;
    part = NaN;
    at = NaN;

    constructor(len, parts, ended) {
      this.#h = callCore(() => glue.messageReaderCoreNew(len, parts, ended));
      readerCores.register(this, this.#h);
    }

    feed(kind, idMatches, a, b, c, part, at) {
      const code = raw.messageReaderCoreFeed(this.#h, idMatches ? kind | 256 : kind, a, b, c, part, at);
      if (out.length === 0) out = new Float64Array(raw.memory.buffer, outAt, 2);
      this.part = out[0];
      this.at = out[1];
      // -1: no such reader (only a caller bypassing this adapter makes one), read as a stop.
      return code < 0 ? STOP : code;
    }

    stopCode() {
      return raw.messageReaderCoreStopCode(this.#h);
    }

    resumeFrom() {
      return raw.messageReaderCoreResumeFrom(this.#h);
    }
  }

  class MessageReader {
    #h;

    constructor(h) {
      this.#h = h;
      readers.register(this, h);
    }

    feed(kind, idMatches, a, b, c, part, at) {
      return raw.messageReaderFeed(this.#h, idMatches ? kind | 256 : kind, a, b, c, part, at);
    }

    part() {
      return raw.messageReaderPart(this.#h);
    }

    at() {
      return raw.messageReaderAt(this.#h);
    }

    apply(json) {
      callCore(() => glue.messageReaderApply(this.#h, toUnits(json)));
    }

    document() {
      return glue.messageReaderDocument(this.#h);
    }

    resumeFrom() {
      return raw.messageReaderResumeFrom(this.#h);
    }

    stopCode() {
      return raw.messageReaderStopCode(this.#h);
    }
  }

  class Message {
    #h;

    constructor(h) {
      this.#h = h;
      messages.register(this, h);
    }

    document() {
      return glue.messageDocument(this.#h);
    }

    len() {
      return raw.messageLen(this.#h);
    }

    partTable() {
      return glue.messagePartTable(this.#h);
    }

    reader() {
      return new MessageReader(callCore(() => glue.messageReaderNew(this.#h)));
    }
  }

  // The text half is in the module only when it was built with the `message-text` feature (the
  // shipped build leaves it out for its size: bindings/wasm/src/message.rs); without it these
  // members are absent and the facade's codec says so with an `invalid_state` error.
  if (typeof glue.messageFrameEncode !== 'function') return { MessageConform, MessageReaderCore };
  return {
    MessageConform,
    MessageReaderCore,
    messageFrame(json, asEvent) {
      return callCore(() => glue.messageFrameEncode(toUnits(json), asEvent === true));
    },
    messageResumePoint(json) {
      return callCore(() => glue.messageFrameResumePoint(toUnits(json)));
    },
    messageErrorField(json) {
      const field = glue.messageFrameErrorField(toUnits(json));
      return field === '' ? null : field;
    },
    assembleMessage(body, stored, seq, rows) {
      const p = packRows(rows);
      const units = (s) => (typeof s === 'string' ? toUnits(s) : undefined);
      const h = callCore(() => glue.messageAssemble(units(body), units(stored), seq, p.seqs, toUnits(p.texts), p.textLens, toUnits(p.parts), p.partsLens));
      return new Message(h);
    },
  };
}
