// The message of issue #23 for the end-to-end test of parts.test.mjs, and the test's own oracle
// for it: the producer events (drawn from a seed), each event's span on the message's coordinate,
// the stored document at any position (docs/contract.md §8, written here from the contract's
// text, not from the package), and a name for what a position is in the middle of.
//
// The coordinate (§8): a chunk advances `seq` by its text's UTF-16 length, every other event by
// one. The document at `d` is the fold of the events that end at or before `d`, a chunk that
// straddles `d` contributing its first `d - from` units.

/** A seeded xorshift32 generator: `{ next() -> [0, 1), pick(list), int(lo, hi) }`. */
export function seeded(seed) {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
  return {
    next,
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
  };
}

// Words with characters of every width: accents, combining marks, CJK, astral symbols (a pair
// each, so random cuts split some of them between two deltas), flags (two pairs).
const WORDS = ['the', 'model', 'thinks', 'écrit', 'ответ', '流式', 'token', '😀', 'e\u0301', '🇨🇭', 'ß', '𝄞', 'Zürich',
  'weather', 'wind', '°C', 'rain', '\n'];

function words(rng, n) {
  const out = [];
  for (let i = 0; i < n; i += 1) out.push(rng.pick(WORDS));
  return out.join(' ');
}

/** `text` cut into `n` non-empty pieces at random code-unit offsets (a pair may be split). */
function cut(rng, text, n) {
  if (text.length < n) throw new Error(`cannot cut ${text.length} units into ${n} pieces`);
  const at = new Set();
  while (at.size < n - 1) at.add(rng.int(1, text.length - 1));
  const cuts = [0, ...[...at].sort((a, b) => a - b), text.length];
  return cuts.slice(1).map((end, i) => text.slice(cuts[i], end));
}

/**
 * The issue's message as producer events (docs/server.md, "Messages with parts"): reasoning in
 * many deltas (with one lone surrogate, which the contract keeps), a tool call whose input JSON
 * arrives in exactly 40 pieces, its output (preliminary, then final), a step boundary, a text,
 * a data part replaced once by a second version, a transient part, another text, metadata and
 * the finish reason. `marks` names the events after which the test reloads readers.
 */
export function issueMessage(rng) {
  const events = [];
  const marks = {};
  const mark = (name) => {
    marks[name] = events.length - 1;
  };
  const chunks = (id, pieces, markAt, name) => {
    pieces.forEach((text, i) => {
      events.push({ type: 'chunk', id, text });
      if (i === markAt) mark(name);
    });
  };

  events.push({ type: 'part', kind: 'reasoning', id: 'r' });
  let reasoning = words(rng, 110);
  const lone = rng.int(10, reasoning.length - 10);
  // A lone low surrogate, kept where no pair is next to it.
  reasoning = `${reasoning.slice(0, lone).replace(/[\ud800-\udbff]$/, '')} \udc00 ${reasoning.slice(lone).replace(/^[\udc00-\udfff]/, '')}`;
  const reasoningPieces = cut(rng, reasoning, 50);
  chunks('r', reasoningPieces, 24, 'inside reasoning');
  events.push({ type: 'part-end', id: 'r' });

  const input = { query: 'weather in Zürich 🌦', units: 'metric', days: rng.int(2, 7), details: ['wind', 'rain', 'ß'] };
  const inputText = JSON.stringify(input);
  events.push({ type: 'part', kind: 'tool-search', id: 'c1', value: { toolCallId: 'c1', state: 'input-streaming' } });
  chunks('c1', cut(rng, inputText, 40), 19, 'inside tool input');
  events.push({ type: 'part-end', id: 'c1', value: { state: 'input-available', input } });
  mark('between tool input and output');
  events.push({ type: 'set', id: 'c1', value: { state: 'output-available', output: { temp: 18 }, preliminary: true } });
  events.push({ type: 'set', id: 'c1', value: { output: { temp: 19, sky: 'sunny ☀' }, preliminary: false } });

  events.push({ type: 'part', kind: 'step-start' });
  events.push({ type: 'part', kind: 'text', id: 't1' });
  chunks('t1', cut(rng, `It is 19 °C in Zürich. ${words(rng, 45)}`, 40), 19, 'inside text');
  events.push({ type: 'part-end', id: 't1' });

  events.push({ type: 'part', kind: 'data-weather', id: 'w', value: { id: 'w', data: { status: 'loading' } } });
  events.push({ type: 'transient', kind: 'data-notice', value: { data: 'almost there' } });
  mark('between the data part and its replacement');
  events.push({ type: 'set', id: 'w', value: { data: { status: 'done', temp: 19 } } });

  events.push({ type: 'part', kind: 'text', id: 't2' });
  chunks('t2', cut(rng, ` And ${words(rng, 40)}.`, 40), 14, 'inside the second text');
  events.push({ type: 'part-end', id: 't2' });
  events.push({ type: 'meta', value: { model: 'mock-1', usage: { inputTokens: 12, outputTokens: 345 } } });
  events.push({ type: 'finish', reason: 'stop' });
  return { events, marks };
}

