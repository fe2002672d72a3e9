// Benchmark (not a test) of StreamReader reading a message made of parts (docs/contract.md §8):
// ns per delta at 1,000, 10,000 and 100,000 deltas spread over 1, 10 and 100 parts, beside the
// single-text reader the package had before messages (the backend's numeric six-frame Reader and
// one Accumulator, called as its StreamReader.push called them). The target: flat in the deltas
// and in the parts.
//
// - 1 part is today's stream: shorthand part 0 deltas only, the very frames the single-text
//   reader reads, so the two columns compare the same work.
// - 10 and 100 parts: that many parts started first (reasoning, text, a tool call in turn), then
//   the deltas dealt round-robin, so consecutive deltas never touch the same body (the worst case
//   for any per-part cache), with a `set` of a part's attributes every 50 deltas.
// - A `durable` every 64 deltas, an `end` last; the update of every change consumed as a DOM app
//   consumes it (a cut and an append on the part's text length).
//
// This module runs anywhere: `runMessageBench(tp, { clock, log, Accumulator })` takes the package's
// exports, a clock in nanoseconds, a printer and the package's Accumulator class (the baseline's
// text store). bench/js/message-node.mjs runs it in Node over each build, one process per build;
// tests/browser/pages/bench.html in Chromium (bash scripts/bench-wasm.sh, bench-node.sh).

import { measureOn } from './core.mjs';

const PIECES = ['Hel', 'lo', ' wor', 'ld', '漢字', 'かな', '😀', '👩‍💻', ' the', ' model', ', and', '.\n'];
const KINDS = ['reasoning', 'text', 'tool-search'];

/** `deltas` deltas over `parts` parts (1: part 0 alone, today's frames). */
function generate(deltas, parts) {
  const frames = [{ type: 'open', streamId: 's', from: 0, seq: 0, durableSeq: 0, ended: false }];
  let pos = 0;
  const lens = [0];
  const first = parts === 1 ? 0 : 1;
  for (let p = 1; p <= (parts === 1 ? 0 : parts); p++) {
    frames.push({ type: 'part', from: pos, seq: pos + 1, part: p, kind: KINDS[p % KINDS.length] });
    lens.push(0);
    pos += 1;
  }
  const total = [];
  for (let i = 0; i < deltas; i++) {
    const part = first + (i % parts);
    const text = PIECES[(i * 7 + part) % PIECES.length];
    const at = lens[part];
    const frame = { type: 'chunk', from: pos, seq: pos + text.length, text };
    if (parts !== 1) Object.assign(frame, { part, at });
    frames.push(frame);
    pos += text.length;
    lens[part] += text.length;
    if (parts !== 1 && i % 50 === 49) {
      frames.push({ type: 'set', from: pos, seq: pos + 1, part, value: { state: `n${i}` } });
      pos += 1;
    }
    if (i % 64 === 63) frames.push({ type: 'durable', seq: pos });
  }
  frames.push({ type: 'end', seq: pos, status: 'complete' });
  for (let p = first; p < lens.length; p++) total.push(lens[p]);
  return { frames, lens: total, len: pos };
}

let sink = 0;
let now = null;

/** Best of `reps` samples, in ns per delta (a run reads `deltas` deltas). */
const measure = (reps, deltas, run) => measureOn(now, reps, () => {
  run();
  return deltas;
});

/** StreamReader over the frames, every update consumed; checks what it read once at the end. */
function messageRun(tp, w) {
  let check = null;
  const run = () => {
    const shown = new Array(w.lens.length + 1).fill(0);
    const reader = new tp.StreamReader({
      streamId: 's',
      onUpdate(u) {
        if (u.action === 'splice') shown[u.part] = u.cut + u.appended.length;
      },
    });
    for (let i = 0; i < w.frames.length; i++) reader.push(w.frames[i]);
    sink += shown[shown.length - 1];
    check = () => reader.stopped === 'end' && reader.resumeFrom === w.len && reader.parts.length === (w.lens.length === 1 ? 1 : w.lens.length + 1);
  };
  return { run, ok: () => check() };
}

/** What the single-text reader's `onUpdate` received: its accumulator was cut and appended to. */
class TextUpdate {
  #reader;

  constructor(reader, cut, appended) {
    this.#reader = reader;
    this.cut = cut;
    this.appended = appended;
  }

  get text() {
    return this.#reader.text;
  }
}

