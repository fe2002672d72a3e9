// Seeded, reproducible generators for the property tests: a small PRNG (mulberry32) and random
// relay frame sequences, plausible and hostile (unpaired surrogates, non-integers, NaN, huge
// offsets, missing fields, wrong types, non-objects, unknown types, extra fields). No deps.

/** A PRNG over 32-bit state; `rng()` is uniform in [0, 1). */
export function mulberry32(seed) {
  let s = seed >>> 0;
  return function rng() {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function tools(rng) {
  const int = (n) => Math.floor(rng() * n);
  const pick = (xs) => xs[int(xs.length)];
  const chance = (p) => rng() < p;
  return { int, pick, chance };
}

/** Text pieces: ASCII, escapes JSON cares about, a pair, both lone halves, U+2028, CJK. */
export const PIECES = ['a', 'bc', 'xyz', ' ', '😀', '\ud800', '\udc00', '\u2028', '"\\', '\n\t', '漢字', '\u0000', '\ud83d'];

/** Values that are not what a frame field should hold. */
export const HOSTILE_VALUES = [
  undefined, null, '5', '', 'abc', true, false, {}, [], [3], NaN, Infinity, -Infinity, -1, 1.5, -0.5, -0,
  2 ** 53 - 1, 2 ** 53, 2 ** 64, 1e21, 1e300, Number.MIN_VALUE, 10n, Symbol('x'), '\ud800',
];

/** Values that are not frame objects at all. */
export const NON_FRAMES = [null, undefined, 0, 7, 'chunk', '', true, [], [{ type: 'chunk' }], Symbol('frame'), 3n, () => 1];

export const UNKNOWN_TYPES = ['opn', '', 'CHUNK', 'ping', 5, null, true, {}, '\ud800', undefined];

export const STREAM_IDS = ['s', 's', 's', 'm:1', 's\ud800', '', 'other'];

export const REQUESTED = [0, 0, 1, 2, 3, 5, 8, NaN, -1, 1.5, -0, 2 ** 53 - 1, 2 ** 53, 1e21, Infinity];

/**
 * One random relay session: `{ streamId, from, produced, calls }` where each call is
 * `{ feed: frame }`, `{ end: true }` or `{ fail: true }`. Frames follow a produced text so many
 * are legal (and pass), with replays, overlaps, gaps and hostile mutations mixed in.
 */
export function genSession(rng, { maxCalls = 12 } = {}) {
  const { int, pick, chance } = tools(rng);
  const streamId = pick(STREAM_IDS);
  const from = chance(0.85) ? int(6) : pick(REQUESTED);
  let produced = '';
  const pieces = 2 + int(10);
  for (let i = 0; i < pieces; i++) produced += pick(PIECES);
  const L = produced.length;
  let cursor = Number.isInteger(from) && from >= 0 && from <= L ? from : int(L + 1);
  const calls = [];
  const n = 1 + int(maxCalls);
  const offset = () => (chance(0.9) ? int(L + 3) : pick(HOSTILE_VALUES));

  const chunk = () => {
    let f = Math.max(0, Math.min(L, cursor - (chance(0.3) ? int(4) : 0) + (chance(0.1) ? 1 + int(3) : 0)));
    let t = Math.min(L, f + int(6));
    if (chance(0.05)) f = t + 1;
    const frame = { type: 'chunk', from: f, seq: t, text: produced.slice(f, Math.max(f, t)) };
    if (t > cursor && f <= cursor) cursor = t;
    return frame;
  };
  const open = () => {
    const f = chance(0.8) && Number.isInteger(from) ? Math.max(0, from - int(3)) : offset();
    return {
      type: 'open',
      streamId: chance(0.85) ? streamId : pick(STREAM_IDS),
      from: f,
      seq: typeof f === 'number' ? f + int(4) : offset(),
      durableSeq: chance(0.8) ? int(3) : offset(),
      ended: chance(0.9) ? false : pick([true, 'yes', undefined]),
    };
  };
  const durable = () => ({ type: 'durable', seq: chance(0.8) ? int(cursor + 2) : offset() });
  const end = () => {
    const frame = { type: 'end', seq: chance(0.7) ? int(cursor + 2) : offset(), status: pick(['complete', 'error', 'cancelled', 'interrupted', 'bogus']) };
    if (chance(0.2)) frame.error = pick(['boom', '\ud800', '']);
    return frame;
  };

  for (let i = 0; i < n; i++) {
    const r = rng();
    let frame;
    if (r < 0.42) frame = chunk();
    else if (r < 0.52) frame = open();
    else if (r < 0.62) frame = durable();
    else if (r < 0.68) frame = end();
    else if (r < 0.7) frame = chance(0.5) ? { type: 'stale', floorSeq: int(L), durableSeq: int(L) } : { type: 'absent' };
    else if (r < 0.73) {
      calls.push(chance(0.5) ? { end: true } : { fail: true });
      continue;
    } else if (r < 0.77) frame = pick(NON_FRAMES);
    else if (r < 0.8) frame = { type: pick(UNKNOWN_TYPES), from: int(L), seq: int(L) };
    else {
      // A plausible frame, then hostile: a field removed or given a wrong-typed value.
      frame = pick([chunk, open, durable, end])();
      const keys = Object.keys(frame).filter((k) => k !== 'type');
      const key = pick(keys);
      if (chance(0.3)) delete frame[key];
      else frame[key] = pick(HOSTILE_VALUES);
    }
    if (frame !== null && typeof frame === 'object' && !Array.isArray(frame) && chance(0.15)) {
      frame.extra = chance(0.5) ? { nested: [1, '\ud800'] } : 'x';
    }
    calls.push({ feed: frame });
  }
  return { streamId, from, produced, calls };
}

/** A canonical text for a value: key order, -0, NaN and lone surrogates all show. */
export function canon(v) {
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'symbol') return v.toString();
  if (typeof v === 'function') return '[function]';
  if (typeof v === 'boolean') return String(v);
  if (v === null || v === undefined) return String(v);
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  return `{${Object.keys(v).map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(',')}}`;
}

/** A session shown for a failure message. */
export function showSession(s) {
  return canon({ streamId: s.streamId, from: s.from, calls: s.calls });
}

/**
 * One random reader session for the reader's differential test: `{ streamId, durable, frames }`.
 * The reader joined holding `durable` (usually a prefix of the produced text, sometimes not);
 * frames follow the produced text with replays, overlaps reaching back into the durable text,
 * gaps, chunks of another stream's text at plausible offsets (a tail the reader cannot tell
 * apart), opens for this stream and others, durables, terminals (anywhere, with frames after
 * them), non-frames, unknown types and hostile field values.
 */
export function genReaderSession(rng, { maxFrames = 16 } = {}) {
  const { int, pick, chance } = tools(rng);
  const streamId = pick(STREAM_IDS);
  const text = (pieces) => {
    let s = '';
    for (let i = 0; i < pieces; i++) s += pick(PIECES);
    return s;
  };
  const produced = text(2 + int(12));
  const other = text(2 + int(12));
  const L = produced.length;
  const durable = chance(0.85) ? produced.slice(0, int(L + 1)) : chance(0.5) ? other.slice(0, int(other.length + 1)) : text(int(3));
  let cursor = durable.length;
  const frames = [];
  const n = 1 + int(maxFrames);
  const offset = () => (chance(0.85) ? int(L + 3) : pick(HOSTILE_VALUES));

  const chunk = () => {
    // Usually from where the text ends; often reaching back (a replay, or an overlap that may cut
    // into the durable text); sometimes past it (a gap).
    let from = cursor;
    if (chance(0.35)) from = Math.max(0, cursor - 1 - int(cursor + 1));
    if (chance(0.08)) from = cursor + 1 + int(3);
    const seq = Math.max(from, Math.min(L, from + int(8)));
    if (from <= cursor && seq > cursor) cursor = seq;
    return { type: 'chunk', from, seq, text: produced.slice(from, seq).padEnd(seq - from, 'z') };
  };
  const foreignTail = () => {
    const from = int(cursor + 2);
    const t = other.slice(0, int(other.length + 1));
    if (from <= cursor && from + t.length > cursor) cursor = from + t.length;
    return { type: 'chunk', from, seq: from + t.length, text: t };
  };
  const open = () => ({
    type: 'open',
    streamId: chance(0.8) ? streamId : pick(STREAM_IDS),
    from: chance(0.85) ? int(cursor + 1) : pick(HOSTILE_VALUES),
    seq: int(L + 1),
    durableSeq: int(L + 1),
    ended: false,
  });

  for (let i = 0; i < n; i++) {
    const r = rng();
    let frame;
    if (r < 0.6) frame = chunk();
    else if (r < 0.68) frame = foreignTail();
    else if (r < 0.76) frame = open();
    else if (r < 0.84) frame = { type: 'durable', seq: offset() };
    else if (r < 0.88) {
      frame = pick([
        () => ({ type: 'end', seq: offset(), status: pick(['complete', 'error', 'cancelled', 'interrupted']) }),
        () => ({ type: 'stale', floorSeq: offset(), durableSeq: offset() }),
        () => ({ type: 'absent' }),
      ])();
    } else if (r < 0.9) frame = pick(NON_FRAMES);
    else if (r < 0.92) frame = { type: pick(UNKNOWN_TYPES), from: int(L), seq: int(L), text: 'a' };
    else {
      // A plausible chunk made hostile: a field removed or given a wrong value, or a text that
      // does not span its offsets.
      frame = chunk();
      const k = rng();
      if (k < 0.25) frame.text = frame.text + pick(PIECES);
      else if (k < 0.4) frame.text = pick([undefined, null, 5, ['a'], {}]);
      else if (k < 0.5) delete frame[pick(['from', 'seq', 'text'])];
      else frame[pick(['from', 'seq'])] = pick(HOSTILE_VALUES);
    }
    if (frame !== null && typeof frame === 'object' && !Array.isArray(frame) && chance(0.1)) frame.extra = 'x';
    frames.push(frame);
  }
  return { streamId, durable, produced, frames };
}
