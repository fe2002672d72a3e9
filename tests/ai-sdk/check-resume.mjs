// What `useChat({ resume: true })` does on a reload, established with the SDK's own `Chat` (the
// class `useChat` wraps, from each major's `@ai-sdk/react`) and its own `DefaultChatTransport`,
// in Node. Each finding docs/ai-sdk-protocol.md states is asserted here, per major.
//
//   node check-resume.mjs
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { MAJORS, loadMajor } from './lib/majors.mjs';
import { lastMessage, asJson, streamOf } from './lib/read.mjs';
import { toEvents, fold, replay, liveChunks } from './lib/mapping.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
let passed = 0;
let failed = 0;
function check(ok, what) {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
}

const USER = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'How does resuming a stream work?' }] };

/** A Chat of the major's @ai-sdk/react, holding `messages`, with counters on its callbacks. */
async function chatWith(M, messages, transport, extra = {}) {
  const { Chat } = await import(M.reactAlias);
  const seen = { toolCalls: [], data: [], errors: [], finishes: [] };
  const chat = new Chat({
    id: 'chat-1',
    messages: structuredClone(messages),
    transport,
    onToolCall: ({ toolCall }) => {
      if (!extra.skip?.(toolCall)) seen.toolCalls.push(toolCall.toolCallId);
    },
    onData: (part) => {
      if (!extra.skip?.(part)) seen.data.push(part.type);
    },
    onError: (e) => seen.errors.push(e.message),
    onFinish: (f) => seen.finishes.push({ isAbort: f.isAbort, isError: f.isError, finishReason: f.finishReason }),
  });
  return { chat, seen };
}

/** A transport whose reconnect answers with `chunks` (or null), recording its calls. */
function chunkTransport(chunks, props = {}) {
  const calls = [];
  return {
    calls,
    ...props,
    async sendMessages() {
      throw new Error('not used');
    },
    async reconnectToStream(options) {
      calls.push(Object.keys(options).sort());
      return chunks == null ? null : streamOf(chunks);
    },
  };
}

