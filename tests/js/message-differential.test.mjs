// Differential property test of the JavaScript message fold (docs/contract.md §8) against the
// core's own: seeded random messages (parts of every kind, deltas holding surrogate pairs split
// anywhere and lone halves, attributes set and replaced, metadata, transient parts, finish
// reasons) are checkpointed into chunk rows at random offsets and read live from a random join,
// with replays, overlapping re-cut deltas and hostile numbers (unknown parts, gaps in the message
// and in a body, bodies that go back, parts that do not follow, deltas after a part's end).
//
// - Assembly: `assembleDurableMessage` over the addon and over the wasm build (JavaScript, asking
//   each build's numeric reader) against the core's `assemble_durable_message` (the addon's
//   `assembleMessage`): the same document (deep-equal after JSON.parse), length and part table,
//   or the same error kind; over valid rows, rows with a stored document, and rows made hostile.
// - Reading: MessageReader and StreamReader over both builds, joined holding that durable
//   message, against the core's folding MessageReader (numbers in, the frame's JSON folded in
//   Rust): after every frame the same action, part, splice offset, stop reason and resume point,
//   and at random steps and at the end the same message.
//
//   PROP_SEED=<n> base seed (default: a fresh one, printed)   PROP_CASES=<n> sessions (default 1500)
// A failure names the session's own seed; rerun it with PROP_SEED=<that seed> PROP_CASES=1.

import test from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32, tools, PIECES, canon } from './gen.mjs';
import { loadBackendApi } from './backends.mjs';
import { Producer, checkpointRows } from '../browser/lib/message-scenario.mjs';
import { feedNumbers } from '../../npm/twoplane/src/message-state.js';
import { MESSAGE_ACTIONS, STOP_REASONS } from '../../npm/twoplane/src/codes.js';

const BASE = Number(process.env.PROP_SEED ?? Math.floor(Math.random() * 2 ** 32)) >>> 0;
const CASES = Number(process.env.PROP_CASES ?? 1500);

const napi = await loadBackendApi('napi');
const wasm = await loadBackendApi('wasm');
const core = napi.backend;

const KINDS = ['text', 'reasoning', 'tool-search', 'dynamic-tool', 'data-d', 'source-url', 'step-start', 'file', 'x\ud800'];
const KEYS = ['state', 'output', 'input', 'data', 'id', 'toolCallId', 'preliminary', '__proto__', 'n', 'z\udc00'];
const VALUES = [1, 'x', null, true, false, { deep: [1, '\ud800', { a: null }] }, [1, 2], '\udc00', -0, 1.5e300, ''];

function genValue(rng) {
  const { int, pick } = tools(rng);
  const value = {};
  for (let i = int(4); i > 0; i--) Object.defineProperty(value, pick(KEYS), { value: pick(VALUES), enumerable: true, writable: true, configurable: true });
  return value;
}

/** A random producer log (ending with `end`), with part 0 deltas first now and then. */
function genLog(rng) {
  const { int, pick, chance } = tools(rng);
  const p = new Producer();
  const open = [0];
  const text = () => {
    let s = '';
    for (let i = 1 + int(3); i > 0; i--) s += pick(PIECES);
    return s;
  };
  for (let i = chance(0.4) ? int(4) : 0; i > 0; i--) p.delta(0, text());
  for (let i = 3 + int(30); i > 0; i--) {
    const r = rng();
    if (r < 0.45 && open.length > 0) p.delta(pick(open), text());
    else if (r < 0.6) open.push(p.start(pick(KINDS), chance(0.5) ? genValue(rng) : undefined));
    else if (r < 0.67 && open.length > 0) {
      const part = pick(open);
      open.splice(open.indexOf(part), 1);
      p.end(part, chance(0.3) ? genValue(rng) : undefined);
    } else if (r < 0.8) p.set(int(p.lens.length), genValue(rng));
    else if (r < 0.87) p.meta(genValue(rng));
    else if (r < 0.93) p.transient(pick(['data-t', 'x']), genValue(rng));
    else p.finish(pick(['stop', 'length', 'tool-calls', '\ud800']));
  }
  p.frames.push({ type: 'end', seq: p.pos, status: 'complete' });
  return { log: p.frames, total: p.pos, lens: p.lens };
}

/** Checkpoint rows as a producer writes them: today's text rows while the message is part 0
 *  alone (shorthand deltas from offset 0), parts rows after. */
