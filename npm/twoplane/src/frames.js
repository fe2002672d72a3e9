// How a frame object is reduced to the numbers the backend decides from. Conversion only: no
// rule is decided here. Anything that is not a number becomes NaN (so it fails every integer
// check, as `Number.isInteger` fails it), a text that is not a string has length NaN, and a value
// whose `type` is not one of the six frame types is kind 6, "unknown".

/** The kind code of FrameKind in the core: open 0, chunk 1, durable 2, end 3, stale 4, absent 5,
 *  anything else (including non-objects) 6. */
export function frameKindCode(frame) {
  if (frame === null || frame === undefined) return 6;
  switch (frame.type) {
    case 'open': return 0;
    case 'chunk': return 1;
    case 'durable': return 2;
    case 'end': return 3;
    case 'stale': return 4;
    case 'absent': return 5;
    default: return 6;
  }
}

/** A value as the numeric API takes it: a number as itself, anything else NaN. */
export function num(x) {
  return typeof x === 'number' ? x : NaN;
}

/** A string's length in UTF-16 code units, or NaN when it is not a string. */
export function textLen(x) {
  return typeof x === 'string' ? x.length : NaN;
}
