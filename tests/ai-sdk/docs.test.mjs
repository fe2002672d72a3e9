// The code of docs/ai-sdk.md, run as written, for one major of `ai` (TWOPLANE_AI=5|6|7, run with
// `node --import ./lib/ai-alias.mjs`, which resolves the blocks' `ai` to that major and their
// `twoplane/ai-sdk` to the package's source).
//
// Every `js`/`jsx` block of the guide is one of two files, named by its first line: the route
// (`// app/api/chat/route.js`) and the page (`// app/chat.jsx`); a block that is neither fails the
// test, so no code reaches the guide untried. Both are written unchanged into a folder beside the
// `./model.js` the route imports (lib/docs-model.mjs: the SDK's mock model and a client-side
// tool). The route's `POST` is served by a node:http app that keeps each chat's messages as they
// arrive; the page is bundled by esbuild as a Next.js app would be (JSX, its
// `process.env.NEXT_PUBLIC_TWOPLANE_URL` set to the app's `/tp`, a proxy to twoplane) and mounted
// with the app's messages in headless Chromium. The test then has the conversation the guide
// describes: a question, the model's call of the client-side tool (the page's `window.confirm`,
// accepted), the continuation the page sends with the tool's output, the page reloaded between
// the turns. It ends with one assistant message that holds both turns, the tool's `confirm` asked
// once over both loads, and one continuation at the route.
//
// Env: TWOPLANE_AI (required), TWOPLANE_BIN, CHROMIUM (default /usr/bin/chromium).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build as esbuild } from 'esbuild';
import { chromium } from 'playwright-core';
import { loadMajor } from './lib/majors.mjs';
import { startTwoplane } from './lib/twoplane.mjs';
import { servePage } from './lib/page.mjs';
import { respond } from './lib/respond.mjs';
import { FIRST_TEXT, CONTINUATION_TEXT } from './lib/continuation.mjs';
import { CHROMIUM_ARGS } from '../browser/lib/chromium-args.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const major = process.env.TWOPLANE_AI;
await loadMajor(major); // fails early on a major this run does not have
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The guide's `js`/`jsx` blocks by the file their first line names. */
function docBlocks() {
  const text = readFileSync(join(HERE, '../../docs/ai-sdk.md'), 'utf8');
  const blocks = {};
  for (const [, , body] of text.matchAll(/^```(js|jsx)\n([\s\S]*?)^```$/gm)) {
    const name = body.split('\n', 1)[0].match(/^\/\/ (\S+)$/)?.[1];
    assert.ok(name === 'app/api/chat/route.js' || name === 'app/chat.jsx', `docs/ai-sdk.md has a code block this test does not run:\n${body.slice(0, 200)}`);
    assert.ok(!(name in blocks), `docs/ai-sdk.md has two blocks named ${name}`);
    blocks[name] = body;
  }
  for (const name of ['app/api/chat/route.js', 'app/chat.jsx']) assert.ok(name in blocks, `docs/ai-sdk.md has no block ${name}`);
  return blocks;
}

let tp;
let work;
let app;
let browser;
let chats = 0;
const requests = new Map(); // chatId -> { all, continuations }
const saved = new Map(); // chatId -> the messages of its latest request
const holds = new Map(); // chatId -> the promise its continuation waits for
const arrived = new Map(); // chatId -> resolve of "the continuation reached the route"