function rowsOf(log, cuts) {
  const rows = checkpointRows(log, cuts);
  let structural = false;
  return rows.map((row) => {
    const frames = JSON.parse(row.parts);
    structural ||= frames.some((f) => f.type !== 'chunk' || f.part !== undefined);
    return structural ? row : { seq: row.seq, text: frames.map((f) => f.text).join(''), parts: null };
  });
}

/** The message the core assembles, or the error kind it refuses with. */
function coreAssembly(row, chunks) {
  try {
    const m = core.assembleMessage(row.body ?? null, row.document ?? null, row.seq ?? 0, chunks.map((c) => ({ seq: c.seq, text: c.text, parts: c.parts })));
    return { message: m, doc: JSON.parse(m.document()), len: m.len(), table: m.partTable().length === 0 ? null : Array.from(m.partTable()) };
  } catch (err) {
    return { error: err.kind };
  }
}

/** The package's assembly over `api`, in the same terms. */
function packageAssembly(api, row, chunks) {
  try {
    const m = api.assembleDurableMessage(row, chunks);
    return { durable: m, doc: JSON.parse(JSON.stringify(m.message)), len: m.len, table: m.parts };
  } catch (err) {
    assert.ok(err instanceof api.TwoplaneError, String(err));
    return { error: err.kind };
  }
}

const same = (got, want) => canon({ error: got.error, doc: got.doc, len: got.len, table: got.table }) === canon({ error: want.error, doc: want.doc, len: want.len, table: want.table });

/** Rows made hostile in one of the ways no producer writes them. */
function spoilRows(rng, rows) {
  const { int, pick } = tools(rng);
  const out = rows.map((r) => ({ ...r }));
  if (out.length === 0) return out;
  const i = int(out.length);
  const frames = typeof out[i].parts === 'string' ? JSON.parse(out[i].parts) : null;
  const how = pick(['drop', 'duplicate', 'json', 'part', 'at', 'from', 'text', 'kind', 'seq', 'reserved']);
  if (how === 'drop') out.splice(i, 1);
  // A parts row again: its frames are replays. (A text row again would append its text twice,
  // and a later delta overlapping that text would then disagree with it; the core's fold keeps
  // the units it holds there where the contract's splice, which the package follows, takes the
  // delta's: twoplane_core::message::fold, reported.)
  else if (how === 'duplicate') out.push({ ...(out.find((r) => r.parts !== null) ?? out[i]), seq: out[out.length - 1].seq });
  else if (how === 'json') out[i].parts = out[i].parts === null ? null : out[i].parts.slice(0, -1);
  else if (how === 'text') out.push({ seq: out[out.length - 1].seq + 1, text: 'x', parts: null });
  else if (how === 'seq') out[i].seq = -1;
  else if (frames !== null && frames.length > 0) {
    const f = frames[int(frames.length)];
    if (how === 'part' && f.part !== undefined) f.part += 1 + int(2);
    else if (how === 'at' && f.at !== undefined) f.at += pick([-1, 1, 2]);
    else if (how === 'from') f.from += 1;
    else if (how === 'kind' && f.type === 'part') f.part = Math.max(0, f.part - 1);
    else if (how === 'reserved' && f.type === 'set') f.value = { text: 1 };
    out[i].parts = JSON.stringify(frames);
  }
  return out;
}

/** The frames of a live session from `from`: the replay, with replays, re-cut overlaps, other
 *  frames and hostile numbers mixed in. */
