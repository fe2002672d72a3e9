// The WebAssembly backend: adapts the wasm-bindgen exports of bindings/wasm to the backend
// interface of docs/js-backend.md. Conversion only: numbers pass straight through, text crosses
// as UTF-16 code units (never through wasm-bindgen's lossy `&str`, except the URL and header of a
// subscribe request, where the URL standard already replaces lone surrogates), and a failure
// comes back as a TwoplaneError whose `.kind` the core chose.

import { TwoplaneError } from './errors.js';
import { fromUnits, toUnits } from './units.js';

// streamChunkTableDdl's `present` mask (bindings/wasm/src/lib.rs).
const HAS_KEY = 1;
const HAS_STREAM = 2;
const HAS_SEQ = 4;
const HAS_TEXT = 8;

/** Core errors cross as `"<kind>: <message>"` (the core's Display); rebuild the typed error. */
function coreError(raw) {
  const text = String(raw);
  const at = text.indexOf(': ');
  return at > 0 ? new TwoplaneError(text.slice(0, at), text.slice(at + 2)) : new TwoplaneError('invalid_argument', text);
}

/** What a property of an argument object holds, judged the way the Node addon judges it, so both
 *  backends accept and refuse the same arguments with the same kinds. */
function prop(obj, name) {
  const v = obj[name];
  if (v === undefined || v === null) return { absent: true };
  return { value: v };
}

function describe(v) {
  if (typeof v === 'object') return 'an object';
  return typeof v;
}

/** An identifier argument: a string (checked for lone surrogates in Rust), or absent. */
function ident(field, p) {
  if (p.absent) return undefined;
  if (typeof p.value === 'string') return p.value;
  throw new TwoplaneError('invalid_field', `${field} must be a string, not ${describe(p.value)}`);
}

const EMPTY = new Uint16Array(0);

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

  class Conform {
    #h;

    constructor(from) {
      this.#h = glue.conformNew(from);
      conforms.register(this, this.#h);
    }

    feed(kind, idMatches, a, b, c) {
      return raw.conformFeed(this.#h, idMatches ? kind | 8 : kind, a, b, c);
    }

    end() {
      return raw.conformEnd(this.#h);
    }

    fail() {
      return raw.conformFail(this.#h);
    }

    pos() {
      return raw.conformPos(this.#h);
    }

    lastDurable() {
      return raw.conformLastDurable(this.#h);
    }

    requested() {
      return raw.conformRequested(this.#h);
    }

    violation() {
      return raw.conformViolation(this.#h);
    }

    reason(streamIdJson, from, seq, typeJson) {
      return fromUnits(glue.conformReason(this.#h, toUnits(streamIdJson), toUnits(from), toUnits(seq), toUnits(typeJson)));
    }
  }

  class Reader {
    #h;
    #at = -1;

    constructor(durableLen) {
      this.#h = glue.readerNew(durableLen);
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

  return {
    name: 'wasm',
    Conform,
    Reader,
    splicePoint: glue.splicePoint,
    assemblyOrder(seqs) {
      return glue.assemblyOrder(seqs);
    },
    streamChunkId(streamId, seq) {
      return fromUnits(glue.streamChunkId(toUnits(streamId), seq));
    },
    streamChunkTableDdl(tables, dialect) {
      if (typeof tables !== 'object' || tables === null) {
        throw new TwoplaneError('invalid_argument', `tables must be an object, not ${tables === null ? 'null' : typeof tables}`);
      }
      let name;
      if (typeof dialect === 'string') name = dialect;
      else if (typeof dialect === 'object' && dialect !== null) name = dialect.name;
      else throw new TwoplaneError('invalid_argument', `dialect must be an object with a name, not ${dialect === null ? 'null' : typeof dialect}`);
      const chunksProp = prop(tables, 'chunks');
      if (chunksProp.absent) throw new TwoplaneError('missing_field', 'tables.chunks is required');
      const chunks = ident('tables.chunks', chunksProp);
      const columns = prop(tables, 'columns');
      const cols = [undefined, undefined, undefined, undefined];
      if (!columns.absent) {
        if (typeof columns.value !== 'object') throw new TwoplaneError('invalid_field', 'tables.columns must be an object');
        const c = columns.value;
        cols[0] = ident('columns.chunkKey', prop(c, 'chunkKey'));
        cols[1] = ident('columns.chunkStream', prop(c, 'chunkStream'));
        cols[2] = ident('columns.chunkSeq', prop(c, 'chunkSeq'));
        cols[3] = ident('columns.chunkText', prop(c, 'chunkText'));
      }
      const present = (cols[0] !== undefined ? HAS_KEY : 0) | (cols[1] !== undefined ? HAS_STREAM : 0) |
        (cols[2] !== undefined ? HAS_SEQ : 0) | (cols[3] !== undefined ? HAS_TEXT : 0);
      const u = (s) => (s === undefined ? EMPTY : toUnits(s));
      try {
        return glue.streamChunkTableDdl(name === 'postgres', toUnits(chunks), present, u(cols[0]), u(cols[1]), u(cols[2]), u(cols[3]));
      } catch (err) {
        throw coreError(err);
      }
    },
    streamRequestFromHttp(url, lastEventId) {
      const header = lastEventId === null || lastEventId === undefined ? undefined : String(lastEventId);
      const r = glue.streamRequestFromHttp(String(url), header);
      const out = { streamId: r.streamId, from: r.from };
      r.free();
      return out;
    },
  };
}
