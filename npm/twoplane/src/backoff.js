// How long a StreamReader waits before it reconnects after a dropped connection.
//
// What it guarantees:
// - The delay doubles with each connection in a row that did not grow the text, from the
//   server's `retry` when it sent one (else the configured initial delay), capped at the maximum;
//   `reset()` (a connection that grew the text) starts again from the base.
// - The base is at least 1 ms, so a server's `retry: 0` still backs off when it keeps failing.
// - Each wait is between half and all of the delay, so readers dropped together by one server
//   restart do not all come back in the same millisecond.

export class Backoff {
  #initialMs;
  #maxMs;
  #failures = 0;

  constructor(initialMs, maxMs) {
    this.#initialMs = initialMs;
    this.#maxMs = maxMs;
  }

  /** The connection that just ended grew the text: the next wait starts from the base again. */
  reset() {
    this.#failures = 0;
  }

  /** The wait before the next connection, in ms; `retryMs` is the server's `retry` or null. */
  next(retryMs) {
    const base = Math.max(1, retryMs ?? this.#initialMs);
    const delay = Math.min(this.#maxMs, base * 2 ** this.#failures);
    this.#failures++;
    return delay / 2 + (Math.random() * delay) / 2;
  }
}
