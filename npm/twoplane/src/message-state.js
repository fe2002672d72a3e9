// The message a reader holds (docs/contract.md §8), kept in JavaScript and changed only as the
// backend's numeric reader (twoplane_core::message::MessageReaderCore) decides. StreamReader
// (reader.js), MessageReader and durable assembly (message.js) all hold one of these, so the
// three cannot build different messages from the same frames.
//
// What it guarantees:
// - Per frame, one call with numbers only: the kind code, whether an `open`'s stream id matches,
//   `from`/`seq` (or `seq` for `durable` and `end`), the text length or `durableSeq`, `part` and
//   `at` (NaN when absent or not a number). The text, the kinds and every JSON value stay here.
// - The action the core answers is applied here and nowhere else: a splice of part `part`'s body
//   at `at` (an Accumulator per body, O(change) per delta), a part started with the frame's `kind`
//   and `value`, attributes merged (a member replaces the one of the same name in place, else it is
//   appended: Object.assign's order for every key that is not an integer), a part ended, metadata
//   merged, the finish reason; a transient part is reported and never kept.
// - `message` is the stored document's shape (twoplane_core::message::Message::document), equal to
//   `JSON.parse` of the core's document for the same frames: an untouched part 0 left out, `type`
//   first, the body under `text` (always for `text` and `reasoning`, for other kinds when not
//   empty) or `inputText` (`tool-*` and `dynamic-tool`, when not empty), then the attributes in the
//   order first set; `metadata` and `finishReason` only when set. It is rebuilt only after a
//   change and only for the parts that changed; objects handed out are never mutated afterwards.
// - A structural frame whose numbers are fine but whose other fields no producer writes (a `value`
//   that is not an object or names `type`, `text` or `inputText`; a `part` without a string `kind`;
//   a `finish` without a string `reason`) is malformed: the core is told so before it decides
//   anything, so the message and the resume point stay exactly as they were.

import { Accumulator } from './accumulator.js';
import { num, textLen } from './frames.js';
import {
  KIND_CHUNK, KIND_DURABLE, KIND_END, KIND_OPEN, KIND_UNKNOWN, MESSAGE_ACTIONS, MKIND_FINISH, MKIND_PART, MKIND_TRANSIENT,
  messageKindCode,
} from './codes.js';

// The action codes, by name from the generated table (twoplane_core::message::MessageAction).
export const ACT_IGNORE = MESSAGE_ACTIONS.indexOf('ignore');
export const ACT_SPLICE = MESSAGE_ACTIONS.indexOf('splice');
export const ACT_STOP = MESSAGE_ACTIONS.indexOf('stop');
const ACT_START = MESSAGE_ACTIONS.indexOf('start');
const ACT_END = MESSAGE_ACTIONS.indexOf('end');
const ACT_SET = MESSAGE_ACTIONS.indexOf('set');
const ACT_META = MESSAGE_ACTIONS.indexOf('meta');
const ACT_FINISH = MESSAGE_ACTIONS.indexOf('finish');

/** The keys a `value` may not name: a part's kind and body are the frames' own fields. */
const RESERVED = new Set(['type', 'text', 'inputText']);

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The members of a frame's `value` as a producer writes it (absent: none; an object naming
 *  none of the reserved keys), read once into `[key, value]` pairs; null for anything else. */
export function valueMembers(v) {
  if (v === undefined) return [];
  if (!isObject(v)) return null;
  const keys = Object.keys(v);
  const members = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    if (RESERVED.has(keys[i])) return null;
    members[i] = [keys[i], v[keys[i]]];
  }
  return members;
}

/** Whether `v` is a frame's `value` as a producer writes it. */
export const isValue = (v) => valueMembers(v) !== null;

/** `target[key] = v` as an own data property, `__proto__` included (a JSON object may name it,
 *  and assigning it would replace the target's prototype instead). */
export function putMember(target, key, v) {
  if (key === '__proto__') Object.defineProperty(target, key, { value: v, writable: true, enumerable: true, configurable: true });
  else target[key] = v;
}

/** Merge `value`'s members into `target`: same-named ones replaced in place, others appended. */
export function mergeInto(target, value) {
  if (value === undefined) return target;
  for (const k of Object.keys(value)) putMember(target, k, value[k]);
  return target;
}

/** The same for members already read (`valueMembers`). */
function mergeMembers(target, members) {
  for (const [k, v] of members) putMember(target, k, v);
  return target;
}

const isToolKind = (kind) => kind.startsWith('tool-') || kind === 'dynamic-tool';

