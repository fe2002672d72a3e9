// A plain-JavaScript model of the relay conform pass, written from docs/contract.md §3 alone (no
// backend, no facade code). It is the third opinion in the differential test and the baseline of
// the Node benchmark. Where docs/contract.md leaves a detail open it follows the contract's own words:
// a value that is not a frame object is "an unknown type", whose reason quotes
// `JSON.stringify(frame.type)` ("undefined" when there is none).

const int = Number.isInteger;

/** `String(x)` that cannot throw (a Symbol prints, a hostile toString falls back to the tag). */
function print(x) {
  try {
    return String(x);
  } catch {
    return Object.prototype.toString.call(x);
  }
}

/** `JSON.stringify(x)`, "undefined" when it gives nothing, `print` when it throws. */
function json(x) {
  try {
    const s = JSON.stringify(x);
    return s === undefined ? 'undefined' : s;
  } catch {
    return print(x);
  }
}

function get(frame, key) {
  return frame === null || frame === undefined ? undefined : frame[key];
}

export class ModelConform {
  constructor(streamId, from, onViolation) {
    this.streamId = streamId;
    this.from = from;
    this.onViolation = onViolation;
    this.pos = from;
    this.lastDurable = 0;
    this.opened = false;
    this.done = false;
  }

  feed(frame) {
    if (this.done) return [];
    const type = get(frame, 'type');
    switch (type) {
      case 'open': {
        if (this.opened) return [];
        const { streamId, from, seq, durableSeq } = frame;
        if (streamId !== this.streamId || !int(from) || !int(seq) || !int(durableSeq) || from < 0 || seq < from) {
          return this.violate(`relay open for ${json(streamId)} at ${print(from)} is malformed`);
        }
        if (from > this.from) return this.violate(`relay open at ${from} cannot serve the requested ${this.from}`);
        this.opened = true;
        this.pos = from;
        return [frame];
      }
      case 'chunk': {
        const { from, seq, text } = frame;
        if (!int(from) || !int(seq) || from < 0 || typeof text !== 'string' || text.length !== seq - from) {
          return this.violate(`relay chunk ${print(from)}\u2192${print(seq)} does not span exactly its offsets`);
        }
        if (from > this.pos) return this.violate(`relay chunk at ${from} leaves a gap after ${this.pos}`);
        if (seq <= this.pos) return [];
        const out = this.opened ? [frame] : [this.synthOpen(), frame];
        this.pos = seq;
        return out;
      }
      case 'durable': {
        const { seq } = frame;
        if (!int(seq) || seq < this.lastDurable || seq > this.pos) return [];
        const out = this.opened ? [frame] : [this.synthOpen(), frame];
        this.lastDurable = seq;
        return out;
      }
      case 'end': {
        const { seq } = frame;
        if (!int(seq) || seq < 0) return this.violate(`relay end at ${print(seq)} is malformed`);
        if (seq > this.pos) return this.violate(`relay end at ${seq} outruns the ${this.pos} characters delivered`);
        this.done = true;
        return this.opened ? [frame] : [this.synthOpen(), frame];
      }
      case 'stale':
      case 'absent':
        this.done = true;
        return [frame];
      default:
        return this.violate(`relay frame of unknown type ${json(type)}`);
    }
  }

  end() {
    if (this.done) return [];
    return this.violate('relay source ended without a terminal frame');
  }

  fail() {
    return this.done ? [] : this.terminate();
  }

  synthOpen() {
    this.opened = true;
    return { type: 'open', streamId: this.streamId, from: this.from, seq: this.from, durableSeq: this.from, ended: false };
  }

  terminate() {
    this.done = true;
    return [{ type: 'stale', floorSeq: this.pos, durableSeq: this.lastDurable }];
  }

  violate(reason) {
    // Terminated first, so an onViolation that throws leaves a pass that accepts nothing more.
    const out = this.terminate();
    if (typeof this.onViolation === 'function') this.onViolation(reason);
    return out;
  }
}