/** The single-text reader as the package had it before messages (its StreamReader.push, minus
 *  the transport): per frame one numeric call to the backend's six-frame Reader, a splice of one
 *  Accumulator, an update object for `onUpdate`. */
class TextReader {
  #core;
  #acc;
  #stopped = null;
  #onFrame = null;
  #onUpdate;

  constructor(Reader, Accumulator, onUpdate) {
    this.#core = new Reader(0);
    this.#acc = new Accumulator('');
    this.#onUpdate = onUpdate;
  }

  get text() {
    return this.#acc.text;
  }

  get length() {
    return this.#acc.length;
  }

  push(frame) {
    if (this.#stopped !== null) return false;
    if (this.#onFrame !== null) this.#onFrame(frame);
    let action;
    let text;
    try {
      if (frame !== null && frame !== undefined && frame.type === 'chunk') {
        text = frame.text;
        action = this.#core.feed(1, false, frame.from, frame.seq, text.length);
      } else {
        action = this.#core.feed(frame.type === 'open' ? 0 : frame.type === 'durable' ? 2 : 3, true, frame.from ?? NaN, NaN, NaN);
      }
    } catch {
      action = this.#core.feed(6, false, NaN, NaN, NaN);
    }
    if (action === 1) {
      const at = this.#core.at();
      this.#acc.splice(at, text);
      if (this.#onUpdate !== null) {
        try {
          this.#onUpdate(new TextUpdate(this, at, text));
        } catch {
          // reported asynchronously in the package
        }
      }
      return true;
    }
    if (action === 2) {
      this.#stopped = 'stop';
      return false;
    }
    return true;
  }
}

function textRun(tp, Accumulator, w) {
  let check = null;
  const run = () => {
    let shown = 0;
    const reader = new TextReader(tp.backend.Reader, Accumulator, (u) => {
      shown = u.cut + u.appended.length;
    });
    for (let i = 0; i < w.frames.length; i++) reader.push(w.frames[i]);
    sink += shown;
    check = () => reader.length === w.len && reader.text.length === w.len && shown === w.len;
  };
  return { run, ok: () => check() };
}

const fmt = (ns) => `${ns.toFixed(1)} ns`;
const row = (cells, widths) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ');

/** Runs everything, printing with `log`; returns ns per delta by `<deltas>/<parts>` (and
 *  `<deltas>/text` for the single-text reader). Every cell is measured once per round, cells
 *  interleaved, over `rounds` rounds, and keeps its best: a slow spell of a shared machine then
 *  hits every cell alike instead of one column. */
export function runMessageBench(tp, { clock, log, Accumulator, sizes = [1_000, 10_000, 100_000], partCounts = [1, 10, 100], rounds = 9 }) {
  now = clock;
  const cells = [];
  for (const n of sizes) {
    for (const p of partCounts) cells.push({ key: `${n}/${p}`, n, runner: messageRun(tp, generate(n, p)), what: `the reader at ${n} deltas over ${p} parts` });
    cells.push({ key: `${n}/text`, n, runner: textRun(tp, Accumulator, generate(n, 1)), what: `the text reader at ${n} deltas` });
  }
  // Warm up every cell first, so no timed run measures the compiler.
  for (const c of cells) measure(1, c.n, c.runner.run);
  const results = {};
  for (let r = 0; r < rounds; r++) {
    for (const c of cells) results[c.key] = Math.min(results[c.key] ?? Infinity, measure(1, c.n, c.runner.run));
  }
  for (const c of cells) if (!c.runner.ok()) throw new Error(`${c.what} lost frames`);

  log(`StreamReader reading a message, ns per delta (best of ${rounds} interleaved rounds; each update consumed):`);
  const widths = [9, ...partCounts.map(() => 11), 24];
  log(row(['deltas', ...partCounts.map((p) => `${p} part${p === 1 ? '' : 's'}`), 'text reader (before)'], widths));
  for (const n of sizes) log(row([n.toLocaleString('en-US'), ...partCounts.map((p) => fmt(results[`${n}/${p}`])), fmt(results[`${n}/text`])], widths));
  const all = sizes.flatMap((n) => partCounts.map((p) => results[`${n}/${p}`]));
  const spread = Math.max(...all) / Math.min(...all);
  log(`  slowest / fastest cell: ${spread.toFixed(2)}x (flat is ~1x); 1 part against the text reader: ${sizes.map((n) => `${(results[`${n}/1`] / results[`${n}/text`]).toFixed(2)}x`).join(', ')}`);
  if (sink === 0.5) log(String(sink));
  return results;
}