for (const major of MAJORS) {
  const M = await loadMajor(major);
  console.log(`\n# ai ${M.version}, @ai-sdk/react ${M.reactVersion}`);
  const dir = join(HERE, 'fixtures', major);
  const sse = readFileSync(join(dir, 'chat-turn.sse'), 'utf8');
  const chunks = readFileSync(join(dir, 'chat-turn.chunks.json'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const whole = asJson((await lastMessage(M, chunks)).message);
  const cutMidText = chunks.findIndex((c) => c.type === 'text-delta') + 1; // after the first text delta
  const cutMidTool = chunks.findIndex((c) => c.type === 'tool-input-delta') + 10; // 10 pieces of 40 in
  const held = async (k) => asJson((await lastMessage(M, chunks.slice(0, k))).message); // what the app stored

  // 1. the default transport's resume request, and 204
  {
    const requests = [];
    const transport = new M.ai.DefaultChatTransport({
      api: '/api/chat',
      fetch: async (url, init) => {
        requests.push({ url: String(url), method: init.method, body: init.body });
        return new Response(null, { status: 204 });
      },
    });
    const start = [USER, await held(cutMidText)];
    const { chat, seen } = await chatWith(M, start, transport);
    await chat.resumeStream();
    check(requests.length === 1 && requests[0].method === 'GET' && requests[0].url === '/api/chat/chat-1/stream' && requests[0].body === undefined,
      `default transport resumes with GET {api}/{chatId}/stream and no body: ${JSON.stringify(requests)}`);
    check(chat.status === 'ready' && isDeepStrictEqual(asJson(chat.messages), asJson(start)) && seen.errors.length === 0,
      `204: reconnectToStream gives null, status ready, messages unchanged, no error`);
  }

  // 2. the default transport, a full replay, the page holding the partial message
  {
    const transport = new M.ai.DefaultChatTransport({
      api: '/api/chat',
      fetch: async () => new Response(sse, { status: 200, headers: M.ai.UI_MESSAGE_STREAM_HEADERS }),
    });
    const { chat, seen } = await chatWith(M, [USER, await held(cutMidText)], transport);
    await chat.resumeStream();
    check(chat.messages.length === 2 && isDeepStrictEqual(asJson(chat.messages[1]), whole),
      `full replay: the held assistant message (same id) is replaced by the one built from the replay alone (2 messages, equal to the whole)`);
    check(seen.toolCalls.length === 1 && seen.data.length === 3,
      `full replay: onToolCall fires again for the replayed tool call (${seen.toolCalls.length}) and onData for every replayed data chunk, transient included (${seen.data.join(' ')})`);
    check(seen.finishes.length === 1 && seen.finishes[0].finishReason === 'stop', `full replay: onFinish once, finishReason ${seen.finishes[0]?.finishReason}`);
  }

  // 3. a replay whose `start` names another message id: appended as a new message
  {
    const other = chunks.map((c) => (c.type === 'start' ? { ...c, messageId: 'msg-other' } : c));
    const { chat } = await chatWith(M, [USER, await held(cutMidText)], chunkTransport(other));
    await chat.resumeStream();
    check(chat.messages.length === 3 && chat.messages[2].id === 'msg-other',
      `a replay whose start names another id is pushed as a third message, the held one kept (${chat.messages.map((m) => m.id).join(', ')})`);
  }

  // 4. only the tail after the cut (what "resume from an offset" naively sends), mid text
  {
    const tail = chunks.slice(cutMidText);
    const { chat, seen } = await chatWith(M, [USER, await held(cutMidText)], chunkTransport(tail));
    await chat.resumeStream();
    check(chat.status === 'error' && seen.errors.length === 1,
      `tail only, cut mid text: the first text-delta names a text part the fresh state does not know: status error (${seen.errors[0]})`);
  }

  // 5. only the tail after the cut, mid tool input: the SDK seeds its state with the held message
  {
    const h = await held(cutMidTool);
    check(h.parts.some((p) => p.state === 'input-streaming' && typeof p.rawInput === 'string'), 'the held message has a tool part in input-streaming with its rawInput');
    const tail = chunks.slice(cutMidTool);
    const { chat, seen } = await chatWith(M, [USER, h], chunkTransport(tail, major === '5' ? {} : { resumeStreamIsReplay: false }));
    await chat.resumeStream();
    check(chat.status === 'ready' && isDeepStrictEqual(asJson(chat.messages[1]), whole) && seen.toolCalls.length === 1,
      `tail only, cut mid tool input${major === '5' ? '' : ' (resumeStreamIsReplay false)'}: the state is seeded from the held message, the tail continues it: equal to the whole, onToolCall once`);
  }
  if (major !== '5') {
    // the same with resumeStreamIsReplay true (DefaultChatTransport's default): the tail's
    // `start` resets the seeded state, so the held parts are lost
    const h = await held(cutMidTool);
    const tail = [chunks[0], ...chunks.slice(cutMidTool)];
    const { chat } = await chatWith(M, [USER, h], chunkTransport(tail, { resumeStreamIsReplay: true }));
    await chat.resumeStream();
    check(chat.status === 'error' || !isDeepStrictEqual(asJson(chat.messages[1]), whole),
      `resumeStreamIsReplay true: a start chunk resets the seeded state, a tail after it cannot continue the held parts (status ${chat.status})`);
  }

  // 6. the proposed transport: a compacted replay of what the page holds, made in the page,
  //    then the tail from the offset; replayed chunks are marked so the app's callbacks skip them
  {
    for (const [label, k] of [['mid text', cutMidText], ['mid tool input', cutMidTool], ['after the end', chunks.length]]) {
      const events = toEvents(chunks);
      const heldEvents = toEvents(chunks.slice(0, k)).length;
      const doc = fold(events.slice(0, heldEvents));
      const local = replay(doc);
      const network = liveChunks(structuredClone(doc), events.slice(heldEvents));
      const replayed = new WeakSet(local);
      // ai 5 has no resumeStreamIsReplay: when the held message has a tool part in
      // input-streaming, its state starts from the held message, and only the tail may be sent
      const h = await held(k);
      const seeded = major === '5' && h.parts.some((p) => p.state === 'input-streaming');
      const stream = seeded ? network : [...local, ...network];
      const { chat, seen } = await chatWith(M, [USER, h], chunkTransport(stream, major === '5' ? {} : { resumeStreamIsReplay: true }), {
        skip: (chunk) => replayed.has(chunk),
      });
      await chat.resumeStream();
      const fullToolCalls = k <= chunks.findIndex((c) => c.type === 'tool-input-available') ? 1 : 0;
      check(chat.status === 'ready' && isDeepStrictEqual(asJson(chat.messages[1]), whole) && chat.messages.length === 2,
        `${seeded ? 'tail only (ai 5 seeds its state from the held message)' : 'local replay + tail from the offset'}, ${label}: the message equals the whole (${network.length} chunks over the network)`);
      check(seen.toolCalls.length === fullToolCalls,
        `local replay + tail, ${label}: onToolCall sees the chunk object the transport made, so a filter skips replayed calls (${seen.toolCalls.length} fresh)`);
    }
  }
}
console.log(`\n${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
