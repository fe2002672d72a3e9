// Lossless moves between JavaScript strings and UTF-16 code units. TextEncoder/TextDecoder and
// wasm-bindgen's `&str` replace unpaired surrogates with U+FFFD; these never touch a code unit.

/** The code units of `s` (every one, unpaired surrogates included). */
export function toUnits(s) {
  const n = s.length;
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) out[i] = s.charCodeAt(i);
  return out;
}

// fromCharCode.apply spreads its arguments on the stack; 8192 stays far below every engine's
// argument limit.
const SLICE = 8192;

/** The string whose code units are `units`. */
export function fromUnits(units) {
  if (units.length <= SLICE) return String.fromCharCode.apply(null, units);
  let out = '';
  for (let i = 0; i < units.length; i += SLICE) {
    out += String.fromCharCode.apply(null, units.subarray(i, i + SLICE));
  }
  return out;
}
