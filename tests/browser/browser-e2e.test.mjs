// End to end in headless Chromium: the fixture streams a long response (emoji, CJK, pairs split
// across chunks) in small writes, drops the connection several times at random bytes (mostly
// mid-event), then seals. The page renders with the package's StreamReader. Asserted: the page
// ends with exactly the produced text; no state the text node ever held was anything but a prefix
// of it; exactly one new connection per drop, each resuming where the last one delivered (with
// Last-Event-ID on the fetch transport); the reader hangs up after the seal and never returns.
// TWOPLANE_E2E_SEED=<n> replays a seed; the seed in use is printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scenario, startServer } from './lib/server.mjs';
import { launch, runPage } from './lib/browser.mjs';

const SEED = Number(process.env.TWOPLANE_E2E_SEED ?? (Date.now() % 100000));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(pred, ms, what) {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

for (const [transport, drops, seed] of [['fetch', 6, SEED], ['eventsource', 3, SEED + 1]]) {
  test(`reader in Chromium (${transport}): ${drops} drops then the seal, seed ${seed}`, async (t) => {
    console.log(`e2e ${transport}: seed ${seed} (TWOPLANE_E2E_SEED=${seed} replays it)`);
    const server = await startServer();
    const browser = await launch();
    t.after(async () => {
      await browser.close();
      await server.close();
    });
    const sc = scenario({ seed, drops, units: 12000, join: 100 + (seed % 50) });
    server.play(sc);
    const out = await runPage(browser, `${server.origin}/pages/e2e.html?transport=${transport}`, 90000);
    await until(() => server.state.connections.at(-1)?.clientClosed, 5000, 'the page to hang up after the seal');
    await sleep(300);
    const log = server.state.connections;

    assert.equal(out.reason, 'end');
    assert.equal(out.text === sc.text, true, 'the page ends with exactly the produced text');
    assert.equal(out.readerText === sc.text, true);
    assert.equal(out.rendered === sc.text, true);
    assert.equal(out.notPrefix, 0, `${out.notPrefix} of ${out.states} rendered states were not a prefix`);
    assert.ok(out.states > drops * 10, `only ${out.states} states observed`);
    assert.equal(log.length, drops + 1, 'exactly one new connection per drop');
    assert.equal(out.connections, drops + 1);
    assert.equal(log[0].from, sc.join);
    for (let i = 1; i < log.length; i++) {
      // It resumes from what it applied: at most what the server wrote before the cut (a browser
      // discards bytes it had received but not yet handed to the page when the connection
      // errors), and never behind where the previous connection started.
      assert.ok(log[i].from <= log[i - 1].delivered && log[i].from >= log[i - 1].from, `connection ${i} resumes at ${log[i].from}, between ${log[i - 1].from} and ${log[i - 1].delivered}`);
      if (transport === 'fetch') assert.equal(log[i].lastEventId, String(log[i].from), 'Last-Event-ID names the resume point');
    }
    assert.ok(log.slice(0, drops).some((c) => c.midEvent), 'some drop cut an event in two');
    assert.ok(log.at(-1).sealed && log.at(-1).clientClosed);
    assert.deepEqual(browser.errors.filter((e) => !/Failed to load resource|ERR_INCOMPLETE_CHUNKED_ENCODING|net::/.test(e)), []);
    console.log(`e2e ${transport}: ${sc.text.length} code units, ${out.updates} updates, ${out.states} DOM states checked, cuts at ${log.slice(0, drops).map((c) => `${c.cutAt}${c.midEvent ? '*' : ''}`).join(' ')} (* mid-event)`);
  });
}
