// The StreamReader's EventSource transport: one connection, and never the EventSource's own
// reconnects.
//
// What it guarantees:
// - Every `message` event's data goes to `conn.onData`.
// - An EventSource would reconnect by itself, from the id of the last event it saw and without
//   backoff. On its first error this one is closed and `conn.onDropped()` is called instead, so
//   every reconnect starts from the reader's own resume point and backs off as the fetch
//   transport does.
// - A URL the EventSource refuses (a syntax error) will not change by asking again:
//   `conn.onRefused()`.

/**
 * Open one connection to `url`. `options` is `{ EventSource, withCredentials }`; `conn` is the
 * reader's side (see transport-fetch.js): `attach`, `isCurrent`, `onData`, `onDropped`,
 * `onRefused`.
 */
export function runEventSource(url, options, conn) {
  let es;
  try {
    es = new options.EventSource(url, options.withCredentials ? { withCredentials: true } : undefined);
  } catch {
    conn.onRefused();
    return;
  }
  // Closing it is what stops it: an EventSource reconnects on any close, even a clean one.
  conn.attach({ close: () => es.close() });
  es.onmessage = (ev) => conn.onData(ev.data);
  es.onerror = () => {
    if (!conn.isCurrent()) return;
    es.close();
    conn.onDropped();
  };
}