/**
 * Each event laid on the coordinate: `{ event, from, seq, part }` (`part` the number the event
 * touches, part 0 for a chunk without one; undefined for meta, finish and transient), and the
 * kind of every part by number.
 */
export function layOut(events) {
  const kinds = ['text'];
  const ids = new Map();
  let pos = 0;
  const spans = events.map((event) => {
    const width = event.type === 'chunk' ? event.text.length : 1;
    let part;
    if (event.type === 'part') {
      part = kinds.length;
      kinds.push(event.kind);
      if (event.id !== undefined) ids.set(event.id, part);
    } else if (typeof event.part === 'number') {
      part = event.part;
    } else if (event.id !== undefined) {
      part = ids.get(event.id);
    } else if (event.type === 'chunk') {
      part = 0;
    }
    const span = { event, from: pos, seq: pos + width, part };
    pos += width;
    return span;
  });
  return { spans, kinds, len: pos };
}

const bodyKeyOf = (kind) => (kind.startsWith('tool-') || kind === 'dynamic-tool' ? 'inputText' : 'text');

/** The stored document (§8, "The stored message") of the message laid out in `layout`, at `d`. */
export function documentAt(layout, d) {
  const parts = [{ kind: 'text', body: '', attrs: {}, ended: false }];
  let metadata = null;
  let finishReason = null;
  for (const { event, from, seq, part } of layout.spans) {
    if (from >= d) break;
    switch (event.type) {
      case 'chunk':
        parts[part].body += event.text.slice(0, Math.min(d, seq) - from);
        break;
      case 'part':
        parts.push({ kind: event.kind, body: '', attrs: Object.assign({}, event.value), ended: false });
        break;
      case 'part-end':
        Object.assign(parts[part].attrs, event.value);
        parts[part].ended = true;
        break;
      case 'set':
        Object.assign(parts[part].attrs, event.value);
        break;
      case 'meta':
        metadata = Object.assign(metadata ?? {}, event.value);
        break;
      case 'finish':
        finishReason = event.reason;
        break;
      case 'transient':
        break;
      default:
        throw new Error(`an event the scenario does not know: ${event.type}`);
    }
  }
  const entries = parts.map((p, i) => {
    if (i === 0 && p.body === '' && !p.ended && Object.keys(p.attrs).length === 0) return null;
    const entry = { type: p.kind };
    const key = bodyKeyOf(p.kind);
    if (p.body !== '' || p.kind === 'text' || p.kind === 'reasoning') entry[key] = p.body;
    return Object.assign(entry, p.attrs);
  });
  const doc = { parts: entries.filter((e) => e !== null) };
  if (metadata !== null && Object.keys(metadata).length > 0) doc.metadata = metadata;
  if (finishReason !== null) doc.finishReason = finishReason;
  return doc;
}

/**
 * The produced message's documents, memoized by position: `json(d)` is the JSON text of the
 * document at `d`, `positionOf(json)` the first position whose document that is (or -1).
 */
export function oracle(layout) {
  const cache = new Map();
  const json = (d) => {
    if (!Number.isInteger(d) || d < 0 || d > layout.len) return null;
    let s = cache.get(d);
    if (s === undefined) {
      s = JSON.stringify(documentAt(layout, d));
      cache.set(d, s);
    }
    return s;
  };
  let firsts = null;
  const positionOf = (s) => {
    if (firsts === null) {
      firsts = new Map();
      for (let d = 0; d <= layout.len; d += 1) if (!firsts.has(json(d))) firsts.set(json(d), d);
    }
    return firsts.get(s) ?? -1;
  };
  return { json, positionOf, final: () => documentAt(layout, layout.len) };
}

/** What position `d` of the message is in the middle of: `inside <kind>` (a body continues
 *  past it), `between <kind> input and output` (a tool's input ended, its output is next),
 *  `after <event>`, `start` or `end`. */
export function whereIs(layout, d) {
  if (d === 0) return 'start';
  if (d >= layout.len) return 'end';
  const { spans, kinds } = layout;
  const within = spans.find((s) => s.from < d && d < s.seq);
  if (within) return `inside ${kinds[within.part]}`;
  const before = spans.find((s) => s.seq === d);
  const after = spans.find((s) => s.from === d);
  if (after.event.type === 'chunk') return `inside ${kinds[after.part]}`;
  if (before.event.type === 'part-end' && after.event.type === 'set' && after.part === before.part) {
    return `between ${kinds[before.part]} input and output`;
  }
  const name = (s) => (s.part === undefined ? s.event.type : `${s.event.type} ${kinds[s.part]}`);
  return `after ${name(before)}, before ${name(after)}`;
}
