// Messages made of parts (docs/contract.md §8): the frame codec, the relay conform pass, the
// durable message and its reader, over the backend's message members (see the contract in
// facade.js).
//
// What it guarantees:
// - Rules live in the backend (the Rust core). Per frame, this file reduces the frame to numbers
//   exactly as the core's JavaScript view does (twoplane_core::jsview::message_numbers): the kind
//   from `type`, every value that is not a number as NaN, `part` and `at` NaN when absent.
// - `MessageRelayConform.feed` behaves as `StreamRelayConform.feed` does, being the same class
//   (relay.js) over the message pass: it returns the very object it accepted, builds the
//   synthesized `open` and the terminating `stale` with the key order of §1, and never throws
//   except from the app's own `onViolation`.
// - The reader's message and its document are the core's: a frame whose action changes the
//   message is folded by the core, and `document` is the core's text.
// - Every error thrown carries a stable `.kind` and is a `TwoplaneError`.

import { TwoplaneError, asTwoplaneError } from './errors.js';
import { field, num, textLen } from './frames.js';
import { relayConformClass } from './relay.js';
import {
  KIND_CHUNK, KIND_DURABLE, KIND_END, KIND_OPEN, KIND_UNKNOWN, MESSAGE_ACTIONS, MKIND_PART, STOP_REASONS,
  messageKindCode,
} from './codes.js';

/** JSON text of a frame for the strict codec; a value JSON cannot write is refused, typed. */
function frameJson(frame) {
  let json;
  try {
    json = JSON.stringify(frame);
  } catch (err) {
    throw new TwoplaneError('invalid_json', `the frame cannot be written as JSON: ${err?.message ?? err}`);
  }
  if (typeof json !== 'string') throw new TwoplaneError('invalid_json', 'the frame is not a JSON value');
  return json;
}

/** Feed one frame's numbers to a numeric message machine (`MessageConform` or a reader): both
 *  take (kind, idMatches, a, b, c, part, at). An `open` with a part table goes to `open` when the
 *  machine has one. */
function feedNumbers(core, frame, streamId, withTable) {
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

/** The rows as the backend takes them: `{ seq, text, parts }` read once each. */
function readRows(chunks) {
  const list = Array.isArray(chunks) ? chunks : [];
  const rows = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const row = list[i];
    rows[i] = { seq: num(field(row, 'seq')), text: field(row, 'text'), parts: field(row, 'parts') };
  }
  return rows;
}

const stringOrNull = (v) => (typeof v === 'string' ? v : null);