function liveFrames(rng, log, from, streamId, seen, lens) {
  const { int, pick, chance } = tools(rng);
  const frames = [{ type: 'open', streamId, from, seq: from, durableSeq: from, ended: false }];
  const replay = log.filter((f) => f.type === 'end' || f.seq > from);
  for (let k = 0; k < replay.length; k++) {
    let f = { ...replay[k] };
    if (f.type === 'end' && chance(0.5)) {
      // A delta after everything, continuing some part's body: taken for a part still open,
      // refused for one that ended (ended in the durable message, a stored document's parts
      // included, or live).
      const part = int(lens.length);
      frames.push({ type: 'chunk', from: f.seq, seq: f.seq + 1, text: 'x', part, at: lens[part] });
    }
    if (f.type === 'chunk' && f.from < from) {
      const cut = from - f.from;
      f = { ...f, from, text: f.text.slice(cut), at: (f.at ?? f.from) + cut, part: f.part ?? 0 };
    }
    const r = rng();
    if (r < 0.05 && k > 0) frames.push({ ...replay[int(k)] });
    else if (r < 0.35 && f.type === 'chunk' && k + 1 < replay.length && replay[k + 1].type === 'chunk' &&
      (replay[k + 1].part ?? 0) === (f.part ?? 0)) {
      // Two deltas of one body as one chunk, sent again from the first's start once the first
      // is held: an overlap, spliced at its own offset.
      const g = replay[k + 1];
      frames.push(f, { ...f, seq: g.seq, text: f.text + g.text, part: f.part ?? 0, at: f.at ?? f.from });
      seen.overlaps++;
      continue;
    } else if (r < 0.38) {
      frames.push(pick([{ type: 'durable', seq: int(f.seq ?? 1) }, { type: 'open', streamId, from, seq: from, durableSeq: from, ended: false }]));
    } else if (r < 0.45 && f.type !== 'end') {
      // Hostile numbers.
      const how = pick(['part', 'at', 'gap', 'back', 'kind', 'wide', 'half', 'foreign']);
      if (how === 'part') f.part = (f.part ?? 0) + 1 + int(3);
      else if (how === 'at' && f.type === 'chunk') Object.assign(f, { part: f.part ?? 0, at: (f.at ?? f.from) + pick([-2, -1, 1, 3]) });
      // Past anything held, so the rule that decides is the gap's. (A shift that lands inside
      // what is held is an overlap whose text disagrees with it: see the note in spoilRows.)
      else if (how === 'gap') Object.assign(f, { from: f.from + 1000 + int(2), seq: f.seq + 1000 + int(2) });
      else if (how === 'back' && f.type !== 'chunk') Object.assign(f, { from: f.from - 1, seq: f.seq - 1 });
      else if (how === 'kind') Object.assign(f, { type: 'part', part: int(4), kind: 'text' });
      else if (how === 'wide') f.seq += 1;
      else if (how === 'half' && f.type === 'chunk') Object.assign(f, { part: f.part ?? 0, at: String(f.at ?? f.from) });
      else if (how === 'foreign') Object.assign(f, { type: 'open', streamId: 'other', from: 0, seq: 0, durableSeq: 0, ended: false });
    }
    if (chance(0.97)) frames.push(f);
  }
  return frames;
}

/** The core's folding reader, driven the way the package drives its own: numbers decide, and a
 *  frame whose action changes the message is folded from its JSON. */
function coreReader(message, streamId) {
  const r = message.reader();
  return {
    push(frame) {
      const code = feedNumbers(r, frame, streamId, false);
      const action = MESSAGE_ACTIONS[code];
      const event = { action, part: r.part(), at: r.at() };
      if (action === 'stop') return { action, reason: STOP_REASONS[r.stopCode()] };
      if (action !== 'ignore') r.apply(JSON.stringify(frame));
      return action === 'ignore' ? { action } : event;
    },
    get resumeFrom() {
      return r.resumeFrom();
    },
    get doc() {
      return JSON.parse(r.document());
    },
  };
}

/** A package reader (MessageReader or, `stream`, StreamReader) in the same terms. */
function packageReader(api, durable, streamId, stream) {
  let event = null;
  const options = {
    streamId,
    durable,
    onUpdate(u) {
      event = { action: u.action, part: u.part ?? NaN, at: u.action === 'splice' ? (stream ? u.cut : u.at) : NaN };
    },
    onStop(reason) {
      event = { action: 'stop', reason };
    },
  };
  const reader = stream ? new api.StreamReader(options) : new api.MessageReader(options);
  return {
    push(frame) {
      event = null;
      reader.push(frame);
      return event ?? { action: 'ignore' };
    },
    get resumeFrom() {
      return reader.resumeFrom;
    },
    get doc() {
      return JSON.parse(JSON.stringify(reader.message));
    },
  };
}

