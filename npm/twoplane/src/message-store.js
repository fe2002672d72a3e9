// The durable message (docs/contract.md §8) from a message row and its chunk rows, in JavaScript,
// so every build assembles it (the shipped wasm build has no JSON codec: its size budget).
//
// What it guarantees:
// - The message is the one the core assembles (twoplane_core::message::assemble_durable_message)
//   from the same rows, and a row set the core refuses is refused here with the core's error kind:
//   the row's `seq` and every chunk row's `seq` must be offsets (`invalid_offset`); the stored
//   document is read as Message::from_document reads it (`invalid_json` for text that is not JSON,
//   `missing_field`/`invalid_field` for a malformed one, `invalid_offset` when its bodies do not
//   fit in `seq`); a parts row must be a JSON array of frames the core's codec accepts (its kinds:
//   `invalid_json`, `missing_field`, `invalid_field`, `invalid_offset`, `chunk_span`,
//   `unknown_frame_type`, `invalid_status`), every one of them content (`invalid_argument`
//   otherwise); and a frame that breaks a part rule is `invalid_field`, a gap in the message
//   `invalid_offset`.
// - Which frame breaks a rule is decided by the backend's numeric reader, fed exactly as a live
//   reader feeds it (MessageState), so assembly and reading cannot disagree on a rule.
// - JSON text is parsed with `JSON.parse`, after the two checks where it is laxer than the core's
//   reader: a raw unpaired surrogate (JSON text the core writes escapes it) and nesting deeper
//   than twoplane_core::json::MAX_DEPTH are `invalid_json`.

import { TwoplaneError } from './errors.js';
import { field, num } from './frames.js';
import {
  KIND_ABSENT, KIND_CHUNK, KIND_DURABLE, KIND_END, KIND_OPEN, KIND_STALE, KIND_UNKNOWN, MKIND_FINISH, MKIND_PART,
  MKIND_PART_END, MKIND_SET, MKIND_TRANSIENT, STREAM_STATUSES, messageKindCode,
} from './codes.js';
import { ACT_STOP, MessageState, bodyKey, isValue, mergeInto, putMember, textSeed } from './message-state.js';

const MAX = Number.MAX_SAFE_INTEGER;
/** twoplane_core::json::MAX_DEPTH: arrays and objects nested deeper are not JSON the core reads. */
const MAX_DEPTH = 128;
/** The largest part number (a u32). */
const MAX_PART = 2 ** 32 - 1;

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const isOffset = (x) => Number.isInteger(x) && x >= 0 && x <= MAX;
const fail = (kind, message) => new TwoplaneError(kind, message);

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const wellFormed = typeof String.prototype.isWellFormed === 'function'
  ? (s) => s.isWellFormed()
  : (s) => !LONE_SURROGATE.test(s);

/** Whether `v` nests arrays and objects more than `room` deep. */
function tooDeep(v, room) {
  if (typeof v !== 'object' || v === null) return false;
  if (room === 0) return true;
  for (const k of Object.keys(v)) if (tooDeep(v[k], room - 1)) return true;
  return false;
}

/** `json` parsed as the core's reader would accept it; `what` names it in the error. */
function parseJson(json, what) {
  if (!wellFormed(json)) throw fail('invalid_json', `${what} holds a raw unpaired surrogate, which JSON this contract writes escapes`);
  let v;
  try {
    v = JSON.parse(json);
  } catch (err) {
    throw new TwoplaneError('invalid_json', `${what} is not JSON: ${err?.message ?? err}`);
  }
  if (tooDeep(v, MAX_DEPTH)) throw fail('invalid_json', `${what} nests deeper than ${MAX_DEPTH} levels`);
  return v;
}

/** An offset argument, as twoplane_core::jsnum::offset_arg takes it. */
function offsetArg(what, x) {
  if (!isOffset(x)) throw fail('invalid_offset', `${what} ${String(x)} is not an integer in 0..=2^53-1`);
  return x;
}

// ---------------------------------------------------------------- one stored frame, as the codec checks it

function required(v, name) {
  const x = v[name];
  if (x === undefined) throw fail('missing_field', `missing field ${name}`);
  return x;
}

function textField(v, name) {
  const x = required(v, name);
  if (typeof x !== 'string') throw fail('invalid_field', `field ${name} must be a string`);
  return x;
}