export function buildMessageApi(backend) {
  // The text half (codec, durable message, reader) is a backend's only when it has the members:
  // the shipped wasm build leaves it out for its size, and these names then throw `invalid_state`.
  const textHalf = typeof backend.messageFrame === 'function' && typeof backend.assembleMessage === 'function';
  const needText = (name) => {
    if (!textHalf) {
      throw new TwoplaneError('invalid_state', `${name} needs the message codec, which the ${backend.name} build here does not have (the Node addon does)`);
    }
  };

  /** The core's text of a message frame, its JSON or (`asEvent`) its SSE event; `name` is the
   *  public function's, for the error of a build without the codec. */
  const encodeWith = (name, frame, asEvent) => {
    needText(name);
    try {
      return backend.messageFrame(frameJson(frame), asEvent);
    } catch (err) {
      throw asTwoplaneError(err);
    }
  };

  /** The core's JSON of a message frame (strict: an invalid frame throws with the core's kind). */
  function encodeMessageFrame(frame) {
    return encodeWith('encodeMessageFrame', frame, false);
  }

  /** One message frame as one SSE event: `id: <resume point>` when it has one, then `data:`. */
  function encodeMessageEvent(frame) {
    return encodeWith('encodeMessageEvent', frame, true);
  }

  /** Parse and check one message frame's JSON text (the core's strict decoder). */
  function decodeMessageFrame(json) {
    needText('decodeMessageFrame');
    if (typeof json !== 'string') throw new TwoplaneError('invalid_json', 'a frame is decoded from a string');
    let canonical;
    try {
      canonical = backend.messageFrame(json, false);
    } catch (err) {
      const typed = asTwoplaneError(err);
      // The field the decoder names, as the core's error holds it (null: none).
      if (typed instanceof TwoplaneError) typed.field = backend.messageErrorField(json);
      throw typed;
    }
    return JSON.parse(canonical);
  }

  /** The SSE `id:` of a message frame, or undefined; an invalid frame throws. */
  function messageResumePoint(frame) {
    needText('messageResumePoint');
    let id;
    try {
      id = backend.messageResumePoint(frameJson(frame));
    } catch (err) {
      throw asTwoplaneError(err);
    }
    return id < 0 ? undefined : id;
  }

  // The backend's message behind each DurableMessage, kept off the public object.
  const cores = new WeakMap();

  /** The durable message of a row and its chunk rows (docs/contract.md §8). */
  class DurableMessage {
    #core;
    #parsed = null;

    /** Use `assembleDurableMessage`; the argument is the backend's message. */
    constructor(core) {
      this.#core = core;
      cores.set(this, core);
    }

    /** The stored document's JSON text: `{"parts":[...],"metadata"?,"finishReason"?}`. */
    get document() {
      return this.#core.document();
    }

    /** The document, parsed (the same object each time). */
    get message() {
      return (this.#parsed ??= JSON.parse(this.#core.document()));
    }

    /** The length in the coordinate: where a reader holding it joins. */
    get len() {
      return this.#core.len();
    }

    /** Every part's body length, or null when nothing structural happened. */
    get parts() {
      const table = this.#core.partTable();
      return table.length === 0 ? null : Array.from(table);
    }
  }

  /** `row` is the message row (`body`, the stored `document`, its `seq`; absent values are
   *  none), `chunks` its chunk rows `{ seq, text, parts }` (`parts` null in a text row). A row set
   *  no producer could have written throws (`invalid_field`, `invalid_offset`, `invalid_json`). */
  function assembleDurableMessage(row, chunks = []) {
    needText('assembleDurableMessage');
    const seq = field(row, 'seq');
    try {
      const core = backend.assembleMessage(
        stringOrNull(field(row, 'body')),
        stringOrNull(field(row, 'document')),
        seq === undefined ? 0 : num(seq),
        readRows(chunks),
      );
      return new DurableMessage(core);
    } catch (err) {
      throw asTwoplaneError(err);
    }
  }

  /**
   * The relay conform pass for messages (docs/contract.md §3 and §8): as StreamRelayConform (the
   * same class, relay.js, over the message pass), and a frame that breaks a part rule (a delta
   * for an unknown part, a body gap, a change of kind) also becomes one `stale`.
   */
  const MessageRelayConform = relayConformClass(
    'MessageRelayConform',
    (from) => new backend.MessageConform(from),
    (core, frame, streamId) => feedNumbers(core, frame, streamId, true),
    (core) => core.feed(KIND_UNKNOWN, false, NaN, NaN, NaN, NaN, NaN),
  );

  /**
   * The reader of a message (docs/contract.md §8): joined to `streamId` holding `durable` (a
   * DurableMessage; none: the empty message), it is pushed the subscription's frames and reports
   * each one that changes the message as `onUpdate({ action, part, at, frame })` (`at` for a
   * splice: the part's body becomes `body.slice(0, at) + frame.text`), and its stop as
   * `onStop(reason)`. `message` is the message held, `resumeFrom` where a reconnect resumes.
   */
  class MessageReader {
    #core;
    #stopped = null;
    #parsed = null;

    constructor({ streamId, durable, onUpdate, onStop } = {}) {
      this.streamId = streamId;
      this.onUpdate = onUpdate;
      this.onStop = onStop;
      const held = durable === undefined || durable === null ? assembleDurableMessage({}, []) : durable;
      if (!(held instanceof DurableMessage)) {
        throw new TwoplaneError('invalid_argument', 'durable is a DurableMessage (from assembleDurableMessage)');
      }
      this.#core = cores.get(held).reader();
    }

    /** Why the reader stopped, or null while it is live. */
    get stopped() {
      return this.#stopped;
    }

    get resumeFrom() {
      return this.#core.resumeFrom();
    }

    /** The message held: its document's JSON text. */
    get document() {
      return this.#core.document();
    }

    /** The message held, parsed (a new object after every change). */
    get message() {
      return (this.#parsed ??= JSON.parse(this.#core.document()));
    }

    /** One frame of the subscription; returns whether the reader is still live. */
    push(frame) {
      if (this.#stopped !== null) return false;
      let code;
      try {
        code = feedNumbers(this.#core, frame, this.streamId, false);
      } catch {
        code = this.#core.feed(KIND_UNKNOWN, false, NaN, NaN, NaN, NaN, NaN);
      }
      const action = MESSAGE_ACTIONS[code];
      if (action === 'ignore') return true;
      if (action === 'stop') return this.#stop(STOP_REASONS[this.#core.stopCode()]);
      const part = this.#core.part();
      const at = this.#core.at();
      try {
        this.#core.apply(frameJson(frame));
      } catch {
        // Numbers that pass on a frame the strict decoder refuses (a `value` that is not an
        // object, say): the message stays as it was, and the reader stops as for any malformed
        // frame, resuming from what it holds.
        return this.#stop('malformed');
      }
      this.#parsed = null;
      const report = this.onUpdate;
      if (typeof report === 'function') {
        report(action === 'splice' ? { action, part, at, frame } : Number.isNaN(part) ? { action, frame } : { action, part, frame });
      }
      return true;
    }

    /** Stop for good with `reason`; returns false (the reader is no longer live). */
    #stop(reason) {
      this.#stopped = reason;
      if (typeof this.onStop === 'function') this.onStop(reason);
      return false;
    }
  }

  return {
    encodeMessageFrame,
    encodeMessageEvent,
    decodeMessageFrame,
    messageResumePoint,
    assembleDurableMessage,
    DurableMessage,
    MessageRelayConform,
    MessageReader,
  };
}
