// Benchmark (not a test) of the npm package over its WebAssembly build, in Node:
// - ns per frame of StreamRelayConform.feed and StreamReader.push over a long generated stream,
//   against plain-JavaScript implementations of docs/contract.md §3 (tests/js/model.mjs, the
//   differential test's model) and section 4 (written here);
// - StreamReader's ns per frame at 1,000, 10,000 and 100,000 deltas (flat is the target), beside
//   the plain reader and the plain reader that re-splices the whole text per delta (what the
//   replaced React hook does on every render).
// 8% of chunks replay an overlap (a chunk re-cut from an earlier offset), as reconnects do.
//
// This module runs anywhere (Node and a browser page alike): `runBench(tp, { now, log })` takes the
// package's exports, a clock in nanoseconds and a printer. bench/js/wasm.mjs runs it in Node,
// bench/js/browser.mjs in headless Chromium; bash scripts/bench-wasm.sh builds and runs both.
// Targets: conform at most 1.5x the plain JavaScript per frame; the reader flat in the deltas.

// ---------------------------------------------------------------- the generated stream

// The plain-JavaScript conform baseline is the model the differential test checks against
// every backend, so the benchmark measures against a model known to agree with them.
import { ModelConform } from '../../tests/js/model.mjs';

function rng(seed) {
  let s = BigInt(seed);
  return () => {
    s ^= s >> 12n;
    s ^= (s << 25n) & 0xffffffffffffffffn;
    s ^= s >> 27n;
    return Number(((s * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 11n) / 2 ** 53;
  };
}

const PIECES = ['Hel', 'lo', ' wor', 'ld', '漢字', 'かな', '😀', '👩‍💻', ' the', ' model', ', and', '.\n'];

/** `deltas` chunks of one production (8% replaying an overlap), a `durable` every 64, an `end`. */
function generate(deltas, seed = 42) {
  const r = rng(seed);
  const frames = [{ type: 'open', streamId: 's', from: 0, seq: 0, durableSeq: 0, ended: false }];
  let produced = '';
  for (let i = 0; i < deltas; i++) {
    const d = PIECES[Math.floor(r() * PIECES.length)];
    const from = produced.length;
    produced += d;
    const seq = produced.length;
    if (from > 0 && r() < 0.08) {
      const back = 1 + Math.floor(r() * Math.min(from, 6));
      frames.push({ type: 'chunk', from: from - back, seq, text: produced.slice(from - back, seq) });
    } else {
      frames.push({ type: 'chunk', from, seq, text: d });
    }
    if (i % 64 === 63) frames.push({ type: 'durable', seq: from });
  }
  frames.push({ type: 'end', seq: produced.length, status: 'complete' });
  // Flatten the expected text once, so building it is not part of any measurement.
  return { frames, produced: produced.split('').join('') };
}

// ---------------------------------------------------------------- plain JavaScript baselines

/**
 * docs/contract.md §4, straight from the text: one string, spliced at each chunk's `from`.
 * Deliberately not tests/js/reader-model.mjs: that model also builds an update object per chunk
 * for the differential test, which would slow the baseline down and flatter the backends.
 */
class PlainReader {
  constructor(streamId, durable) {
    this.streamId = streamId;
    this.acc = durable;
    this.stopped = null;
  }

  push(f) {
    if (this.stopped !== null) return false;
    switch (f?.type) {
      case 'open':
        if (f.streamId !== this.streamId) return this.stop('foreign_stream');
        return true;
      case 'chunk': {
        if (!Number.isInteger(f.from) || !Number.isInteger(f.seq) || f.from < 0 || typeof f.text !== 'string' ||
          f.text.length !== f.seq - f.from) return this.stop('malformed');
        if (f.from > this.acc.length) return this.stop('gap');
        if (f.seq <= this.acc.length) return true;
        this.acc = this.acc.slice(0, f.from) + f.text;
        return true;
      }
      case 'durable':
        return true;
      case 'end':
      case 'stale':
      case 'absent':
        return this.stop(f.type);
      default:
        return this.stop('malformed');
    }
  }

  stop(reason) {
    this.stopped = reason;
    return false;
  }
}

function plainSplice(durable, produced) {
  return produced.length > durable.length ? durable + produced.slice(durable.length) : durable;
}

// ---------------------------------------------------------------- timing

let sink = 0;
let now = null;
// The last run's correctness check, evaluated after the timing (it joins the whole text).
let lastCheck = () => true;

function checked(ns, what) {
  if (!lastCheck()) throw new Error(`${what} lost text`);
  return ns;
}

/** Best of `reps` samples on `clock` (ns), in ns per unit. A sample repeats `run()` (which
 *  returns how many units, frames or deltas, it handled) until at least 25 ms have passed, so a
 *  coarse clock (a browser's) still measures short streams accurately. */
export function measureOn(clock, reps, run) {
  let best = Infinity;
  for (let i = 0; i < reps; i++) {
    const t0 = clock();
    let units = 0;
    let t1;
    do {
      units += run();
      t1 = clock();
    } while (t1 - t0 < 25e6);
    const ns = (t1 - t0) / units;
    if (ns < best) best = ns;
  }
  return best;
}

const measure = (reps, run) => measureOn(now, reps, run);

const noop = () => {};

function conformRun(Ctor, frames) {
  return () => {
    const c = new Ctor('s', 0, noop);
    for (let i = 0; i < frames.length; i++) sink += c.feed(frames[i]).length;
    return frames.length;
  };
}

function readerRun(tp, frames, produced) {
  return () => {
    // The incremental consumer a DOM app is: keep the length a text node would have.
    let shown = 0;
    const r = new tp.StreamReader({
      streamId: 's',
      onUpdate(u) {
        shown = u.cut + u.appended.length;
      },
    });
    for (let i = 0; i < frames.length; i++) r.push(frames[i]);
    sink += shown;
    lastCheck = () => shown === produced.length && r.text === produced;
    return frames.length;
  };
}

function plainReaderRun(frames, produced, resplice) {
  return () => {
    const r = new PlainReader('s', '');
    for (let i = 0; i < frames.length; i++) {
      r.push(frames[i]);
      if (resplice && frames[i].type === 'chunk') {
        // What the replaced hook renders on each delta: the whole spliced text, which the DOM
        // (here charCodeAt) forces into one flat string.
        const shown = plainSplice('', r.acc);
        sink += shown.charCodeAt(shown.length >> 1);
      }
    }
    lastCheck = () => r.acc === produced;
    return frames.length;
  };
}

// ---------------------------------------------------------------- report

const fmt = (ns) => (ns >= 1000 ? `${(ns / 1000).toFixed(1)} us` : `${ns.toFixed(0)} ns`);
const row = (cells, widths) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ');

/** Runs everything, printing with `log`; returns the figures. `clock()` is a time in ns. */
export function runBench(tp, { clock, log, sizes = [1_000, 10_000, 100_000] }) {
  now = clock;
  const results = {};

  const long = generate(100_000);
  // Warm everything up on the long stream first, so the JIT has settled before any timed run
  // (otherwise the first, shortest runs measure the compiler).
  measure(3, conformRun(tp.StreamRelayConform, long.frames));
  measure(3, conformRun(ModelConform, long.frames));
  measure(3, readerRun(tp, long.frames, long.produced));
  measure(3, plainReaderRun(long.frames, long.produced, false));

  const pkg = measure(9, conformRun(tp.StreamRelayConform, long.frames));
  const plain = measure(9, conformRun(ModelConform, long.frames));
  results.conform = { twoplane: pkg, plain, ratio: pkg / plain };
  log(`conform over ${long.frames.length} frames (100,000 deltas, 8% overlaps), ns per frame:`);
  log(`  twoplane ${pkg.toFixed(1)}   plain JavaScript ${plain.toFixed(1)}   ratio ${(pkg / plain).toFixed(2)}x (target <= 1.5x)`);

  log('');
  log('reader, ns per frame (8% overlaps; the incremental update consumed per frame):');
  const widths = [9, 12, 12, 26];
  log(row(['deltas', 'twoplane', 'plain JS', 'plain + re-splice/delta'], widths));
  const readerNs = [];
  for (const n of sizes) {
    const { frames, produced } = n === 100_000 ? long : generate(n);
    const reps = 7;
    const mine = checked(measure(reps, readerRun(tp, frames, produced)), 'twoplane reader');
    const plainReader = checked(measure(reps, plainReaderRun(frames, produced, false)), 'plain reader');
    // The quadratic baseline gets fewer runs: at 100,000 deltas one run takes many seconds.
    const resplice = checked(measure(n >= 100_000 ? 1 : 3, plainReaderRun(frames, produced, true)), 'plain reader');
    readerNs.push(mine);
    results[`reader${n}`] = { twoplane: mine, plain: plainReader, resplice };
    log(row([n.toLocaleString('en-US'), fmt(mine), fmt(plainReader), fmt(resplice)], widths));
  }
  const growth = readerNs[readerNs.length - 1] / readerNs[0];
  results.readerGrowth = growth;
  log(`  twoplane from ${sizes[0].toLocaleString('en-US')} to ${sizes[sizes.length - 1].toLocaleString('en-US')} deltas: ${growth.toFixed(2)}x per frame (flat is ~1x)`);
  if (sink === 0.5) log(String(sink));
  return results;
}
