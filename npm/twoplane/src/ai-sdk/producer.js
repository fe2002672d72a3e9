// The producing half of twoplane/ai-sdk: a UI message stream (chunk objects, or the SSE text
// `consumeSseStream` receives, or bytes) sent to `POST /v1/streams/{id}/ui-message-stream` of
// `twoplane serve` as one streaming request, and the route helper around it.
//
// What it guarantees:
// - `produceUIMessageStream` never rejects once its arguments are right: it resolves with how the
//   stream ended (`status`, and `readerCancelled` when a reader cancelled it: `409 cancelled`, or a
//   connection closed under the body of a stream the server then says is cancelled). Whenever the
//   request ends before the source did, the source is cancelled, so the model is no longer read.
// - `createTwoplaneProducer(...).responseOptions(streamId)` opens the stream first (an already open
//   one is fine) and gives the options of `toUIMessageStreamResponse`: the message id is the stream
//   id, the SSE copy goes to twoplane, and the page learns the stream and its read token from the
//   `x-twoplane-stream` and `x-twoplane-token` response headers. A read token is minted only with a
//   `signToken` (the Node entry, ai-sdk.node.js, passes node:crypto's).
// - A continuation (the SDK's client tools and tool approvals: `originalMessages` ending in an
//   assistant message, which the SDK goes on with under its own id) goes on with that message's
//   stream: the stream id is the message id, re-opened at its durable end (`{"offset": N}`), so
//   the same coordinate goes on and the page keeps one assistant message.

import { TwoplaneError } from '../errors.js';
import { bearer, segment, trimSlash } from './http.js';

function encodePiece(value, encoder) {
  if (typeof value === 'string') return encoder.encode(value);
  if (value instanceof Uint8Array) return value;
  if (value !== null && typeof value === 'object') return encoder.encode(`data: ${JSON.stringify(value)}\n\n`);
  throw new TwoplaneError('invalid_argument', 'a UI message stream yields chunk objects, SSE text or bytes');
}

async function answerOf(res) {
  const text = await res.text().catch(() => '');
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}

/** `{ cancelled, seq, durableSeq }` of a stream by `GET /v1/streams/{id}`, or null. */
async function streamState(doFetch, url, streamId, producerToken) {
  try {
    const res = await doFetch(`${trimSlash(url)}/v1/streams/${segment(streamId)}`, {
      headers: bearer(producerToken),
    });
    if (!res.ok) return null;
    const s = await res.json();
    const cancelled = s.live?.cancelled === true || s.stored?.status === 'cancelled';
    const seq = s.live?.seq ?? s.stored?.seq;
    return { cancelled, seq, durableSeq: s.live?.durableSeq ?? s.stored?.seq, refused: s.live?.refused ?? null };
  } catch {
    return null;
  }
}

/**
 * Produce one UI message stream into `twoplane serve` (one message: the stream `streamId`).
 * Never rejects: resolves with `{ status, readerCancelled, seq?, durableSeq?, chunks?, kind?,
 * message?, httpStatus? }`.
 */