function offsetField(v, name) {
  const x = required(v, name);
  if (typeof x !== 'number') throw fail('invalid_field', `field ${name} must be a number`);
  if (!isOffset(x)) throw fail('invalid_offset', `field ${name} must be an integer in 0..=2^53-1, not ${String(x)}`);
  return x;
}

function partField(v) {
  const x = required(v, 'part');
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > MAX_PART) throw fail('invalid_field', 'field part must be an integer in 0..=2^32-1');
}

function valueField(v) {
  if (!isValue(v.value)) throw fail('invalid_field', 'field value must be an object naming neither type, text nor inputText');
}

function chunkSpan(from, seq, text) {
  if (seq < from || seq - from !== text.length) throw fail('chunk_span', `chunk ${from}..${seq} carries ${text.length} code units`);
}

/** Throws the error the core's codec (twoplane_core::message::message_frame_from_value) gives
 *  `v`, in the order it checks; returns the kind code of a frame it accepts. */
function checkFrame(v) {
  if (!isObject(v)) throw fail('invalid_json', 'a frame must be a JSON object');
  const type = textField(v, 'type');
  const kind = messageKindCode(v);
  if (kind === KIND_UNKNOWN) throw fail('unknown_frame_type', `unknown frame type ${JSON.stringify(type.slice(0, 64))}`);
  switch (kind) {
    case KIND_OPEN: {
      textField(v, 'streamId');
      const from = offsetField(v, 'from');
      const seq = offsetField(v, 'seq');
      offsetField(v, 'durableSeq');
      if (typeof required(v, 'ended') !== 'boolean') throw fail('invalid_field', 'field ended must be a boolean');
      if (seq < from) throw fail('invalid_offset', `open has seq ${seq} below from ${from}`);
      const parts = v.parts;
      if (parts !== undefined) {
        if (!Array.isArray(parts) || parts.length === 0) throw fail('invalid_field', 'field parts must be a non-empty array');
        if (!parts.every(isOffset)) throw fail('invalid_offset', 'every body length must be an integer in 0..=2^53-1');
      }
      return kind;
    }
    case KIND_CHUNK: {
      const from = offsetField(v, 'from');
      const seq = offsetField(v, 'seq');
      const text = textField(v, 'text');
      chunkSpan(from, seq, text);
      if (v.part !== undefined || v.at !== undefined) {
        partField(v);
        if (offsetField(v, 'at') + text.length > MAX) throw fail('invalid_offset', 'a body offset past 2^53-1');
      }
      return kind;
    }
    case KIND_DURABLE:
      offsetField(v, 'seq');
      return kind;
    case KIND_END: {
      offsetField(v, 'seq');
      const status = textField(v, 'status');
      if (!STREAM_STATUSES.includes(status)) throw fail('invalid_status', `unknown stream status ${JSON.stringify(status.slice(0, 64))}`);
      if (v.error !== undefined && v.error !== null && typeof v.error !== 'string') throw fail('invalid_field', 'field error must be a string');
      return kind;
    }
    case KIND_STALE:
      offsetField(v, 'floorSeq');
      offsetField(v, 'durableSeq');
      return kind;
    case KIND_ABSENT:
      return kind;
    default:
      break;
  }
  // A structural event: one unit wide.
  const from = offsetField(v, 'from');
  const seq = offsetField(v, 'seq');
  if (from + 1 !== seq) throw fail('invalid_offset', `a ${type} frame spans one unit, not ${from}..${seq}`);
  if (kind === MKIND_PART || kind === MKIND_PART_END || kind === MKIND_SET) partField(v);
  if (kind === MKIND_PART) textField(v, 'kind');
  if (kind === MKIND_FINISH) {
    textField(v, 'reason');
    return kind;
  }
  if (kind === MKIND_TRANSIENT && v.kind !== undefined && typeof v.kind !== 'string') throw fail('invalid_field', 'field kind must be a string');
  valueField(v);
  return kind;
}

// ---------------------------------------------------------------- the stored document

/** The seed of a stored document `len` units long (Message::from_document): parts numbered in
 *  order, after an untouched part 0 when the first listed part is not `text`, every listed part
 *  ended. */
