// How a frame object is reduced to the numbers the backend decides from. Conversion only: no
// rule is decided here. Anything that is not a number becomes NaN (so it fails every integer
// check, as `Number.isInteger` fails it), a text that is not a string has length NaN, and a value
// whose `type` is not one of the six frame types is KIND_UNKNOWN (`frameKindCode` is generated
// from the core into codes.js, with the other codes).

export { frameKindCode } from './codes.js';

/** A value as the numeric API takes it: a number as itself, anything else NaN. */
export function num(x) {
  return typeof x === 'number' ? x : NaN;
}

/** A string's length in UTF-16 code units, or NaN when it is not a string. */
export function textLen(x) {
  return typeof x === 'string' ? x.length : NaN;
}

/** `frame[name]`, or undefined when there is no frame at all. */
export function field(frame, name) {
  return frame === null || frame === undefined ? undefined : frame[name];
}

// The printed pieces a violation reason may quote, exactly as a template literal would print
// them in the JavaScript this replaces; never throws (a hostile value prints as its tag).
export function printString(v) {
  try {
    return String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}

export function printJson(v) {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? 'undefined' : s;
  } catch {
    return printString(v);
  }
}
