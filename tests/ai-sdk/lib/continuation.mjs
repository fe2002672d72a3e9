// The app of the continuation tests with reloads (continue-reload.test.mjs in Node,
// browser-continue.test.mjs in Chromium): one paced mock model, the same for a route without
// twoplane and a route producing into `twoplane serve`, and a server that keeps each chat's
// messages, as the AI SDK's persistence recipe has the server do.
//
// - `POST /plain/<flow>`: `streamText` answered through `toUIMessageStreamResponse`, nothing else
//   (what `DefaultChatTransport` reads). `POST /twoplane/<flow>`: the same answer, produced into
//   twoplane with `responseOptions(id, { originalMessages })`. The first turn of `client` calls
//   `confirm` (no `execute`: a client-side tool); the first turn of `approval` calls `deploy`
//   (`needsApproval`, run on the server once approved). A request whose messages end in the
//   assistant message is the continuation: the model then writes one text.
// - What the server saves: the messages of each request when it arrives (the user's message, a
//   client tool's output, an approval the page sent), and the answer's messages when it ends
//   (`onFinish`, ai 7's `onEnd`, with `originalMessages`). A save from an older request than the
//   one saved last is dropped (the first turn's end can be saved after its continuation arrived).
//   `GET /chats/<chat>/messages` answers them; a reloaded page starts from them.
// - `GET /<mode>/<flow>/<chat>/stream`, the chat's resume route: 204 without twoplane (the plain
//   app has nothing to resume); with it, a proxy to the chat's twoplane stream (`?from=` passed on).
// - `continuation(chatId)` resolves once the chat's continuation reached the app.
// - `events` emits `request` `{ chatId, mode, flow, continuing }` once a request's body is read, and
//   `executions` counts `deploy`'s runs per chat. `hold(chatId)` makes the chat's next
//   continuation wait, once its body is read, until the function it returns is called: the
//   continuation then reaches the app, and its stream goes on, only when the test says.
import http from 'node:http';
import { EventEmitter } from 'node:events';
import { z } from 'zod';
import { pacedModel } from './turn.mjs';
import { respond } from './respond.mjs';
import { signStreamToken } from '../../../npm/twoplane/src/token.js';

export const FIRST_TEXT = 'Let me ask. ';
export const CONTINUATION_TEXT = 'You said so; done.';

/** The model's answer to a request: the first turn (a text, then the tool's call, its input
 *  streamed), or (its messages ending in the assistant message) the continuation. */
export function continuationSteps(M, flow, continuing) {
  const meta = (id) => [
    { type: 'stream-start', warnings: [] },
    { type: 'response-metadata', id, modelId: 'mock-model', timestamp: new Date(0) },
  ];
  const text = (id, words) => [
    { type: 'text-start', id },
    ...words.map((delta) => ({ type: 'text-delta', id, delta })),
    { type: 'text-end', id },
  ];
  const tool = flow === 'client' ? 'confirm' : 'deploy';
  const input = JSON.stringify(flow === 'client' ? { question: 'Go on?' } : { target: 'prod' });
  if (!continuing) {
    // The tool's input streams in four pieces, so that a page can go away while it does.
    const pieces = [0, 1, 2, 3].map((i) => input.slice((i * input.length) >> 2, ((i + 1) * input.length) >> 2));
    return [
      [
        ...meta('r1'),
        ...text('t1', ['Let ', 'me ', 'ask. ']),
        { type: 'tool-input-start', id: 'call-1', toolName: tool },
        ...pieces.map((delta) => ({ type: 'tool-input-delta', id: 'call-1', delta })),
        { type: 'tool-input-end', id: 'call-1' },
        { type: 'tool-call', toolCallId: 'call-1', toolName: tool, input },
        M.finishPart('tool-calls'),
      ],
    ];
  }
  return [[...meta('r2'), ...text('t2', ['You ', 'said ', 'so; ', 'done.']), M.finishPart('stop')]];
}

/** The tools: `confirm` without `execute`, and (ai 6 and 7) `deploy`, which needs an approval;
 *  `ran()` is called each time `deploy` runs. */
export function continuationTools(M, ran = () => {}) {
  return {
    confirm: M.ai.tool({ description: 'ask the user', inputSchema: z.object({ question: z.string() }) }),
    ...(M.base !== '5'
      ? {
          deploy: M.ai.tool({
            description: 'deploy',
            inputSchema: z.object({ target: z.string() }),
            needsApproval: true,
            execute: async ({ target }) => {
              ran();
              return { deployed: target };
            },
          }),
        }
      : {}),
  };
}

/**
 * Start the app. `producer()` is the twoplane producer (`createTwoplaneProducer`), `tp` the
 * started twoplane (for the resume route's token), `delayMs` the model's pace, `extra(req, res,
 * url)` more routes (true when it answered).
 */