/** The document key of a part's body. */
export function bodyKey(kind) {
  return isToolKind(kind) ? 'inputText' : 'text';
}

/** One part's document entry: `{ type, text|inputText?, ...attributes }`. */
function entryOf(part) {
  const entry = { type: part.kind };
  if (part.body.length > 0 || part.kind === 'text' || part.kind === 'reasoning') entry[bodyKey(part.kind)] = part.body.text;
  const attrs = part.attrs;
  for (const k of Object.keys(attrs)) putMember(entry, k, attrs[k]);
  return entry;
}

const hasMembers = (o) => Object.keys(o).length > 0;

/** Part 0 is listed once anything touched it: a body, attributes or its end. */
const touched = (part) => part.body.length > 0 || part.ended || hasMembers(part.attrs);

/**
 * Feed one frame's numbers to a numeric message machine (`MessageConform` or `MessageReaderCore`):
 * both take (kind, idMatches, a, b, c, part, at) as twoplane_core::jsview::message_numbers reads
 * a frame. An `open` with a part table goes to `open` when `withTable` (the conform pass).
 */
export function feedNumbers(core, frame, streamId, withTable) {
  const kind = messageKindCode(frame);
  switch (kind) {
    case KIND_OPEN: {
      const idMatches = frame.streamId === streamId;
      const parts = frame.parts;
      if (withTable && parts !== undefined) {
        // Not an array: one NaN, a table that cannot fit (as the core's view reads it).
        const table = Array.isArray(parts) ? Float64Array.from(parts, num) : Float64Array.of(NaN);
        return core.open(idMatches, num(frame.from), num(frame.seq), num(frame.durableSeq), table);
      }
      return core.feed(KIND_OPEN, idMatches, num(frame.from), num(frame.seq), num(frame.durableSeq), NaN, NaN);
    }
    case KIND_CHUNK:
      return core.feed(KIND_CHUNK, false, num(frame.from), num(frame.seq), textLen(frame.text), num(frame.part), num(frame.at));
    case KIND_DURABLE:
    case KIND_END:
      return core.feed(kind, false, num(frame.seq), NaN, NaN, NaN, NaN);
    default:
      // The structural events follow the six kinds and unknown.
      if (kind >= MKIND_PART) return core.feed(kind, false, num(frame.from), num(frame.seq), NaN, num(frame.part), NaN);
      return core.feed(kind, false, NaN, NaN, NaN, NaN, NaN);
  }
}

const feedUnknown = (core) => core.feed(KIND_UNKNOWN, false, NaN, NaN, NaN, NaN, NaN);

/**
 * The seed of a message: part 0 first. `parts[i]` is `{ kind, body, attrs, ended }` (`body` a
 * string, `attrs` an object this seed owns), `metadata` an object, `finishReason` a string or null.
 */
export function textSeed(body) {
  return { parts: [{ kind: 'text', body, attrs: {}, ended: false }], metadata: {}, finishReason: null };
}

export class MessageState {
  #core;
  #parts;
  #metadata;
  #finish;
  // What was handed out, rebuilt after a change: the document-shaped message, every part's
  // entry by number, and the metadata's copy.
  #message = null;
  #entries = null;
  #metaCopy = null;

  /** The part of the last action (NaN when it named none), and the splice offset and appended
   *  text of the last splice (NaN / undefined after any other action). */
  part = NaN;
  at = NaN;
  text = undefined;

  /** A state holding `seed` (its objects are copied, so the seed stays as it was), deciding with
   *  `core`, a backend MessageReaderCore built for it (`coreArgs`). */
  constructor(core, seed) {
    this.#core = core;
    this.#parts = seed.parts.map((p) => ({ kind: p.kind, body: new Accumulator(p.body), attrs: mergeInto({}, p.attrs), ended: p.ended, entry: null }));
    this.#metadata = mergeInto({}, seed.metadata);
    this.#finish = seed.finishReason;
  }

  /** The backend reader's constructor arguments for `seed` at `len`: the part table (empty when
   *  nothing structural happened) and the numbers of the parts that ended. */
  static coreArgs(seed, len) {
    const parts = seed.parts;
    const structured = parts.length > 1 || parts[0].body.length !== len;
    const table = structured ? Float64Array.from(parts, (p) => p.body.length) : new Float64Array(0);
    const ended = [];
    parts.forEach((p, i) => {
      if (p.ended) ended.push(i);
    });
    return [len, table, Float64Array.from(ended)];
  }

