// The peer's server for the benchmark: the AI SDK's documented resume setup, reduced to plain
// node:http. `resumable-stream` (2.x, with the `redis` client it is built against) keeps the
// chunks of the answer in progress in this process and hands them to resuming readers over Redis
// pub/sub.
//
//   POST /api/chat/{id}         the producer's UI message stream (SSE text, read as it arrives)
//                               goes into `createNewResumableStream`, as an app's route does
//                               from `toUIMessageStreamResponse({ consumeSseStream })`; the
//                               answer is 200 when the body has ended.
//   GET  /api/chat/{id}/stream  the resume route `useChat({ resume: true })` asks:
//                               `resumeExistingStream(id)` (204 when there is none or it ended);
//                               `?skip=N` passes `skipCharacters` (the library's own offset,
//                               which `useChat` never sends).
//
// REDIS_URL names the Redis (the library's default clients read it). The port it listens on is
// printed as one JSON line on stdout.

import http from 'node:http';
import { Readable } from 'node:stream';
import { createResumableStreamContext } from 'resumable-stream';

const UI_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
};

// A long-running server: nothing has to be kept alive after a response (`waitUntil: null`).
const streams = createResumableStreamContext({ waitUntil: null });

async function produce(id, req, res) {
  let ended;
  const bodyEnded = new Promise((resolve) => (ended = resolve));
  // The request body as strings, noting when it has been read to its end.
  const text = Readable.toWeb(req)
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new TransformStream({ flush: () => ended() }));
  // As in the SDK's documented route, the stream this returns (the asking browser's copy) is
  // not read here: the benchmark's readers all come through the resume route.
  await streams.createNewResumableStream(id, () => text);
  await bodyEnded;
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
}

async function resume(id, skip, res) {
  const stream = await streams.resumeExistingStream(id, skip);
  if (!stream) {
    res.writeHead(204).end();
    return;
  }
  res.writeHead(200, UI_HEADERS);
  const reader = stream.getReader();
  let closed = false;
  res.on('close', () => {
    closed = true;
    reader.cancel().catch(() => {});
  });
  for (;;) {
    const { done, value } = await reader.read();
    if (done || closed) break;
    if (!res.write(value)) {
      await new Promise((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
    }
  }
  if (!closed) res.end();
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://peer.invalid');
  const produceRoute = url.pathname.match(/^\/api\/chat\/([^/]+)$/);
  const resumeRoute = url.pathname.match(/^\/api\/chat\/([^/]+)\/stream$/);
  let work;
  if (req.method === 'POST' && produceRoute) {
    work = produce(decodeURIComponent(produceRoute[1]), req, res);
  } else if (req.method === 'GET' && resumeRoute) {
    const skip = url.searchParams.get('skip');
    work = resume(decodeURIComponent(resumeRoute[1]), skip === null ? undefined : Number(skip), res);
  } else {
    res.writeHead(404).end();
    return;
  }
  work.catch((e) => {
    console.error(`peer-server: ${req.method} ${url.pathname}: ${e?.message ?? e}`);
    if (!res.headersSent) res.writeHead(500).end(String(e?.message ?? e));
    else res.destroy();
  });
});

server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