test(`messages: the package's assembly and readers agree with the core's on ${CASES} random sessions (base seed ${BASE})`, () => {
  console.log(`message differential: base seed ${BASE} (PROP_SEED=${BASE} replays this run)`);
  const seen = { assembled: 0, refused: new Map(), actions: new Map(), stops: new Map(), documents: 0, overlaps: 0 };
  const count = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
  for (let c = 0; c < CASES; c++) {
    const seed = (BASE + c) >>> 0;
    const rng = mulberry32(seed);
    const { int, pick, chance } = tools(rng);
    const streamId = pick(['m', 'm', 'm\ud800']);
    const { log, total, lens } = genLog(rng);
    const where = (what) => `${what}: seed ${seed} (rerun: PROP_SEED=${seed} PROP_CASES=1)\nlog: ${log.map(canon).join('\n  ')}`;

    // Assembly: checkpoints at random offsets, sometimes sealed with the core's document, and
    // sometimes spoiled.
    const cuts = [...new Set(Array.from({ length: 1 + int(4) }, () => 1 + int(total)))].sort((a, b) => a - b);
    let row = { seq: 0 };
    let chunks = rowsOf(log, cuts);
    if (chance(0.15)) {
      const sealed = coreAssembly({ seq: 0 }, rowsOf(log, [total]));
      row = { body: 'ignored', document: sealed.message.document(), seq: total };
      chunks = [];
      seen.documents++;
      if (chance(0.3)) row.seq = int(total + 1);
    }
    const spoiled = chance(0.25);
    if (spoiled) chunks = spoilRows(rng, chunks);
    const want = coreAssembly(row, chunks);
    for (const [name, api] of [['napi', napi], ['wasm', wasm]]) {
      const got = packageAssembly(api, row, chunks);
      if (!same(got, want)) assert.fail(where(`assembly over ${name}: ${canon(got.error ?? got.doc)} len ${got.len} table ${canon(got.table)}, the core ${canon(want.error ?? want.doc)} len ${want.len} table ${canon(want.table)}\nrow ${canon(row)}\nchunks ${canon(chunks)}`));
    }
    if (want.error !== undefined) {
      count(seen.refused, want.error);
      continue;
    }
    seen.assembled++;
    // Spoiled rows that still assemble hold a message the log no longer continues (a text row
    // twice, say): live frames overlapping it would ask the fold what the contract leaves to the
    // producer. Reading is checked from the rows a producer writes.
    if (spoiled) continue;

    // Reading from the join, against the core's reader holding the core's durable message.
    const frames = liveFrames(rng, log, want.len, streamId, seen, lens);
    const oracle = coreReader(want.message, streamId);
    const readers = [];
    for (const [name, api] of [['napi', napi], ['wasm', wasm]]) {
      const durable = api.assembleDurableMessage(row, chunks);
      readers.push([`${name} MessageReader`, packageReader(api, durable, streamId, false)]);
      readers.push([`${name} StreamReader`, packageReader(api, durable, streamId, true)]);
    }
    for (let i = 0; i < frames.length; i++) {
      const expect = oracle.push(frames[i]);
      count(seen.actions, expect.action);
      if (expect.action === 'stop') count(seen.stops, expect.reason);
      const compareDoc = chance(0.3) || i === frames.length - 1;
      const wantState = canon({ event: expect, resumeFrom: oracle.resumeFrom, doc: compareDoc ? oracle.doc : null });
      for (const [name, reader] of readers) {
        const got = canon({ event: reader.push(frames[i]), resumeFrom: reader.resumeFrom, doc: compareDoc ? reader.doc : null });
        if (got !== wantState) assert.fail(where(`${name} at frame ${i} ${canon(frames[i])}:\n  got  ${got}\n  core ${wantState}\nframes: ${frames.map(canon).join('\n  ')}`));
      }
    }
  }
  const show = (m) => canon(Object.fromEntries(m));
  console.log(`message differential: ${CASES} sessions; ${seen.overlaps} overlapping deltas; ${seen.assembled} assembled (${seen.documents} from a document), refused ${show(seen.refused)}; actions ${show(seen.actions)}; stops ${show(seen.stops)}`);
  // The generator must reach the rules, not only agree on easy cases.
  assert.ok(seen.overlaps > CASES / 20, `only ${seen.overlaps} overlapping deltas`);
  for (const action of ['splice', 'start', 'end', 'set', 'meta', 'finish', 'transient', 'ignore']) {
    assert.ok((seen.actions.get(action) ?? 0) > CASES / 20, `only ${seen.actions.get(action) ?? 0} ${action} actions`);
  }
  for (const reason of ['malformed', 'gap', 'foreign_stream', 'end']) {
    assert.ok((seen.stops.get(reason) ?? 0) > CASES / 100, `only ${seen.stops.get(reason) ?? 0} stops for ${reason}`);
  }
  for (const kind of ['invalid_field', 'invalid_offset', 'invalid_json']) {
    assert.ok((seen.refused.get(kind) ?? 0) > CASES / 200, `only ${seen.refused.get(kind) ?? 0} assemblies refused with ${kind}`);
  }
});
