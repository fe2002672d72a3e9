// The package's one backoff (npm/twoplane/src/backoff.js), which StreamReader and twoplane/ai-sdk's
// transport both wait with: the doubling, the cap, the server's `retry` as the base, `reset()`,
// and the two ways to wait: jittered (a reader) or the delay itself (the transport's documented
// steps, 250 ms doubling to 4 s). Independent of BACKEND (plain JavaScript).

import test from 'node:test';
import assert from 'node:assert/strict';
import { Backoff } from '../../npm/twoplane/src/backoff.js';

test('without jitter the waits are the delays: doubling from the base, capped, reset by a grown connection', () => {
  const b = new Backoff(250, 4000, { jitter: false });
  assert.deepEqual(Array.from({ length: 7 }, () => b.next()), [250, 500, 1000, 2000, 4000, 4000, 4000]);
  b.reset();
  assert.equal(b.next(null), 250);
  // The server's `retry` is the base when it sent one; `retry: 0` still backs off from 1 ms.
  const r = new Backoff(250, 4000, { jitter: false });
  assert.deepEqual([r.next(100), r.next(100), r.next(100)], [100, 200, 400]);
  const z = new Backoff(250, 4000, { jitter: false });
  assert.deepEqual([z.next(0), z.next(0)], [1, 2]);
});

test('with jitter (the default) each wait is between half and all of its delay, and they differ', () => {
  const waits = [];
  for (let run = 0; run < 200; run++) {
    const b = new Backoff(250, 4000);
    for (const delay of [250, 500, 1000, 2000, 4000, 4000]) {
      const w = b.next();
      assert.ok(w >= delay / 2 && w <= delay, `${w} within [${delay / 2}, ${delay}]`);
      if (delay === 250) waits.push(w);
    }
  }
  assert.ok(new Set(waits).size > 100, 'readers dropped together do not all wait the same');
});
