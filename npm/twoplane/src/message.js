// Messages made of parts (docs/contract.md §8): the frame codec, the relay conform pass, the
// durable message and the reader of a message, over the backend's message members (see the
// contract in facade.js).
//
// What it guarantees:
// - Rules live in the backend (the Rust core). Per frame, the frame is reduced to numbers exactly
//   as the core's JavaScript view does (twoplane_core::jsview::message_numbers; feedNumbers in
//   message-state.js): the kind from `type`, every value that is not a number as NaN, `part` and
//   `at` NaN when absent. No frame text or JSON crosses per frame.
// - The durable message and the reader's message are held here (message-state.js) and change only
//   as the backend's numeric reader decides; they equal the core's fold of the same frames (its
//   document, after `JSON.parse`). Assembly is JavaScript too (message-store.js), so it works in
//   every build, the shipped wasm build (which has no codec) included.
// - `MessageRelayConform.feed` behaves as `StreamRelayConform.feed` does, being the same class
//   (relay.js) over the message pass: it returns the very object it accepted, builds the
//   synthesized `open` and the terminating `stale` with the key order of §1, and never throws
//   except from the app's own `onViolation`.
// - Every error thrown carries a stable `.kind` and is a `TwoplaneError`.

import { TwoplaneError, asTwoplaneError } from './errors.js';
import { relayConformClass } from './relay.js';
import { KIND_UNKNOWN, MESSAGE_ACTIONS, STOP_REASONS } from './codes.js';
import { ACT_IGNORE, ACT_SPLICE, ACT_STOP, MessageState, feedNumbers, textSeed } from './message-state.js';
import { assembleState } from './message-store.js';

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

// Only assembleDurableMessage makes a DurableMessage: it hands the constructor this token.
const SEAL = Symbol('DurableMessage');
let seedOf;

/**
 * The durable message of a row and its chunk rows (docs/contract.md §8), as
 * `assembleDurableMessage` assembles it. One class for every build: what it holds is plain data,
 * so a reader over either backend may join holding it.
 */
export class DurableMessage {
  #seed;
  #len;
  #message;
  #table;
  #document = null;

  static {
    seedOf = (d) => ({ seed: d.#seed, len: d.#len });
  }

  /** Use `assembleDurableMessage`. */
  constructor(seal, state) {
    if (seal !== SEAL) throw new TwoplaneError('invalid_argument', 'a DurableMessage comes from assembleDurableMessage');
    this.#len = state.len;
    this.#message = state.message;
    this.#seed = state.seed();
    const [, table] = MessageState.coreArgs(this.#seed, this.#len);
    this.#table = table.length === 0 ? null : table;
  }

  /** The stored document's JSON text: `{"parts":[...],"metadata"?,"finishReason"?}`. */
  get document() {
    return (this.#document ??= JSON.stringify(this.#message));
  }

  /** The document as an object (the same object each time). */
  get message() {
    return this.#message;
  }

  /** The length in the coordinate: where a reader holding it joins. */
  get len() {
    return this.#len;
  }

  /** Every part's body length, or null when nothing structural happened. */
  get parts() {
    return this.#table === null ? null : Array.from(this.#table);
  }
}

/** A MessageState over `backend` holding `durable` (a DurableMessage) or, when that is undefined,
 *  a message whose part 0 is `text`. */
export function messageState(backend, durable, text = '') {
  const { seed, len } = durable === undefined ? { seed: textSeed(text), len: text.length } : seedOf(durable);
  let core;
  try {
    core = new backend.MessageReaderCore(...MessageState.coreArgs(seed, len));
  } catch (err) {
    throw asTwoplaneError(err);
  }
  return new MessageState(core, seed);
}

/** Whether `v` is a DurableMessage (from assembleDurableMessage over any build). */
export function isDurableMessage(v) {
  return v instanceof DurableMessage;
}

export function buildMessageApi(backend) {
  // The codec is a backend's only when it has the members: the shipped wasm build leaves it out
  // for its size, and these names then throw `invalid_state`.
  const textHalf = typeof backend.messageFrame === 'function';
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

  /** `row` is the message row (`body`, the stored `document`, its `seq`; absent values are
   *  none), `chunks` its chunk rows `{ seq, text, parts }` (`parts` null in a text row). A row set
   *  no producer could have written throws (`invalid_field`, `invalid_offset`, `invalid_json`,
   *  and the codec's kinds for a stored frame it refuses: message-store.js). */
  function assembleDurableMessage(row, chunks = []) {
    try {
      return new DurableMessage(SEAL, assembleState(backend, row, chunks));
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
   * The reader of a message (docs/contract.md §8) without a transport: joined to `streamId`
   * holding `durable` (a DurableMessage; none: the empty message), it is pushed the
   * subscription's frames and reports each one that changes the message as
   * `onUpdate({ action, part, at, frame })` (`at` for a splice: the part's body becomes
   * `body.slice(0, at) + frame.text`; `part` absent for meta, finish and transient), and its stop
   * as `onStop(reason)`. `message` is the message held, `parts` every part by number, `resumeFrom`
   * where a reconnect resumes. StreamReader (with `durable`) is the same reader with a transport.
   */
  class MessageReader {
    #state;
    #stopped = null;
    #document = null;
    #documentOf = null;

    constructor({ streamId, durable, onUpdate, onStop } = {}) {
      this.streamId = streamId;
      this.onUpdate = onUpdate;
      this.onStop = onStop;
      if (durable !== undefined && durable !== null && !isDurableMessage(durable)) {
        throw new TwoplaneError('invalid_argument', 'durable is a DurableMessage (from assembleDurableMessage)');
      }
      this.#state = messageState(backend, durable ?? undefined);
    }

    /** Why the reader stopped, or null while it is live. */
    get stopped() {
      return this.#stopped;
    }

    get resumeFrom() {
      return this.#state.len;
    }

    /** The message held, as its document's JSON text. */
    get document() {
      const m = this.#state.message;
      if (this.#documentOf !== m) {
        this.#document = JSON.stringify(m);
        this.#documentOf = m;
      }
      return this.#document;
    }

    /** The message held, in the stored document's shape (a new object after every change). */
    get message() {
      return this.#state.message;
    }

    /** Every part by number, part 0 included, each shaped as a document entry. */
    get parts() {
      return this.#state.parts;
    }

    /** One frame of the subscription; returns whether the reader is still live. */
    push(frame) {
      if (this.#stopped !== null) return false;
      const state = this.#state;
      const code = state.feed(frame, this.streamId);
      if (code === ACT_IGNORE) return true;
      if (code === ACT_STOP) {
        this.#stopped = STOP_REASONS[state.stopCode()] ?? 'malformed';
        if (typeof this.onStop === 'function') this.onStop(this.#stopped);
        return false;
      }
      const report = this.onUpdate;
      if (typeof report === 'function') {
        const action = MESSAGE_ACTIONS[code];
        const { part, at } = state;
        report(code === ACT_SPLICE ? { action, part, at, frame } : Number.isNaN(part) ? { action, frame } : { action, part, frame });
      }
      return true;
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
