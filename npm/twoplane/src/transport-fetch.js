// The StreamReader's fetch transport: one connection, its SSE body decoded as it arrives.
//
// What it guarantees:
// - It asks for `text/event-stream` (unless the app set `accept`), with `Last-Event-ID` naming the
//   resume point on a reconnect, and never from a cache.
// - Every `message` event's data goes to `conn.onData` while the connection is current, and the
//   server's `retry` to `conn.onRetry`; an incomplete event at the end is discarded.
// - It ends in exactly one of: `conn.onRefused()` (204, or a 4xx other than 408 and 429: asking
//   again will not change the answer), `conn.onDropped()` (a network error, another status, a
//   body that failed or ended without a terminal frame), or nothing at all once the reader has
//   moved on (`conn.isCurrent()` false: a terminal frame, a close), when the body is cancelled.

import { SseDecoder } from './sse.js';

/** A 4xx other than timeout / rate limit, or 204, will not change by asking again. */
function isRefusal(status) {
  return status === 204 || (status >= 400 && status < 500 && status !== 408 && status !== 429);
}

/**
 * Open one connection to `url`. `options` is `{ fetch, headers, withCredentials, lastEventId }`
 * (`lastEventId` null on a first connection); `conn` is the reader's side: `attach(handle)`
 * (called at once with what closes the connection), `isCurrent()`, `onData(data)`,
 * `onRetry(ms)`, `onDropped()`, `onRefused()`.
 */
export async function runFetch(url, options, conn) {
  const controller = new AbortController();
  conn.attach({ close: () => controller.abort() });
  const headers = new Headers(options.headers);
  if (!headers.has('accept')) headers.set('accept', 'text/event-stream');
  if (options.lastEventId !== null) headers.set('last-event-id', String(options.lastEventId));
  const decoder = new SseDecoder((data, type) => {
    if (type === 'message') conn.onData(data);
  });
  // Called as a plain function: a browser's fetch throws "Illegal invocation" when its `this` is
  // not the global object (as it would be as a method of `options`).
  const fetchFn = options.fetch;
  let response;
  try {
    response = await fetchFn(url, {
      headers,
      signal: controller.signal,
      cache: 'no-store',
      credentials: options.withCredentials ? 'include' : 'same-origin',
    });
  } catch {
    conn.onDropped();
    return;
  }
  if (!conn.isCurrent()) {
    response.body?.cancel().catch(() => {});
    return;
  }
  if (!response.ok || response.status === 204) {
    response.body?.cancel().catch(() => {});
    if (isRefusal(response.status)) conn.onRefused();
    else conn.onDropped();
    return;
  }
  try {
    const body = response.body;
    if (body && typeof body.getReader === 'function') {
      const chunks = body.getReader();
      for (;;) {
        const { value, done } = await chunks.read();
        if (done) break;
        if (!conn.isCurrent()) {
          chunks.cancel().catch(() => {});
          return;
        }
        decoder.push(value);
        if (decoder.retry !== null) conn.onRetry(decoder.retry);
        if (!conn.isCurrent()) {
          // A terminal frame in this read stopped the reader.
          chunks.cancel().catch(() => {});
          return;
        }
      }
    } else {
      // A fetch without streaming bodies: the whole response at once (still correct, just not
      // live).
      decoder.push(await response.text());
    }
  } catch {
    decoder.end();
    conn.onDropped();
    return;
  }
  // The server closed the stream without a terminal frame: whatever was incomplete is discarded,
  // and the reader comes back from its own resume point.
  decoder.end();
  conn.onDropped();
}
