// `uiIngest` and `uiResume`, the AI SDK's UI message stream mapped by the core in bulk, over a
// build that has them (the addon, the full wasm build). The arguments' checks, their defaults and
// the answers' shape are decided here once, so `twoplane/node` and `twoplane/wasm-full` answer
// alike; a build supplies how a string crosses into it (`str`) and its two calls, which take the
// checked arguments and return the core's JSON text or throw a TwoplaneError with the core's kind.
//
// Values cross as JSON text: JSON.stringify writes a lone surrogate as an escape and JSON.parse
// reads it back, so no code unit is lost on the way.

import { TwoplaneError } from './errors.js';

export function uiCalls({ str, ingest, resume }) {
  const text = (value, what) => {
    if (typeof value !== 'string') throw new TwoplaneError('invalid_argument', `${what} is a string`);
    return str(value);
  };
  const array = (value, what) => {
    if (!Array.isArray(value)) throw new TwoplaneError('invalid_argument', `${what} is an array`);
    return str(JSON.stringify(value));
  };
  return {
    /** A whole UI message stream's chunks as the message frames the core maps them to. */
    uiIngest(streamId, chunks) {
      const id = text(streamId, 'streamId');
      const json = array(chunks, 'chunks');
      const out = JSON.parse(ingest(id, json));
      return { frames: out.frames, aborted: out.abort };
    },
    /** The chunks a reader joining the message `frames` make at `from` reads, the stream having
     *  ended with `status` and `error`. */
    uiResume(streamId, frames, { from = 0, status = 'complete', error = null } = {}) {
      const id = text(streamId, 'streamId');
      const json = array(frames, 'frames');
      // A non-number is NaN, which the core refuses as it refuses -1 or 0.5 (`invalid_offset`).
      const at = typeof from === 'number' ? from : NaN;
      const st = text(status, 'status');
      const err = error === null || error === undefined ? null : text(error, 'error');
      return JSON.parse(resume(id, json, at, st, err));
    },
  };
}
