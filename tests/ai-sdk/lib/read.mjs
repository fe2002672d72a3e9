// Reading a recorded UI message stream back with the SDK's own code only: the SSE body goes
// through the parsing `DefaultChatTransport` applies to a response (its `processResponseStream`,
// which is `parseJsonEventStream` with `uiMessageChunkSchema`), reached the way `useChat` reaches
// it, by `sendMessages` over a `fetch` that answers with the recorded body. The chunks then go
// through `readUIMessageStream`.

const FIXTURE_API = 'http://fixture.invalid/api/chat';

/** A `fetch` that answers every request with the recorded body and headers. */
export function fixtureFetch(sse, headers = { 'content-type': 'text/event-stream' }, calls = []) {
  return async (url, init = {}) => {
    calls.push({ url: String(url), method: init.method ?? 'GET' });
    return new Response(sse, { status: 200, headers });
  };
}

/** The `UIMessageChunk` stream `DefaultChatTransport` makes of a recorded SSE body. */
export async function chunkStreamFromSse(M, sse, headers) {
  const transport = new M.ai.DefaultChatTransport({ api: FIXTURE_API, fetch: fixtureFetch(sse, headers) });
  return transport.sendMessages({
    chatId: 'fixture-chat',
    messages: [],
    abortSignal: undefined,
    trigger: 'submit-message',
    messageId: undefined,
  });
}

/** Every chunk of a recorded SSE body, parsed and validated as the transport does. */
export async function chunksFromSse(M, sse, headers) {
  const stream = await chunkStreamFromSse(M, sse, headers);
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** A ReadableStream over an array of chunks. */
export function streamOf(chunks) {
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]);
      else controller.close();
    },
  });
}

/**
 * The last message `readUIMessageStream` yields for `chunks` (undefined when it yields none),
 * and the errors it reported (an `error` chunk is reported through `onError`).
 */
export async function lastMessage(M, chunks, { message } = {}) {
  const errors = [];
  let last;
  for await (const m of M.ai.readUIMessageStream({
    stream: streamOf(chunks),
    ...(message ? { message } : {}),
    onError: (e) => errors.push(e?.message ?? String(e)),
  })) {
    last = m;
  }
  return { message: last, errors };
}

/** What a store keeps of a message: its JSON (keys whose value is undefined are dropped). */
export function asJson(value) {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
