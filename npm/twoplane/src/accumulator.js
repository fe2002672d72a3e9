// The StreamReader's accumulator: the text it holds, kept so that per-frame cost does not grow
// with the response.
//
// What it guarantees:
// - `splice(at, text)` makes the text `text.slice(0, at) + appended` (the reader's splice; `at` is
//   never past the end, the core's Reader decides that), in O(what is removed + 1): a chunk that
//   continues the text only appends a piece, and nothing is joined.
// - `text` joins the pieces only when read, once: afterwards the accumulator is a single block.
// - Cutting never copies a long string: a block is a flat string (made by a join) that nothing is
//   ever concatenated onto, so cutting one is an O(1) slice (V8 copies a string only to flatten a
//   rope, and there is no rope to flatten).

export class Accumulator {
  // The text, #len code units: the strings of #blocks, then the pieces of #parts (one per chunk
  // since the last read of `.text`, which joins everything into a single block).
  #blocks;
  #parts = [];
  #len;

  /** An accumulator holding `seed` (the durable text the reader joined with). */
  constructor(seed) {
    this.#blocks = seed.length > 0 ? [seed] : [];
    this.#len = seed.length;
  }

  /** The whole text, joined now if it is in pieces. */
  get text() {
    this.#fold();
    const blocks = this.#blocks;
    if (blocks.length === 0) return '';
    if (blocks.length > 1) {
      const whole = blocks.join('');
      blocks.length = 1;
      blocks[0] = whole;
    }
    return blocks[0];
  }

  /** The text's length, without joining it. */
  get length() {
    return this.#len;
  }

  /** Cut the text at `at` (at most its length) and append `text`. */
  splice(at, text) {
    let len = this.#len;
    // A chunk that continues the text (nearly all of them) only appends.
    if (len !== at) len = this.#cut(at);
    // Pieces are only joined when someone reads `.text`: an app that renders incrementally
    // never pays for a join at all.
    if (text.length > 0) this.#parts.push(text);
    this.#len = len + text.length;
  }

  /** Cut the text back to `at` (< its length): whole pieces and blocks from the end, then part
   *  of one. Costs O(what is removed), never O(length). */
  #cut(at) {
    return cutBack(this.#blocks, cutBack(this.#parts, this.#len, at), at);
  }

  #fold() {
    const parts = this.#parts;
    if (parts.length === 0) return;
    const block = parts.length === 1 ? parts[0] : parts.join('');
    this.#blocks.push(block);
    parts.length = 0;
  }
}

/** Cut the strings of `list`, which end at `len`, back to `at`: whole ones from the end, then part
 *  of one. Returns where the list ends then: `at`, or more when the list ran out first (the cut
 *  goes on in the strings before it). */
function cutBack(list, len, at) {
  while (len > at && list.length > 0) {
    const last = list[list.length - 1];
    const start = len - last.length;
    if (start >= at) {
      list.pop();
      len = start;
    } else {
      list[list.length - 1] = last.slice(0, at - start);
      len = at;
    }
  }
  return len;
}
