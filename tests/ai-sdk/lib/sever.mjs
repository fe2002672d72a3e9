// A `fetch` for tests that breaks the connections of `GET .../ui-message-stream` the way a network
// does: after a chosen number of events the body fails with a network TypeError. A cut falls only
// between two events that bring the reader to different offsets (never inside a batch of chunks
// that share one `id:`), so the reader holds whole offsets. Everything else passes through.

const encoder = new TextEncoder();

/**
 * `plan` is a list of event counts, one per `GET .../ui-message-stream` connection in order
 * (`null` or a missing entry: that connection is not cut). `log` records each connection's URL
 * and whether it was cut.
 */
export function severingFetch(plan, log = []) {
  let connection = 0;
  return async (input, init) => {
    const url = String(input);
    const res = await fetch(input, init);
    if (!(init?.method ?? 'GET').toUpperCase().startsWith('GET') || !url.includes('/ui-message-stream') || !res.ok || res.status === 204) {
      return res;
    }
    const limit = plan[connection++] ?? null;
    const entry = { url, cut: false };
    log.push(entry);
    if (limit === null) return res;
    return new Response(cutBody(res.body, limit, entry), { status: res.status, headers: res.headers });
  };
}

function idOf(block) {
  const m = /^id: (\d+)$/m.exec(block);
  return m ? Number(m[1]) : undefined;
}

function cutBody(body, limit, entry) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let held = null; // the last complete event, not yet passed on (one event of look-ahead)
  let count = 0;
  let broken = false;
  return new ReadableStream({
    async pull(controller) {
      // The cut takes effect once the reader has read the last event it gets (an error would
      // drop what it has not read yet).
      if (broken) {
        reader.cancel().catch(() => {});
        controller.error(new TypeError('network error: the test cut the connection'));
        return;
      }
      for (;;) {
        const at = buf.indexOf('\n\n');
        if (at >= 0) {
          const block = buf.slice(0, at + 2);
          buf = buf.slice(at + 2);
          if (!/^data:/m.test(block)) continue; // a comment
          const previous = held;
          held = block;
          if (previous === null) continue; // a pull must enqueue: read on
          controller.enqueue(encoder.encode(previous));
          count += 1;
          if (count >= limit && idOf(previous) !== idOf(block) && idOf(previous) !== undefined) {
            entry.cut = true;
            broken = true;
            held = null;
          }
          return;
        }
        const { value, done } = await reader.read();
        if (done) {
          if (held !== null) controller.enqueue(encoder.encode(held));
          held = null;
          controller.close();
          return;
        }
        buf += value;
      }
    },
    cancel: (r) => reader.cancel(r),
  }, { highWaterMark: 0 });
}
