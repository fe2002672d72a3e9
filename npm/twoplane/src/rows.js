// How chunk rows cross to a backend in one call: conversion only (the core reads them back in
// twoplane_core::message::MessageChunkRow::from_js_packed and decides everything about them).

/** The packed chunk rows of `assembleMessage`: each string's code units concatenated, and per row
 *  its length, or -1 for a value that is not a string (twoplane_core's
 *  `MessageChunkRow::from_js_packed`). */
export function packRows(rows) {
  const n = rows.length;
  const seqs = new Float64Array(n);
  const textLens = new Float64Array(n);
  const partsLens = new Float64Array(n);
  let texts = '';
  let parts = '';
  for (let i = 0; i < n; i++) {
    const { seq, text, parts: p } = rows[i];
    seqs[i] = seq;
    textLens[i] = typeof text === 'string' ? text.length : -1;
    if (typeof text === 'string') texts += text;
    partsLens[i] = typeof p === 'string' ? p.length : -1;
    if (typeof p === 'string') parts += p;
  }
  return { seqs, texts, textLens, parts, partsLens };
}

