// Checks every recorded fixture against the installed SDK, with the SDK's own code only:
//
// - the body parses with `DefaultChatTransport`'s own response parsing (every event validated by
//   `uiMessageChunkSchema`), and its framing is `data: <JSON>\n\n` per chunk, then `data: [DONE]`;
// - `readUIMessageStream` over those chunks builds the recorded message (as JSON);
// - the recorded headers are the SDK's `UI_MESSAGE_STREAM_HEADERS`;
// - recording the stream again today gives the same body, byte for byte;
// - every chunk type the major's `UIMessageChunk` union declares occurs in some fixture.
//
// Then it prints which fixtures cover which chunk type, per major.
//
//   node check-fixtures.mjs
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { MAJORS, loadMajor, declaredChunkTypes, coverageKey } from './lib/majors.mjs';
import { chunksFromSse, lastMessage, asJson } from './lib/read.mjs';
import { streamsFor, bodyText } from './record.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
let passed = 0;
let failed = 0;

function check(ok, what) {
  if (ok) passed++;
  else {
    failed++;
    console.log(`FAIL ${what}`);
  }
}

/** The events of an SSE body as the SDK frames them: `data: <payload>` blocks split at blank lines. */
function framing(sse) {
  if (!sse.endsWith('\n\n')) return { ok: false, why: 'does not end with a blank line' };
  const events = sse.slice(0, -2).split('\n\n');
  for (const e of events) {
    if (!e.startsWith('data: ') || e.includes('\n')) return { ok: false, why: `event is not one data line: ${JSON.stringify(e).slice(0, 80)}` };
  }
  return { ok: true, payloads: events.map((e) => e.slice('data: '.length)) };
}

const coverage = {}; // major -> chunk type -> [fixture]
const declared = {};

for (const major of MAJORS) {
  const M = await loadMajor(major);
  const dir = join(HERE, 'fixtures', major);
  declared[major] = declaredChunkTypes(M.alias);
  coverage[major] = {};
  const names = readdirSync(dir).filter((f) => f.endsWith('.sse')).map((f) => f.slice(0, -4)).sort();
  const expected = streamsFor(major).map(([n]) => n).sort();
  check(isDeepStrictEqual(names, expected), `ai ${major}: fixtures on disk ${names} are the streams the recorder defines ${expected}`);
  const builders = Object.fromEntries(streamsFor(major));

  for (const name of names) {
    const what = `ai ${M.version} ${name}`;
    const sse = readFileSync(join(dir, `${name}.sse`), 'utf8');
    const { status, headers } = JSON.parse(readFileSync(join(dir, `${name}.headers.json`), 'utf8'));
    const recorded = JSON.parse(readFileSync(join(dir, `${name}.message.json`), 'utf8'));

    // framing: one `data:` line per chunk, and `[DONE]` last
    const f = framing(sse);
    check(f.ok, `${what}: SSE framing (${f.why ?? ''})`);
    if (!f.ok) continue;
    check(f.payloads.at(-1) === '[DONE]', `${what}: ends with data: [DONE]`);

    // the transport's own parsing and validation
    let chunks;
    try {
      chunks = await chunksFromSse(M, sse, headers);
      check(true, `${what}: parses`);
    } catch (e) {
      check(false, `${what}: DefaultChatTransport refuses the body: ${e.message}`);
      continue;
    }
    const payloads = f.payloads.slice(0, -1).map((p) => JSON.parse(p));
    check(isDeepStrictEqual(chunks, payloads), `${what}: the transport's chunks are the body's JSON payloads, in order`);

    // headers and status
    check(status === 200, `${what}: status 200`);
    const sdkHeaders = Object.fromEntries(Object.entries(M.ai.UI_MESSAGE_STREAM_HEADERS).map(([k, v]) => [k.toLowerCase(), v]));
    check(isDeepStrictEqual(headers, sdkHeaders), `${what}: headers are UI_MESSAGE_STREAM_HEADERS`);

    // the message readUIMessageStream builds
    const { message } = await lastMessage(M, chunks);
    check(isDeepStrictEqual(asJson(message), recorded), `${what}: readUIMessageStream builds the recorded message`);

    // the SDK still sends exactly this
    const again = await bodyText(await builders[name].build(M));
    check(again === sse, `${what}: recording again gives the same body`);

    for (const c of chunks) {
      const t = coverageKey(c.type);
      const c2 = (coverage[major][t] ??= { fixtures: new Set(), chunks: 0 });
      c2.fixtures.add(name);
      c2.chunks++;
    }
  }
  for (const t of declared[major]) {
    check(coverage[major][t] != null, `ai ${major}: declared chunk type ${t} occurs in a fixture`);
  }
  for (const t of Object.keys(coverage[major])) {
    check(declared[major].includes(t), `ai ${major}: fixture chunk type ${t} is declared by the union`);
  }
}

// the coverage table
const allTypes = [];
for (const major of MAJORS) for (const t of declared[major]) if (!allTypes.includes(t)) allTypes.push(t);
const header = ['chunk type', ...MAJORS.map((m) => `ai ${m}`)];
const rows = allTypes.map((t) => [
  t,
  ...MAJORS.map((m) => (!declared[m].includes(t) ? '—' : coverage[m][t] ? `${coverage[m][t].chunks} in ${coverage[m][t].fixtures.size}` : 'MISSING')),
]);
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (r) => r.map((c, i) => c.padEnd(widths[i])).join(' | ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
for (const r of rows) console.log(line(r));
console.log(`(n in k: n chunks of that type in k fixtures; — : not in that major's UIMessageChunk union)`);
if (!existsSync(join(HERE, 'node_modules'))) console.log('run npm ci in tests/ai-sdk first');
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