before(async () => {
  const blocks = docBlocks();
  tp = await startTwoplane();
  // The folder name is what lib/ai-alias-hooks.mjs resolves the blocks' imports by.
  work = mkdtempSync(join(tmpdir(), 'twoplane-docs-run-'));
  writeFileSync(join(work, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(join(work, 'model.js'), `export { model, tools } from ${JSON.stringify(pathToFileURL(join(HERE, 'lib/docs-model.mjs')).href)};\n`);
  writeFileSync(join(work, 'route.js'), blocks['app/api/chat/route.js']);
  writeFileSync(join(work, 'chat.jsx'), blocks['app/chat.jsx']);
  writeFileSync(
    join(work, 'main.jsx'),
    [
      "import { createRoot } from 'react-dom/client';",
      "import { Chat } from './chat.jsx';",
      "const id = new URLSearchParams(location.search).get('chat');",
      'const stored = await (await fetch(`/chats/${id}/messages`)).json();',
      "createRoot(document.getElementById('root')).render(<Chat id={id} storedMessages={stored} />);",
      '',
    ].join('\n'),
  );
  Object.assign(process.env, { TWOPLANE_URL: tp.url, TWOPLANE_PRODUCER_TOKEN: tp.producerToken, TWOPLANE_READ_SECRET: tp.readSecret });
  const route = await import(pathToFileURL(join(work, 'route.js')).href);
  const out = await esbuild({
    entryPoints: [join(work, 'main.jsx')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    jsx: 'automatic',
    logLevel: 'silent',
    nodePaths: [join(HERE, 'node_modules')],
    alias: { ai: `ai${major}`, '@ai-sdk/react': `ai-sdk-react${major}`, 'twoplane/ai-sdk': join(HERE, '../../npm/twoplane/src/ai-sdk.js') },
    define: { 'process.env.NODE_ENV': '"production"', 'process.env.NEXT_PUBLIC_TWOPLANE_URL': '"/tp"' },
  });
  const page = servePage(out.outputFiles[0].text, () => tp.url);
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://app');
    try {
      if (page(req, res, url)) return;
      const parts = url.pathname.split('/').map(decodeURIComponent);
      if (req.method === 'GET' && parts[1] === 'chats' && parts[3] === 'messages') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(saved.get(parts[2]) ?? []));
        return;
      }
      if (req.method !== 'POST' || url.pathname !== '/api/chat') {
        res.writeHead(404).end();
        return;
      }
      let raw = '';
      for await (const c of req) raw += c;
      const { id, messages } = JSON.parse(raw);
      saved.set(id, messages);
      const r = requests.get(id) ?? { all: 0, continuations: 0 };
      requests.set(id, r);
      r.all += 1;
      if (messages.at(-1)?.role === 'assistant') {
        r.continuations += 1;
        arrived.get(id)?.();
        await holds.get(id);
      }
      const response = await route.POST(new Request(`http://app${url.pathname}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw }));
      await respond(res, response);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e?.stack ?? e));
      else res.destroy();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  app = { url: `http://127.0.0.1:${server.address().port}`, server };
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
});
after(async () => {
  await browser?.close();
  app?.server.closeAllConnections?.();
  app?.server.close();
  await tp?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The page's paragraphs (`role: text`) and whether its Send button is enabled (status ready). */
const look = (page) =>
  page.evaluate(() => ({
    lines: [...document.querySelectorAll('p')].map((p) => p.textContent),
    ready: document.querySelector('button') ? !document.querySelector('button').disabled : false,
  }));

async function until(page, ok, what, ms = 20_000) {
  const t0 = Date.now();
  for (;;) {
    const s = await look(page).catch(() => null); // null while the page reloads
    if (s && ok(s)) return s;
    assert.ok(Date.now() - t0 < ms, `${what}: not within ${ms} ms (${JSON.stringify(s)})`);
    await sleep(10);
  }
}

for (const reload of [false, true]) {
  test(`the guide's route and page${reload ? ', reloaded between the turns' : ''}: a client-side tool's continuation in one message`, async () => {
    const chatId = `docs-${major}-${++chats}`;
    let release = () => {};
    if (reload) holds.set(chatId, new Promise((r) => (release = r)));
    const continued = new Promise((r) => arrived.set(chatId, r));
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = [];
    const dialogs = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      d.accept();
    });
    try {
      await page.goto(`${app.url}/?chat=${chatId}`);
      await until(page, (s) => s.ready, 'the page is ready');
      await page.fill('input[name=text]', 'Go ahead.');
      await page.click('button');
      if (reload) {
        // The tool's output is on its way to the route (which holds it): the page goes away, and
        // the reloaded one resumes the message, whose stream then goes on.
        await continued;
        await page.reload({ waitUntil: 'commit' });
        await until(page, (s) => s.lines.some((l) => l.startsWith('assistant: ')), 'the reloaded page shows the message');
        release();
      }
      const want = ['user: Go ahead.', `assistant: ${FIRST_TEXT}${CONTINUATION_TEXT}`];
      const s = await until(page, (s) => s.ready && s.lines.at(-1) === want[1], 'the continuation ends');
      await sleep(200);
      assert.deepEqual((await look(page)).lines, want, `one assistant message with both turns (${JSON.stringify(s)})`);
      assert.deepEqual(dialogs, ['Go on?'], 'the client-side tool asked once');
      assert.deepEqual(requests.get(chatId), { all: 2, continuations: 1 }, 'the first turn and one continuation reached the route');
      assert.deepEqual(errors, []);
    } finally {
      release();
      await context.close();
    }
  });
}
