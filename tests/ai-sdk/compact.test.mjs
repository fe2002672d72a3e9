// The snapshot compaction of `twoplane/ai-sdk` (`compactChunks`, follow.js), judged by the SDK's
// own `readUIMessageStream` of every major: the transport keeps the chunks its page processed,
// compacted as they come, and replays them into a reloaded page, so a compacted prefix must build
// exactly the message its chunks built, and compacting piece by piece must give what compacting
// the whole gives. Deltas merge only within one part (the rule the server's display-rate merge
// follows too, docs/contract.md §5): streams whose parts interleave are where a merge across a
// part boundary would show.
//
// Cases: every recorded stream of 5, 6 and 7 (tests/ai-sdk/fixtures), and seeded random streams
// of interleaved text, reasoning and tool-input parts with data parts (transient or not) and
// deltas that carry provider metadata; each cut at every chunk.
//
//   node --test compact.test.mjs        (TWOPLANE_COMPACT_SEED=N replays one seed)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAJORS, loadMajor } from './lib/majors.mjs';
import { lastMessage, asJson } from './lib/read.mjs';
import { compactChunks } from '../../npm/twoplane/src/ai-sdk/follow.js';
import { mulberry32 } from '../js/gen.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const RANDOM_STREAMS = 40;

const fixtureStreams = (major) =>
  Object.keys(JSON.parse(readFileSync(join(HERE, 'fixtures', major, 'manifest.json'), 'utf8')).fixtures).map((name) => ({
    name,
    chunks: readFileSync(join(HERE, 'fixtures', major, `${name}.chunks.json`), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
  }));

const PIECES = ['Hel', 'lo', ', ', 'wor', 'ld', ' 東京', ' 😀', '\n', 'a', 'bc'];

/** A UI message stream whose parts interleave: each step either starts a part, sends a delta of an
 *  open part, ends one, or sends a data part. */
function randomStream(seed) {
  const r = mulberry32(seed);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const chunks = [{ type: 'start', messageId: `m${seed}` }];
  const open = [];
  let made = 0;
  for (let step = 0; step < 40; step++) {
    const roll = r();
    if ((roll < 0.2 || open.length === 0) && made < 5) {
      const kind = pick(['text', 'reasoning', 'tool']);
      const id = `${kind}-${made++}`;
      if (kind === 'tool') chunks.push({ type: 'tool-input-start', toolCallId: id, toolName: 'search' });
      else chunks.push({ type: `${kind}-start`, id });
      open.push({ kind, id, input: '' });
    } else if (roll < 0.8 && open.length > 0) {
      const p = pick(open);
      if (p.kind === 'tool') {
        const piece = pick(['{"q":', '"x', 'y"', ',"n":', '1', '2}']);
        p.input += piece;
        chunks.push({ type: 'tool-input-delta', toolCallId: p.id, inputTextDelta: piece });
      } else {
        const c = { type: `${p.kind}-delta`, id: p.id, delta: pick(PIECES) };
        if (r() < 0.1) c.providerMetadata = { test: { step } };
        chunks.push(c);
      }
    } else if (roll < 0.9) {
      const transient = r() < 0.5;
      chunks.push({ type: 'data-note', id: `d${step}`, data: { step }, ...(transient ? { transient: true } : {}) });
    } else if (open.length > 0) {
      const p = open.splice(Math.floor(r() * open.length), 1)[0];
      if (p.kind !== 'tool') chunks.push({ type: `${p.kind}-end`, id: p.id });
      // A tool's input that never became JSON is left streaming: the SDK keeps what it parsed.
      else if (p.input === '{"q":"xy"}' || p.input === '') chunks.push({ type: 'tool-input-available', toolCallId: p.id, toolName: 'search', input: { q: 'xy' } });
    }
  }
  return chunks;
}

/** Two adjacent chunks compactChunks should have merged: deltas of one part, neither carrying
 *  more than its id and text. */
function unmergedPair(chunks) {
  const text = { 'text-delta': 'delta', 'reasoning-delta': 'delta', 'tool-input-delta': 'inputTextDelta' };
  const idOf = (c) => c.id ?? c.toolCallId;
  const plain = (c) => Object.keys(c).length === 3 && text[c.type] in c;
  for (let i = 1; i < chunks.length; i++) {
    const [a, b] = [chunks[i - 1], chunks[i]];
    if (text[a.type] && a.type === b.type && idOf(a) === idOf(b) && plain(a) && plain(b)) return i;
  }
  return -1;
}

async function judge(M, name, chunks) {
  const whole = compactChunks(chunks);
  assert.equal(unmergedPair(whole), -1, `${name}: two deltas of one part left apart`);
  for (let k = 1; k <= chunks.length; k++) {
    const prefix = chunks.slice(0, k);
    const compacted = compactChunks(prefix);
    const want = await lastMessage(M, prefix);
    const got = await lastMessage(M, compacted);
    assert.deepEqual(asJson(got.message), asJson(want.message), `${name}: the message its first ${k} chunks build`);
    assert.deepEqual(got.errors, want.errors, `${name}: the errors of its first ${k} chunks`);
    // The transport compacts as it goes: what it held, compacted, then the rest.
    assert.deepEqual(compactChunks([...compacted, ...chunks.slice(k)]), whole, `${name}: compacted at ${k}, then the rest`);
  }
  assert.ok(whole.length <= chunks.length);
}

for (const major of MAJORS) {
  test(`ai ${major}: a compacted snapshot builds what its chunks build, for every recorded stream at every cut`, async () => {
    const M = await loadMajor(major);
    for (const { name, chunks } of fixtureStreams(major)) await judge(M, `${major}/${name}`, chunks);
  });

  test(`ai ${major}: interleaved parts compact only within a part (${RANDOM_STREAMS} random streams, every cut)`, async () => {
    const M = await loadMajor(major);
    const fixed = process.env.TWOPLANE_COMPACT_SEED;
    const seeds = fixed ? [Number(fixed)] : Array.from({ length: RANDOM_STREAMS }, (_, i) => 1000 + i);
    let interleaved = 0;
    for (const seed of seeds) {
      const chunks = randomStream(seed);
      // Streams where deltas of two parts alternate are the ones this test is for: count them.
      if (chunks.some((c, i) => i > 0 && c.type.endsWith('-delta') && chunks[i - 1].type.endsWith('-delta') && (c.id ?? c.toolCallId) !== (chunks[i - 1].id ?? chunks[i - 1].toolCallId))) interleaved++;
      await judge(M, `seed ${seed} (TWOPLANE_COMPACT_SEED=${seed})`, chunks);
    }
    if (!fixed) assert.ok(interleaved >= RANDOM_STREAMS / 4, `only ${interleaved} streams had adjacent deltas of two parts`);
  });
}