  /** One frame; returns the action code (MESSAGE_ACTIONS) after applying it. */
  feed(frame, streamId) {
    let code;
    try {
      // The hot path, a body delta: one numeric call decides, and the text never leaves here.
      code = frame !== null && frame !== undefined && frame.type === 'chunk' ? this.#chunk(frame) : this.#event(frame, streamId);
    } catch {
      // A getter that throws (a Proxy, say) makes the frame unreadable: an unknown frame.
      code = feedUnknown(this.#core);
    }
    if (code !== ACT_SPLICE) {
      this.part = this.#core.part;
      this.at = NaN;
      this.text = undefined;
    }
    return code;
  }

  /** A chunk: decided, and spliced into its part's body when the core says so. */
  #chunk(frame) {
    const core = this.#core;
    const text = frame.text;
    const code = core.feed(KIND_CHUNK, false, num(frame.from), num(frame.seq), textLen(text), num(frame.part), num(frame.at));
    if (code !== ACT_SPLICE) return code;
    const part = core.part;
    const at = core.at;
    const p = this.#parts[part];
    p.body.splice(at, text);
    p.entry = null;
    this.#message = null;
    this.#entries = null;
    this.part = part;
    this.at = at;
    this.text = text;
    return code;
  }

  /** Every frame but a chunk: events are checked, decided and applied; the rest only decided. */
  #event(frame, streamId) {
    const core = this.#core;
    const kind = messageKindCode(frame);
    if (kind < MKIND_PART) return feedNumbers(core, frame, streamId, false);
    // Read once each, before the core decides: what is checked is what is applied, and nothing
    // read afterwards can throw.
    let value;
    let label;
    if (kind === MKIND_FINISH) {
      label = frame.reason;
      if (typeof label !== 'string') return feedUnknown(core);
    } else {
      value = valueMembers(frame.value);
      if (value === null) return feedUnknown(core);
      if (kind === MKIND_PART || kind === MKIND_TRANSIENT) {
        label = frame.kind;
        if (typeof label !== 'string' && !(kind === MKIND_TRANSIENT && label === undefined)) return feedUnknown(core);
      }
    }
    const code = core.feed(kind, false, num(frame.from), num(frame.seq), NaN, num(frame.part), NaN);
    if (code === ACT_START) {
      this.#parts.push({ kind: label, body: new Accumulator(''), attrs: mergeMembers({}, value), ended: false, entry: null });
    } else if (code === ACT_END || code === ACT_SET) {
      const p = this.#parts[core.part];
      if (code === ACT_END) p.ended = true;
      mergeMembers(p.attrs, value);
      p.entry = null;
    } else if (code === ACT_META) {
      mergeMembers(this.#metadata, value);
      this.#metaCopy = null;
    } else if (code === ACT_FINISH) {
      this.#finish = label;
    } else {
      // Ignore, stop and a transient part (reported, never kept) change nothing here.
      return code;
    }
    this.#changed();
    return code;
  }

  #changed() {
    this.#message = null;
    this.#entries = null;
  }

  /** Where a reconnect resumes: the length of the message held. */
  get len() {
    return this.#core.resumeFrom();
  }

  /** `StopReason::code` once stopped, -1 while live. */
  stopCode() {
    return this.#core.stopCode();
  }

  get partCount() {
    return this.#parts.length;
  }

  /** Part `i`'s body (joined now if it is in pieces). */
  body(i) {
    return this.#parts[i].body.text;
  }

  /** Part `i`'s body length, without joining it. */
  bodyLength(i) {
    return this.#parts[i].body.length;
  }

  /** Every part's entry by number, part 0 included. */
  get parts() {
    if (this.#entries !== null) return this.#entries;
    const parts = this.#parts;
    const entries = new Array(parts.length);
    for (let i = 0; i < parts.length; i++) entries[i] = parts[i].entry ??= entryOf(parts[i]);
    return (this.#entries = entries);
  }

  /** The message in the stored document's shape. */
  get message() {
    if (this.#message !== null) return this.#message;
    const entries = this.parts;
    const m = { parts: touched(this.#parts[0]) ? entries.slice() : entries.slice(1) };
    if (hasMembers(this.#metadata)) m.metadata = this.#metaCopy ??= mergeInto({}, this.#metadata);
    if (this.#finish !== null) m.finishReason = this.#finish;
    return (this.#message = m);
  }

  /** What a later reader of this message is seeded with (textSeed's shape). The objects are this
   *  state's: seed a state only from a state that is no longer fed. */
  seed() {
    return {
      parts: this.#parts.map((p) => ({ kind: p.kind, body: p.body.text, attrs: p.attrs, ended: p.ended })),
      metadata: this.#metadata,
      finishReason: this.#finish,
    };
  }
}