function documentSeed(json, len) {
  const doc = parseJson(json, 'a stored document');
  if (!isObject(doc)) throw fail('invalid_field', 'field parts must be an object');
  const listed = doc.parts;
  if (listed === undefined) throw fail('missing_field', 'a document lists its parts');
  if (!Array.isArray(listed)) throw fail('invalid_field', 'field parts must be an array');
  const parts = [];
  let bodies = 0;
  for (const item of listed) {
    if (!isObject(item) || typeof item.type !== 'string') throw fail('invalid_field', 'every part is an object with a string type');
    const part = { kind: item.type, body: '', attrs: {}, ended: true };
    const key = bodyKey(part.kind);
    for (const k of Object.keys(item)) {
      if (k === 'type') continue;
      const v = item[k];
      if (k !== key) putMember(part.attrs, k, v);
      else if (typeof v === 'string') part.body = v;
      else throw fail('invalid_field', "a part's body is a string");
    }
    bodies += part.body.length;
    parts.push(part);
  }
  if (parts.length === 0 || parts[0].kind !== 'text') parts.unshift(textSeed('').parts[0]);
  const { metadata, finishReason } = doc;
  if (metadata !== undefined && !isObject(metadata)) throw fail('invalid_field', 'field metadata must be an object');
  if (finishReason !== undefined && typeof finishReason !== 'string') throw fail('invalid_field', 'field finishReason must be a string');
  if (bodies > len) throw fail('invalid_offset', "the document's bodies are longer than its seq");
  return { parts, metadata: mergeInto({}, metadata), finishReason: finishReason ?? null };
}

// ---------------------------------------------------------------- assembly

/** One content frame decided by the numeric reader and applied; a frame it refuses throws. */
function applyFrame(state, frame) {
  const kind = messageKindCode(frame);
  if (kind !== KIND_CHUNK && kind < MKIND_PART) throw fail('invalid_argument', `a ${frame.type} frame is not part of a message's content`);
  const pos = state.len;
  if (state.feed(frame, '') !== ACT_STOP) return;
  if (frame.from > pos) throw fail('invalid_offset', `${frame.type} at ${frame.from} leaves a gap after ${pos}`);
  throw fail('invalid_field', `${frame.type} at ${frame.from} breaks a part rule of docs/contract.md §8 (a part that is unknown, not the next one or ended, or a body that does not continue)`);
}

/**
 * The MessageState of a message row (`body`, the stored `document`, its `seq`) and its chunk rows
 * (`{ seq, text, parts }`, `parts` null in a text row), assembled over `backend` (its numeric
 * reader and its assembly order); and the length it reaches. Throws as the header says.
 */
export function assembleState(backend, row, chunks) {
  const rowSeq = field(row, 'seq');
  const seq = offsetArg('seq', rowSeq === undefined ? 0 : num(rowSeq));
  const list = Array.isArray(chunks) ? chunks : [];
  const rows = list.map((r) => ({ seq: offsetArg('chunk seq', num(field(r, 'seq'))), text: field(r, 'text'), parts: field(r, 'parts') }));
  const document = field(row, 'document');
  let seed;
  let len;
  if (typeof document === 'string') {
    seed = documentSeed(document, seq);
    len = seq;
  } else {
    const body = field(row, 'body');
    seed = textSeed(typeof body === 'string' ? body : '');
    len = seed.parts[0].body.length;
  }
  const state = new MessageState(new backend.MessageReaderCore(...MessageState.coreArgs(seed, len)), seed);
  if (rows.length === 0) return state;
  const order = backend.assemblyOrder(Float64Array.from(rows, (r) => r.seq));
  for (let i = 0; i < order.length; i++) {
    const r = rows[order[i]];
    if (typeof r.parts === 'string') {
      // Every frame of the row is checked before any is applied, as the core decodes a row whole.
      const frames = parseJson(r.parts, "a chunk row's parts");
      if (!Array.isArray(frames)) throw fail('invalid_field', 'field parts must be an array');
      frames.forEach(checkFrame);
      for (const frame of frames) applyFrame(state, frame);
    } else {
      // A text row: part 0 text at the end of the message, which is part 0's body offset exactly
      // while nothing structural has happened.
      const text = typeof r.text === 'string' ? r.text : '';
      const from = state.len;
      if (from + text.length > MAX) throw fail('invalid_offset', 'chunk end exceeds 2^53-1');
      applyFrame(state, { type: 'chunk', from, seq: from + text.length, text, part: 0, at: from });
    }
  }
  return state;
}
