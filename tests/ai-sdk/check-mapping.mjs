// Judges the proposed mapping (lib/mapping.mjs, docs/ai-sdk-protocol.md) with the SDK's own
// reader: for every fixture of every major and every prefix of its chunks (a reader cut at any
// point), `readUIMessageStream` over the compacted replay of what we would have stored must build
// the message it builds over the original prefix (compared as JSON, what a store keeps).
//
//   node check-mapping.mjs [--verbose]
import { readFileSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { MAJORS, loadMajor } from './lib/majors.mjs';
import { lastMessage, asJson } from './lib/read.mjs';
import { toEvents, fold, replay, liveChunks } from './lib/mapping.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const verbose = process.argv.includes('--verbose');
let passed = 0;
let failed = 0;

for (const major of MAJORS) {
  const M = await loadMajor(major);
  const dir = join(HERE, 'fixtures', major);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.chunks.json')).sort()) {
    const name = file.slice(0, -'.chunks.json'.length);
    const chunks = readFileSync(join(dir, file), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    let bad = 0;
    for (let k = 0; k <= chunks.length; k++) {
      const prefix = chunks.slice(0, k);
      const want = asJson((await lastMessage(M, prefix)).message);
      let got;
      let why = '';
      try {
        const doc = fold(toEvents(prefix));
        got = asJson((await lastMessage(M, replay(doc))).message);
      } catch (e) {
        why = e.message;
      }
      // a prefix the SDK builds no message from (nothing but `start`) is one we may answer
      // with a message holding no parts
      const same = isDeepStrictEqual(got, want) || (want === null && got && got.parts.length === 0);
      if (same) passed++;
      else {
        failed++;
        bad++;
        if (verbose || bad === 1) {
          console.log(`FAIL ai ${major} ${name} cut after ${k} chunks (last: ${JSON.stringify(chunks[k - 1])?.slice(0, 90)}) ${why}`);
          if (verbose) console.log('  want', JSON.stringify(want), '\n  got ', JSON.stringify(got));
        }
      }
    }
    // a reader that joins after any event: the compacted replay of the document so far, then
    // the live tail from our events; it must end with the message of the whole stream
    const whole = asJson((await lastMessage(M, chunks)).message);
    const events = toEvents(chunks);
    let badJoin = 0;
    for (let j = 0; j <= events.length; j++) {
      let got;
      let why = '';
      try {
        const doc = fold(events.slice(0, j));
        const head = replay(doc);
        const tail = liveChunks(doc, events.slice(j));
        got = asJson((await lastMessage(M, [...head, ...tail])).message);
      } catch (e) {
        why = e.message;
      }
      if (isDeepStrictEqual(got, whole)) passed++;
      else {
        failed++;
        badJoin++;
        if (verbose || badJoin === 1) {
          console.log(`FAIL ai ${major} ${name} join after event ${j} (${JSON.stringify(events[j - 1])?.slice(0, 90)}) ${why}`);
          if (verbose) console.log('  want', JSON.stringify(whole), '\n  got ', JSON.stringify(got));
        }
      }
    }
    console.log(`ai ${M.version} ${name}: ${chunks.length + 1} cuts (${bad} differ), ${events.length + 1} joins (${badJoin} differ)`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
