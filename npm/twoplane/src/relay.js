// The relay conform pass's JavaScript half (docs/contract.md §3), once for both passes:
// StreamRelayConform (facade.js) and MessageRelayConform (message.js) differ only in the numeric
// pass they hold and in how a frame is reduced to numbers for it, so the rest (keeping the
// frames, the synthesized `open`, the terminating `stale`, `onViolation` and the stale owed after
// it threw) is written here and cannot drift between them.
//
// What it guarantees:
// - `feed` returns the very object it accepted (extra fields survive) and never throws, except
//   from the app's own `onViolation`.
// - The frames built here have the key order of docs/contract.md §1, so `JSON.stringify` of them
//   is byte-identical to the core's encoder.

import { field, num, printJson, printString } from './frames.js';
import { VERDICT_DROP, VERDICT_OPEN_THEN_PASS, VERDICT_PASS, VERDICT_VIOLATION } from './codes.js';

/**
 * A relay conform class named `name` over a backend's numeric pass: `newCore(from)` makes the
 * pass (`from` already a number or NaN); `feedFrame(core, frame, streamId)` feeds one frame's
 * numbers and returns the verdict (it may throw: a getter that throws); `feedUnknown(core)` feeds
 * an unknown frame, which is what a frame that threw while being read is.
 */
export function relayConformClass(name, newCore, feedFrame, feedUnknown) {
  const RelayConform = class {
    #core;
    // The terminating `stale` of a violation whose onViolation threw: the throw reached the
    // caller instead of it, so the next call (feed, end or fail) returns it, once.
    #owed = null;

    constructor(streamId, from, onViolation) {
      this.streamId = streamId;
      this.from = from;
      this.onViolation = onViolation;
      this.#core = newCore(num(from));
    }

    /** End of the delivered prefix. */
    get pos() {
      return this.#core.pos();
    }

    /** The last `durable` passed. */
    get lastDurable() {
      return this.#core.lastDurable();
    }

    feed(frame) {
      if (this.#owed !== null) return this.#pay();
      let verdict;
      try {
        verdict = feedFrame(this.#core, frame, this.streamId);
        // The hot path, a chunk that passes: one numeric call and one array.
        if (verdict === VERDICT_PASS) return [frame];
      } catch {
        // A getter that throws (a Proxy, say) makes the frame unreadable: an unknown frame.
        verdict = feedUnknown(this.#core);
      }
      return this.#apply(verdict, frame, true);
    }

    /** The source finished without a terminal frame. */
    end() {
      if (this.#owed !== null) return this.#pay();
      return this.#apply(this.#core.end(), undefined, false);
    }

    /** The source threw, or the reader is being dropped. */
    fail() {
      if (this.#owed !== null) return this.#pay();
      return this.#apply(this.#core.fail(), undefined, false);
    }

    #apply(verdict, frame, fed) {
      switch (verdict) {
        case VERDICT_DROP:
          return [];
        case VERDICT_PASS:
          return [frame];
        case VERDICT_OPEN_THEN_PASS:
          return [this.#synthOpen(), frame];
        case VERDICT_VIOLATION: {
          const stale = this.#stale();
          const report = this.onViolation;
          if (typeof report === 'function') {
            // The pass is already terminated (the core is done), so a throwing onViolation
            // propagates to the caller and leaves a legal state: nothing passes any more, and
            // the stale this call owed is what the next call returns.
            try {
              report(this.#reason(frame, fed));
            } catch (err) {
              this.#owed = stale;
              throw err;
            }
          }
          return [stale];
        }
        default:
          return [this.#stale()];
      }
    }

    #pay() {
      const stale = this.#owed;
      this.#owed = null;
      return [stale];
    }

    #reason(frame, fed) {
      let sid = 'undefined';
      let from = 'undefined';
      let seq = 'undefined';
      let type = 'undefined';
      if (fed) {
        try {
          sid = printJson(field(frame, 'streamId'));
          from = printString(field(frame, 'from'));
          seq = printString(field(frame, 'seq'));
          type = printJson(field(frame, 'type'));
        } catch {
          // Unreadable frame: the pieces keep their "undefined".
        }
      }
      return this.#core.reason(sid, from, seq, type);
    }

    #synthOpen() {
      const at = this.#core.requested();
      return { type: 'open', streamId: this.streamId, from: at, seq: at, durableSeq: at, ended: false };
    }

    #stale() {
      return { type: 'stale', floorSeq: this.#core.pos(), durableSeq: this.#core.lastDurable() };
    }
  };
  // The public name, as a class declaration would have given it.
  Object.defineProperty(RelayConform, 'name', { value: name });
  return RelayConform;
}