export async function produceUIMessageStream({ url, streamId, stream, producerToken, fetch: fetchFn, signal, headers } = {}) {
  if (typeof streamId !== 'string' || streamId === '') throw new TwoplaneError('invalid_argument', 'streamId must be a non-empty string');
  if (!stream || typeof stream.getReader !== 'function') throw new TwoplaneError('invalid_argument', 'stream must be a ReadableStream');
  const doFetch = fetchFn ?? globalThis.fetch;
  const source = stream.getReader();
  const encoder = new TextEncoder();
  let sourceDone = false;
  const body = new ReadableStream(
    {
      async pull(controller) {
        const { value, done } = await source.read();
        if (done) {
          sourceDone = true;
          controller.close();
        } else {
          controller.enqueue(encodePiece(value, encoder));
        }
      },
      cancel(reason) {
        return source.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
  const stopSource = () => {
    if (!sourceDone) source.cancel(new Error('twoplane: the stream ended')).catch(() => {});
  };
  let res;
  try {
    res = await doFetch(`${trimSlash(url)}/v1/streams/${segment(streamId)}/ui-message-stream`, {
      method: 'POST',
      headers: {
        'content-type': 'text/event-stream',
        ...bearer(producerToken),
        ...headers,
      },
      body,
      duplex: 'half',
      signal,
    });
  } catch (e) {
    stopSource();
    // A server that answers (`409 cancelled`, `400 bad_chunk`) while the body is still being sent
    // closes the connection under it, and the answer can be lost with it (the request then fails
    // here, Node says EPIPE): ask the stream how it stands.
    const stream = await streamState(doFetch, url, streamId, producerToken);
    if (stream?.cancelled) return { status: 'cancelled', readerCancelled: true, seq: stream.seq, durableSeq: stream.durableSeq, kind: 'cancelled' };
    // The server refused the body (a chunk it cannot place, say) and its answer was lost with the
    // connection: the stream's status says why.
    if (stream?.refused) return { status: 'failed', readerCancelled: false, seq: stream.seq, durableSeq: stream.durableSeq, kind: stream.refused.kind, message: stream.refused.message };
    return { status: 'failed', readerCancelled: false, kind: 'network', message: String(e?.cause?.message ?? e?.message ?? e) };
  }
  const answer = await answerOf(res);
  if (res.ok) {
    return { status: answer.status, readerCancelled: false, seq: answer.seq, durableSeq: answer.durableSeq, chunks: answer.chunks };
  }
  stopSource();
  const base = { seq: answer.seq, durableSeq: answer.durableSeq, kind: answer.kind ?? 'http', message: answer.message, httpStatus: res.status };
  if (res.status === 409 && answer.kind === 'cancelled') return { status: 'cancelled', readerCancelled: true, ...base };
  return { status: 'failed', readerCancelled: false, ...base };
}

/**
 * What a route needs to produce into `twoplane serve`: `responseOptions(streamId)` for
 * `toUIMessageStreamResponse`, `produce`, `open`, `readToken`.
 */
export function createTwoplaneProducer({
  url,
  producerToken,
  readTokenSecret,
  readTokenTtlSeconds = 600,
  signToken,
  fetch: fetchFn,
} = {}) {
  if (typeof url !== 'string' || url === '') throw new TwoplaneError('invalid_argument', 'url must be the base URL of twoplane serve');
  const base = trimSlash(url);
  const doFetch = (...a) => (fetchFn ?? globalThis.fetch)(...a);
  const auth = bearer(producerToken);

  function readToken(streamId, { userId, ttlSeconds } = {}) {
    if (readTokenSecret === undefined || readTokenSecret === null) return undefined;
    if (typeof signToken !== 'function') {
      throw new TwoplaneError('invalid_state', 'minting read tokens needs the Node entry of twoplane/ai-sdk (node:crypto) or a signToken option');
    }
    return signToken({ secret: readTokenSecret, streamId, ttlSeconds: ttlSeconds ?? readTokenTtlSeconds, userId });
  }

  /** Open `streamId` (creating its row), or with `{ offset }` go on with it from its durable end. */
  async function open(streamId, { offset } = {}) {
    const res = await doFetch(`${base}/v1/streams/${segment(streamId)}/open`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify(offset === undefined ? { create: true } : { offset }),
    });
    if (res.ok) return;
    const answer = await answerOf(res);
    if (res.status === 409 && answer.kind === 'already_open') return;
    throw new TwoplaneError(answer.kind ?? 'http', `twoplane: open ${streamId}: ${res.status} ${answer.message ?? ''}`.trim());
  }

  /** Go on with the stream `streamId` from where its store stands (a continuation), once the
   *  turn this producer is still copying into it has ended (the page can read a turn's end, and
   *  send its continuation, before the copy's seal). */
  async function goOn(streamId) {
    await running.get(streamId);
    const state = await streamState(doFetch, base, streamId, producerToken);
    const offset = state?.durableSeq ?? 0;
    await open(streamId, state ? { offset } : {});
    return offset;
  }

  const controllers = new Map(); // streamId -> AbortController of `signal(streamId)`

  /** An AbortSignal aborted when a reader cancels the stream (give it to `streamText`). */
  function signal(streamId) {
    let c = controllers.get(streamId);
    if (!c) {
      c = new AbortController();
      controllers.set(streamId, c);
    }
    return c.signal;
  }

  const running = new Map(); // streamId -> the produce under way into it

  async function produce(streamId, stream, options = {}) {
    const run = produceUIMessageStream({ url: base, streamId, stream, producerToken, fetch: fetchFn, ...options });
    running.set(streamId, run);
    const outcome = await run;
    if (running.get(streamId) === run) running.delete(streamId);
    const c = controllers.get(streamId);
    controllers.delete(streamId);
    if (outcome.readerCancelled) c?.abort(new TwoplaneError('cancelled', `a reader cancelled stream ${streamId}`));
    return outcome;
  }

  async function responseOptions(streamId, { userId, ttlSeconds, headers, onEnd, originalMessages } = {}) {
    // A continuation goes on with the message it continues, under that message's id.
    const last = Array.isArray(originalMessages) ? originalMessages.at(-1) : undefined;
    let from = 0;
    if (last?.role === 'assistant' && typeof last.id === 'string' && last.id !== '') {
      streamId = last.id;
      from = await goOn(streamId);
    } else {
      await open(streamId);
    }
    const token = readToken(streamId, { userId, ttlSeconds });
    let settle;
    const done = new Promise((r) => (settle = r));
    return {
      generateMessageId: () => streamId,
      consumeSseStream: ({ stream }) => {
        produce(streamId, stream).then((outcome) => {
          settle(outcome);
          onEnd?.(outcome);
        });
      },
      headers: {
        ...headers,
        'x-twoplane-stream': streamId,
        // Where this turn starts in the stream: the page holds the message up to it.
        ...(from > 0 ? { 'x-twoplane-from': String(from) } : {}),
        ...(token ? { 'x-twoplane-token': token } : {}),
      },
      done,
    };
  }

  return { url: base, open, produce, readToken, responseOptions, signal };
}
