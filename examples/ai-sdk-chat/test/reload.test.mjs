// Keeps examples/ai-sdk-chat from rotting: starts it exactly as its README says
// (`bash scripts/example-ai-sdk.sh`), drives the page in headless Chromium (Debian's, through
// tests/browser's helper), and compares two runs of the same question:
//
// - one that nobody disturbs, and
// - one reloaded mid reasoning, mid tool input, while the tool's output is still preliminary and
//   mid text, then once more after the answer ended.
//
// The second must end rendering exactly what the first rendered (the reasoning, the server tool's
// input and output, both texts, the data part, the page's own tool and its answer); every reload
// must resume from an offset the page held; the page's tool must have run once in all; and at no
// moment may the page show a part twice, a text that is not a prefix of the final one, or a second
// answer. Last, SIGINT to the script (a Ctrl-C) must stop both servers and remove its directory.
//
// Run by scripts/test-aisdk.sh. Env: CHROMIUM_PATH (Debian's /usr/bin/chromium by default).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from '../../../tests/browser/lib/browser.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const QUESTION = 'What does a reload do to an answer?';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let example;
let browser;

/** `bash scripts/example-ai-sdk.sh`, resolved once it prints the address to open. */
function startExample() {
  // Its own process group, so that a failed test can still stop everything the script started.
  const child = spawn('bash', [join(ROOT, 'scripts/example-ai-sdk.sh')], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const run = { child, log: '', exited: new Promise((r) => child.once('exit', (code, signal) => r({ code, signal }))) };
  const collect = (d) => {
    run.log += d;
    process.stderr.write(d);
  };
  child.stdout.setEncoding('utf8').on('data', collect);
  child.stderr.setEncoding('utf8').on('data', collect);
  return new Promise((resolveStart, rejectStart) => {
    // The first run on a machine installs packages and builds the binary.
    const timer = setTimeout(() => rejectStart(new Error('the example did not start in 20 minutes')), 20 * 60_000);
    child.stdout.on('data', () => {
      const m = /Open (http:\/\/\S+?)\/? and ask/.exec(run.log);
      if (!m) return;
      clearTimeout(timer);
      run.url = m[1];
      run.appPort = Number(new URL(m[1]).port);
      run.twoplanePort = Number(/twoplane serve on 127\.0\.0\.1:(\d+)/.exec(run.log)[1]);
      run.work = /SQLite in (\S+),/.exec(run.log)[1];
      resolveStart(run);
    });
    run.exited.then(({ code }) => {
      clearTimeout(timer);
      rejectStart(new Error(`the example's script exited (${code}) before it was up`));
    });
  });
}

const listening = (port) =>
  new Promise((r) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), r(true)));
    s.once('error', () => r(false));
  });

before(async () => {
  example = await startExample();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  // Whatever a failed test left running in the script's process group (the script itself, or
  // servers it did not stop).
  if (example) {
    try {
      process.kill(-example.child.pid, 'SIGKILL');
    } catch {
      // the group is gone: everything stopped
    }
  }
});

// ---------------------------------------------------------------------------------------------
// Reading the page

/** What the page shows: per message its role and, per part, its kind, state and text. */
function snapshot(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('article[data-role]')].map((m) => ({
      role: m.dataset.role,
      parts: [...m.querySelectorAll('[data-part]')].map((p) => ({
        part: p.dataset.part,
        state: p.dataset.state ?? null,
        tool: p.dataset.tool ?? null,
        text: p.textContent,
      })),
    })),
  );
}

/** The chat's `held` record as the transport stored it in sessionStorage. */
function heldRecord(page) {
  return page.evaluate(() => {
    const chat = new URLSearchParams(location.search).get('chat');
    const raw = sessionStorage.getItem(`twoplane:held:${chat}`);
    return raw === null ? null : JSON.parse(raw);
  });
}

async function ask(page) {
  await page.fill('form input', QUESTION);
  await page.click('form button[type=submit]');
}

/** Until the answer ended: the chat is ready and the page answered its tool. */
async function answered(page) {
  await page.waitForFunction(
    () => {
      const main = document.querySelector('main[data-status]');
      const answers = document.querySelectorAll('article[data-role=assistant]');
      const last = answers[answers.length - 1];
      return main?.dataset.status === 'ready' && last?.querySelector('[data-tool=readerLocale][data-state=output-available]') != null;
    },
    null,
    { timeout: 60_000, polling: 50 },
  );
}

/** Watches the page every few ms (reloads included) and keeps what it saw. */
function watch(page) {
  const seen = [];
  let on = true;
  const done = (async () => {
    while (on) {
      try {
        seen.push(await snapshot(page));
      } catch {
        // the page is navigating
      }
      await sleep(15);
    }
  })();
  return {
    seen,
    async stop() {
      on = false;
      await done;
    },
  };
}

