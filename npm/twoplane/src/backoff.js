// How long a reader waits before it reconnects after a dropped connection: the package's one
// backoff, for StreamReader (reader.js) and for twoplane/ai-sdk's transport (ai-sdk/follow.js).
//
// What it guarantees:
// - The delay doubles with each connection in a row that did not grow the text, from the
//   server's `retry` when it sent one (else the configured initial delay), capped at the maximum;
//   `reset()` (a connection that grew the text) starts again from the base.
// - The base is at least 1 ms, so a server's `retry: 0` still backs off when it keeps failing.
// - Each wait is between half and all of the delay, so readers dropped together by one server
//   restart do not all come back in the same millisecond; with `{ jitter: false }` it is the
//   delay itself (the AI SDK transport's documented steps, 250 ms doubling to 4 s).

export class Backoff {
  #initialMs;
  #maxMs;
  #jitter;
  #failures = 0;

  constructor(initialMs, maxMs, { jitter = true } = {}) {
    this.#initialMs = initialMs;
    this.#maxMs = maxMs;
    this.#jitter = jitter;
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
    return this.#jitter ? delay / 2 + (Math.random() * delay) / 2 : delay;
  }
}
