// Judges the Rust UI message stream module (`twoplane_core::ui`, the one the server uses) with the
// SDK's own reader, over the recorded fixtures of every major. Its cases come from
// `cargo run -p twoplane-core --example ui_cases -- fixtures CASES.ndjson`:
// - `cut`: the compacted replay of what the first `at` chunks made; `readUIMessageStream` over it
//   must build the message it builds over those `at` chunks themselves;
// - `join`: a reader joining at offset `at` (every event boundary), replay then live tail then the
//   stream's end; it must build the message of the whole stream;
// - `advance`: a reader brought from one boundary to a later one in one step (the server's
//   fallback on the store), then the tail; it must build the message of the whole stream too.
// Messages are compared as JSON (what a store keeps).
//
//   node check-egress.mjs CASES.ndjson [--verbose]
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { loadMajor } from './lib/majors.mjs';
import { lastMessage, asJson } from './lib/read.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const file = process.argv[2];
if (!file) {
  console.error('usage: node check-egress.mjs CASES.ndjson [--verbose]');
  process.exit(2);
}
const verbose = process.argv.includes('--verbose');
const cases = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));

const majors = new Map();
const fixtureChunks = new Map();
const wholeMessages = new Map();
function chunksOf(major, fixture) {
  const key = `${major}/${fixture}`;
  if (!fixtureChunks.has(key)) {
    const text = readFileSync(join(HERE, 'fixtures', major, `${fixture}.chunks.json`), 'utf8');
    fixtureChunks.set(key, text.trim().split('\n').map((l) => JSON.parse(l)));
  }
  return fixtureChunks.get(key);
}

let passed = 0;
let failed = 0;
const perFixture = new Map();
for (const c of cases) {
  if (!majors.has(c.major)) majors.set(c.major, await loadMajor(c.major));
  const M = majors.get(c.major);
  const original = chunksOf(c.major, c.fixture);
  let want;
  if (c.mode === 'cut') {
    want = asJson((await lastMessage(M, original.slice(0, c.at))).message);
  } else {
    const key = `${c.major}/${c.fixture}`;
    if (!wholeMessages.has(key)) wholeMessages.set(key, asJson((await lastMessage(M, original)).message));
    want = wholeMessages.get(key);
  }
  let got = null;
  let why = c.error ?? '';
  if (c.chunks) {
    try {
      got = asJson((await lastMessage(M, c.chunks)).message);
    } catch (e) {
      why = e.message;
    }
  }
  // A prefix the SDK builds no message from (nothing but `start`) may be answered with a
  // message holding no parts.
  const same = isDeepStrictEqual(got, want) || (want === null && got && got.parts.length === 0);
  const key = `ai ${M.version} ${c.fixture}`;
  const tally = perFixture.get(key) ?? { cut: 0, join: 0, advance: 0, bad: 0 };
  tally[c.mode]++;
  if (same) passed++;
  else {
    failed++;
    tally.bad++;
    if (verbose || tally.bad === 1) {
      console.log(`FAIL ${key} ${c.mode} at ${c.at} ${why}`);
      console.log('  want', JSON.stringify(want)?.slice(0, verbose ? undefined : 600));
      console.log('  got ', JSON.stringify(got)?.slice(0, verbose ? undefined : 600));
      if (verbose) console.log('  chunks', JSON.stringify(c.chunks));
    }
  }
  perFixture.set(key, tally);
}
for (const [key, t] of perFixture) console.log(`${key}: ${t.cut} cuts, ${t.join} joins, ${t.advance} advances, ${t.bad} differ`);
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed || passed === 0 ? 1 : 0;
