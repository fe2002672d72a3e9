// The example's application server: plain `node:http`, one chat route and the page.
//
//   POST /api/chat              runs `streamText` on the scripted mock model (model.mjs) and answers
//                               with the UI message stream, which `twoplane/ai-sdk`'s producer also
//                               sends into `twoplane serve` (one stream per answer). The page's
//                               transport reads the answer from twoplane, not from this response.
//   GET  /api/chat/:id/stream   204: the page's transport asks here only for a chat it holds no
//                               stream of, and this server keeps no chats.
//   GET  /api/config            where the page reaches `twoplane serve`.
//   anything else               the page: the Vite build in dist/, or Vite itself with --dev.
//
// Environment: PORT (3000), HOST (127.0.0.1), TWOPLANE_URL (how this server reaches twoplane,
// http://127.0.0.1:8787), TWOPLANE_PUBLIC_URL (how the page reaches it; TWOPLANE_URL by default),
// TWOPLANE_PRODUCER_TOKEN and TWOPLANE_READ_TOKEN_SECRET (the secrets `twoplane serve` was given),
// EXAMPLE_PACE (scales the model's delays). scripts/example-ai-sdk.sh sets them all.
//
// Run it with `node --preserve-symlinks`: `twoplane` is installed as a link to npm/twoplane, and
// the `ai` that its `twoplane/ai-sdk` entry imports must be found from this folder, not from the
// link's target (which has no node_modules).
import http from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { convertToModelMessages, createUIMessageStream, createUIMessageStreamResponse, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { createTwoplaneProducer } from 'twoplane/ai-sdk';
import { scriptedModel } from './model.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const DIST = join(HERE, 'dist');
const env = process.env;
const HOST = env.HOST ?? '127.0.0.1';
const PORT = Number(env.PORT ?? 3000);
const TWOPLANE_URL = env.TWOPLANE_URL ?? 'http://127.0.0.1:8787';
const TWOPLANE_PUBLIC_URL = env.TWOPLANE_PUBLIC_URL ?? TWOPLANE_URL;
const DEV = process.argv.includes('--dev');

// Produces each answer into twoplane and mints the read token the page presents there.
const producer = createTwoplaneProducer({
  url: TWOPLANE_URL,
  producerToken: env.TWOPLANE_PRODUCER_TOKEN || undefined,
  readTokenSecret: env.TWOPLANE_READ_TOKEN_SECRET || undefined,
});

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

const DOCS = [
  { title: 'Resuming by offset', file: 'docs/server.md', section: "The AI SDK's UI message stream" },
  { title: 'A transport for useChat', file: 'docs/ai-sdk.md', section: 'Reading and resuming: the transport' },
  { title: 'Messages made of parts', file: 'docs/contract.md', section: '§8' },
  { title: 'What a 200 means', file: 'docs/server.md', section: 'Producer API' },
];

const tools = {
  // Runs here, on the server; its outputs are part of the stream, so a reload keeps them.
  searchDocs: tool({
    description: "Search twoplane's documentation",
    inputSchema: z.object({ query: z.string(), sections: z.array(z.string()), limit: z.number().int() }),
    // A generator: the first output is preliminary (the page shows it while the search "runs").
    async *execute({ query, limit }, { abortSignal }) {
      yield { status: 'searching', query };
      await sleep(900, abortSignal);
      yield { status: 'done', hits: DOCS.slice(0, limit) };
    },
  }),
  // No `execute`: the page answers it (onToolCall), since only the browser knows the answer.
  readerLocale: tool({
    description: "The reader's language and time zone, from the browser",
    inputSchema: z.object({ why: z.string() }),
  }),
};

/** The text of the last user message (the scripted model quotes it). */
function lastQuestion(messages) {
  const user = [...messages].reverse().find((m) => m.role === 'user');
  const text = (user?.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join(' ').trim();
  return (text || 'How does a page resume an answer?').slice(0, 200);
}

async function chat(req, res) {
  const { messages = [] } = JSON.parse((await readBody(req)) || '{}');
  // The stream id is the id of the answer's message: what the page holds, and resumes, by it.
  const streamId = `answer-${randomUUID()}`;
  // Opens the stream in twoplane (so a page that reloads at once finds it) and gives the options
  // that tee the response into it: the message id, the SSE copy, and the headers that tell the
  // page's transport where to read (the stream and its read token).
  const options = await producer.responseOptions(streamId);
  options.done.then((o) => {
    const how = o.readerCancelled ? ' (a reader stopped it)' : o.chunks ? `, ${o.chunks} chunks` : o.message ? `: ${o.message}` : '';
    log(`${streamId}: ${o.status}${how}`);
  });
  log(`${streamId}: answering “${lastQuestion(messages)}”`);

  // streamText's own response cannot carry a data part, so the answer is written through
  // createUIMessageStream: the model's chunks as they come, and a `data-sources` part of our own.
  const stream = createUIMessageStream({
    execute: async ({ writer }) => {
      const result = streamText({
        model: scriptedModel(lastQuestion(messages), streamId),
        messages: await convertToModelMessages(messages, { tools, ignoreIncompleteToolCalls: true }),
        tools,
        stopWhen: stepCountIs(3),
        // Aborted when a reader cancels the stream in twoplane (the page's Stop button): the mock
        // model is no longer read, as a paid one would not be.
        abortSignal: producer.signal(streamId),
      });
      let hits = [];
      let textsEnded = 0;
      for await (const chunk of result.toUIMessageStream({ generateMessageId: options.generateMessageId })) {
        writer.write(chunk);
        if (chunk.type === 'tool-output-available' && !chunk.preliminary && Array.isArray(chunk.output?.hits)) hits = chunk.output.hits;
        // After the first paragraph, the sources it drew on (a fixed place, so that every run of
        // the same question renders the same message).
        if (chunk.type === 'text-end' && ++textsEnded === 1) {
          writer.write({ type: 'data-sources', id: 'sources', data: { count: hits.length, items: hits.map((h) => `${h.file}: ${h.title}`) } });
        }
      }
    },
  });
  await send(res, createUIMessageStreamResponse({ stream, ...options }));
}

// ---------------------------------------------------------------------------------------------
// Plumbing

const log = (line) => console.log(`example: ${line}`);

async function readBody(req, limit = 4 << 20) {
  let size = 0;
  const parts = [];
  for await (const part of req) {
    size += part.length;
    if (size > limit) throw Object.assign(new Error('request body too large'), { status: 413 });
    parts.push(part);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** Write a fetch `Response` to a Node response, stopping its body when the client goes away. */
async function send(res, response) {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) return void res.end();
  const reader = response.body.getReader();
  // The page's transport drops this body as soon as it has the headers (it reads from twoplane).
  // Only this copy stops: the one going to twoplane is a separate branch and goes on.
  res.on('close', () => reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // the client went away
  }
  res.end();
}

const json = (res, status, value) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.json': 'application/json' };

async function staticFile(req, res) {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const rel = normalize(path).replace(/^([/\\])+/, '');
  let file = join(DIST, rel);
  if (file !== DIST && !file.startsWith(DIST + sep)) return json(res, 404, { error: 'not found' });
  let info = await stat(file).catch(() => null);
  if (!info || info.isDirectory()) {
    // Every page path is the app (the chat id travels in the query string).
    file = join(DIST, 'index.html');
    info = await stat(file).catch(() => null);
    if (!info) return res.writeHead(503, { 'content-type': 'text/plain' }).end('The page is not built: run `npx vite build` in examples/ai-sdk-chat, or start the server with --dev.\n');
  }
  const immutable = rel.startsWith('assets/');
  res.writeHead(200, {
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'content-length': info.size,
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
  });
  if (req.method === 'HEAD') return void res.end();
  createReadStream(file).pipe(res);
}

const vite = DEV
  ? await (await import('vite')).createServer({ root: HERE, server: { middlewareMode: true }, appType: 'spa' })
  : null;

const server = http.createServer(async (req, res) => {
  try {
    const { pathname } = new URL(req.url, 'http://x');
    if (pathname === '/api/chat' && req.method === 'POST') return await chat(req, res);
    if (/^\/api\/chat\/[^/]+\/stream$/.test(pathname) && req.method === 'GET') return void res.writeHead(204).end();
    if (pathname === '/api/config' && req.method === 'GET') return json(res, 200, { twoplaneUrl: TWOPLANE_PUBLIC_URL });
    if (pathname.startsWith('/api/')) return json(res, 404, { error: 'not found' });
    if (vite) return vite.middlewares(req, res, () => json(res, 404, { error: 'not found' }));
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { error: 'method not allowed' });
    return await staticFile(req, res);
  } catch (e) {
    log(`${req.method} ${req.url}: ${e?.stack ?? e}`);
    if (!res.headersSent) json(res, e?.status ?? 500, { error: String(e?.message ?? e) });
    else res.destroy();
  }
});

server.listen(PORT, HOST, () => {
  const { port } = server.address();
  log(`listening on http://${HOST}:${port}/ (twoplane serve at ${TWOPLANE_URL}${DEV ? ', page from Vite' : ''})`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    server.close();
    server.closeAllConnections();
    vite?.close();
    process.exit(0);
  });
}