/** Every state the page showed is on the way to `final`: no part twice, no foreign text. */
function assertOnTheWay(seen, final, what) {
  const answer = final.find((m) => m.role === 'assistant');
  for (const [i, shot] of seen.entries()) {
    const answers = shot.filter((m) => m.role === 'assistant');
    assert.ok(answers.length <= 1, `${what}: sample ${i} shows ${answers.length} answers`);
    if (answers.length === 0) continue;
    const parts = answers[0].parts;
    assert.ok(parts.length <= answer.parts.length, `${what}: sample ${i} shows ${parts.length} parts, the answer has ${answer.parts.length}`);
    for (const [j, p] of parts.entries()) {
      const want = answer.parts[j];
      assert.equal(p.part, want.part, `${what}: sample ${i}, part ${j} is a ${p.part}, the answer's is a ${want.part}`);
      if (p.part === 'text' || p.part === 'reasoning') {
        const body = p.part === 'reasoning' ? p.text.replace(/^Reasoning/, '') : p.text;
        const full = want.part === 'reasoning' ? want.text.replace(/^Reasoning/, '') : want.text;
        assert.ok(full.startsWith(body), `${what}: sample ${i}, ${p.part} ${j} is not a prefix of the answer's: ${JSON.stringify(body.slice(0, 120))}`);
      }
    }
  }
}

/** Reload `page` once `ready` holds on it; returns the offset it held and the offset it resumed from. */
async function reloadWhen(page, label, ready, requests) {
  await page.waitForFunction(ready, null, { timeout: 30_000, polling: 20 });
  const before = await heldRecord(page);
  assert.ok(before && before.offset > 0, `${label}: the page holds an offset before the reload (${JSON.stringify(before)})`);
  requests.length = 0;
  await page.reload();
  // The resume is a GET of the stream from the offset the page held: never from 0, never earlier.
  const t0 = Date.now();
  while (!requests.some((u) => u.includes('/ui-message-stream?from=')) && Date.now() - t0 < 10_000) await sleep(20);
  const resume = requests.find((u) => u.includes('/ui-message-stream?from='));
  assert.ok(resume, `${label}: after the reload the page resumed the answer from twoplane (requests: ${requests.join(', ')})`);
  const from = Number(new URL(resume).searchParams.get('from'));
  assert.ok(from >= before.offset, `${label}: resumed from ${from}, the page held ${before.offset}`);
  assert.ok(resume.includes(`/v1/streams/${encodeURIComponent(before.streamId)}/`), `${label}: the same stream`);
  return { held: before.offset, from };
}

const RELOADS = [
  ['mid reasoning', () => (document.querySelector('[data-part=reasoning][data-state=streaming] p')?.textContent.length ?? 0) > 40],
  ['mid tool input', () => document.querySelector('[data-tool=searchDocs][data-state=input-streaming]') != null],
  ['while the tool output is preliminary', () => /preliminary output/.test(document.querySelector('[data-tool=searchDocs] .tool-state')?.textContent ?? '')],
  ['mid text', () => (document.querySelector('[data-part=text][data-state=streaming]')?.textContent.length ?? 0) > 30],
];

// ---------------------------------------------------------------------------------------------