export async function startContinuationApp(M, { producer, tp, delayMs, extra }) {
  const chats = new Map(); // chatId -> { requests, saved: { n, messages }, streamId }
  const executions = new Map(); // chatId -> deploy's runs
  const events = new EventEmitter();
  const holds = new Map(); // chatId -> the promise its next continuation waits for
  const chatOf = (chatId) => {
    let c = chats.get(chatId);
    if (!c) {
      c = { requests: 0, saved: null, streamId: undefined };
      chats.set(chatId, c);
    }
    return c;
  };
  const save = (c, n, messages) => {
    if (c.saved === null || n >= c.saved.n) c.saved = { n, messages: JSON.parse(JSON.stringify(messages)) };
  };
  const readBody = async (req) => {
    let raw = '';
    for await (const c of req) raw += c;
    return raw;
  };
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://app');
    const parts = url.pathname.split('/').map((s) => decodeURIComponent(s));
    try {
      if (extra && (await extra(req, res, url))) return;
      if (req.method === 'GET' && parts[1] === 'chats' && parts[3] === 'messages' && parts.length === 4) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(chats.get(parts[2])?.saved?.messages ?? []));
        return;
      }
      const [, mode, flow, chatId, tail] = parts;
      if (!['plain', 'twoplane'].includes(mode) || !['client', 'approval'].includes(flow)) {
        res.writeHead(404).end();
        return;
      }
      if (req.method === 'GET' && tail === 'stream' && parts.length === 5) {
        // The chat's resume route: nothing to resume without twoplane; with it, the chat's stream.
        const streamId = chats.get(chatId)?.streamId;
        if (mode === 'plain' || streamId === undefined) {
          res.writeHead(204).end();
          return;
        }
        const token = signStreamToken({ secret: tp.readSecret, streamId, ttlSeconds: 60 });
        const ac = new AbortController();
        res.on('close', () => ac.abort());
        const upstream = await fetch(`${tp.url}/v1/streams/${encodeURIComponent(streamId)}/ui-message-stream${url.search}`, {
          headers: { authorization: `Bearer ${token}` },
          signal: ac.signal,
        });
        await respond(res, upstream);
        return;
      }
      if (req.method !== 'POST' || parts.length !== 3) {
        res.writeHead(404).end();
        return;
      }
      const { id: chatId2, messages } = JSON.parse(await readBody(req));
      const c = chatOf(chatId2);
      const n = ++c.requests;
      save(c, n, messages);
      const continuing = messages.at(-1)?.role === 'assistant';
      events.emit('request', { chatId: chatId2, mode, flow, continuing });
      if (continuing && holds.has(chatId2)) {
        const held = holds.get(chatId2);
        holds.delete(chatId2);
        await held;
      }
      const result = M.ai.streamText({
        model: pacedModel(M, continuationSteps(M, flow, continuing), delayMs),
        messages: await M.ai.convertToModelMessages(messages),
        tools: continuationTools(M, () => executions.set(chatId2, (executions.get(chatId2) ?? 0) + 1)),
        stopWhen: M.ai.stepCountIs(2),
      });
      // One assistant message per conversation: its id (and twoplane stream) is named after the chat.
      const id = `m${M.major}-${chatId2}`;
      const options =
        mode === 'twoplane' ? await producer().responseOptions(id, { originalMessages: messages }) : { generateMessageId: () => id };
      if (mode === 'twoplane') c.streamId = options.headers['x-twoplane-stream'];
      const ended = ({ messages: all }) => save(c, n, all);
      await respond(res, result.toUIMessageStreamResponse({ ...options, originalMessages: messages, onFinish: ended, onEnd: ended }));
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e?.stack ?? e));
      else res.destroy();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    server,
    events,
    executions,
    hold: (chatId) => {
      let release;
      holds.set(chatId, new Promise((r) => (release = r)));
      return release;
    },
    /** Resolves once the chat's continuation (a request ending in the assistant message) has
     *  reached the app. */
    continuation: (chatId) =>
      new Promise((resolve) => {
        const on = (e) => {
          if (e.chatId === chatId && e.continuing) {
            events.off('request', on);
            resolve();
          }
        };
        events.on('request', on);
      }),
    requests: (chatId) => chats.get(chatId)?.requests ?? 0,
    saved: (chatId) => JSON.parse(JSON.stringify(chats.get(chatId)?.saved?.messages ?? [])),
    close: () => {
      server.closeAllConnections?.();
      server.close();
    },
  };
}

/** The final messages of a conversation in a form two conversations can be compared in: the
 *  user message's id is the page's own random one, an approval's id the SDK's, and the assistant
 *  message is named after its chat. Keys set to `undefined` are dropped (JSON). */
export function comparable(messages) {
  const out = JSON.parse(JSON.stringify(messages)).map((m) => ({ ...m, id: m.role }));
  for (const p of out.flatMap((m) => m.parts)) if (p.approval?.id) p.approval.id = 'approval';
  return out;
}