test('reloaded mid-answer four times, the page ends with exactly the message an undisturbed page shows, each part once', async (t) => {
  const quiet = await browser.context.newPage();
  await quiet.goto(example.url);
  await ask(quiet);
  await answered(quiet);
  const reference = await snapshot(quiet);
  const runsQuiet = await quiet.getAttribute('[data-tool-runs]', 'data-tool-runs');
  await quiet.close();

  const answer = reference.find((m) => m.role === 'assistant');
  assert.deepEqual(reference.map((m) => m.role), ['user', 'assistant']);
  assert.deepEqual(
    answer.parts.map((p) => p.tool ?? p.part),
    ['step', 'reasoning', 'searchDocs', 'step', 'text', 'data', 'text', 'readerLocale'],
    'the answer has every kind of part the example streams',
  );
  assert.equal(answer.parts[2].state, 'output-available');
  assert.match(answer.parts[2].text, /"status":"done"/, 'the server tool ran and its final output is shown');
  assert.match(answer.parts[7].text, /"timeZone"/, "the page's tool has the page's answer");
  assert.equal(runsQuiet, '1');

  // A tab of its own: a sessionStorage of its own, so a chat of its own.
  const page = await browser.context.newPage();
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(example.url);
  const watcher = watch(page);
  t.after(() => watcher.stop()); // also when an assertion below fails
  await ask(page);
  const resumes = [];
  for (const [label, ready] of RELOADS) resumes.push({ label, ...(await reloadWhen(page, label, ready, requests)) });
  await answered(page);
  await watcher.stop();
  console.log(`reloads: ${resumes.map((r) => `${r.label}: held ${r.held}, resumed from ${r.from}`).join('; ')}; ${watcher.seen.length} samples`);
  const reloaded = await snapshot(page);
  assert.deepEqual(reloaded, reference, 'after four reloads the page shows what the undisturbed page showed');
  assertOnTheWay(watcher.seen, reference, 'while reloading');
  assert.ok(watcher.seen.length > 50, `the page was watched (${watcher.seen.length} samples)`);
  const offsets = resumes.map((r) => r.from);
  assert.ok(offsets.every((o, i) => i === 0 || o > offsets[i - 1]), `each reload resumed further on: ${JSON.stringify(resumes)}`);
  assert.equal(await page.getAttribute('[data-tool-runs]', 'data-tool-runs'), '1', "the page's tool ran once over all reloads");

  // After the end: the finished answer is rebuilt from twoplane, the page's answer from its store.
  // The page first shows the messages it stored, which already look finished: wait for the
  // resume's GET to end, so that what is compared is what the resume rebuilt. (The transport
  // drops the connection once it has read `[DONE]`, so the request may also end as "failed".)
  const resumed = new Promise((resolveEnd, rejectEnd) => {
    const timer = setTimeout(() => rejectEnd(new Error("the resume's GET did not end in 20 s")), 20_000);
    const ended = (r) => {
      if (!r.url().includes('/ui-message-stream?from=')) return;
      clearTimeout(timer);
      page.off('requestfinished', ended).off('requestfailed', ended);
      resolveEnd();
    };
    page.on('requestfinished', ended).on('requestfailed', ended);
  });
  await page.reload();
  await resumed;
  await answered(page);
  assert.deepEqual(await snapshot(page), reference, 'a reload after the end shows the same message');
  assert.equal(await page.getAttribute('[data-tool-runs]', 'data-tool-runs'), '1');
  await page.close();

  const errors = browser.errors.filter((e) => !/Failed to load resource|net::ERR_ABORTED/.test(e));
  assert.deepEqual(errors, [], 'no page errors');
});

test('Stop is a cancel: the server stops the model, and a reload shows the answer as far as it went', async () => {
  const page = await browser.context.newPage();
  await page.goto(example.url);
  await ask(page);
  await page.waitForFunction(() => (document.querySelector('[data-part=text][data-state=streaming]')?.textContent.length ?? 0) > 20, null, { timeout: 30_000, polling: 20 });
  await page.click('form button[type=button]');
  await page.waitForSelector('main[data-status=ready]', { timeout: 10_000 });
  const { streamId } = await heldRecord(page);
  const t0 = Date.now();
  while (!example.log.includes(`${streamId}: cancelled (a reader stopped it)`) && Date.now() - t0 < 10_000) await sleep(50);
  assert.ok(example.log.includes(`${streamId}: cancelled (a reader stopped it)`), 'the server saw the cancel and stopped producing');
  await page.reload();
  await page.waitForSelector('main[data-status=ready] article[data-role=assistant] [data-part=text]', { timeout: 20_000 });
  await sleep(500); // nothing more may come
  const stopped = await snapshot(page);
  const reference = stopped.find((m) => m.role === 'assistant');
  assert.ok(reference.parts.length < 8 && !reference.parts.some((p) => p.tool === 'readerLocale'), 'the answer ended where it was stopped');
  assert.equal(await page.getAttribute('[data-tool-runs]', 'data-tool-runs'), '0');
  await page.close();
});

test('Ctrl-C (SIGINT to the script) stops twoplane serve and the example server and removes the temporary directory', async () => {
  assert.ok(await listening(example.appPort), 'the example server is up');
  assert.ok(await listening(example.twoplanePort), 'twoplane serve is up');
  process.kill(example.child.pid, 'SIGINT');
  const t0 = Date.now();
  const exit = await Promise.race([example.exited, sleep(30_000).then(() => null)]);
  assert.ok(exit, 'the script ended within 30 s of SIGINT');
  assert.equal(exit.code, 130, 'the script ended as interrupted');
  assert.ok(Date.now() - t0 < 30_000);
  assert.equal(await listening(example.appPort), false, 'the example server stopped');
  assert.equal(await listening(example.twoplanePort), false, 'twoplane serve stopped');
  assert.equal(existsSync(example.work), false, 'the temporary directory is gone');
});
