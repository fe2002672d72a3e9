// `twoplane serve` for the tests of this folder (the built binary, on a fresh SQLite file, with a
// producer secret and a read-token secret), and a plain reader of its UI message stream that keeps
// each event's `id:` (the SDK's own parser drops it).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { startServer, stopServer } from '../../demo/serve.mjs';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = process.env.TWOPLANE_BIN ?? join(ROOT, 'target/debug/twoplane');

/** `{ url, producerToken, readSecret, restart(), stop() }` of a started `twoplane serve`, with
 *  `extra` flags after the test's own. */
export async function startTwoplane(extra = []) {
  const work = mkdtempSync(join(tmpdir(), 'twoplane-aisdk-'));
  const producerToken = randomBytes(24).toString('base64url');
  const readSecret = randomBytes(32).toString('base64url');
  writeFileSync(join(work, 'producer'), producerToken);
  writeFileSync(join(work, 'read'), readSecret);
  const args = () => ['--listen', '127.0.0.1:0', '--db', join(work, 't.db'), '--producer-token-file', join(work, 'producer'), '--read-token-secret-file', join(work, 'read'), ...extra];
  let server = await startServer(BIN, args());
  const tp = {
    url: `http://${server.addr}`,
    producerToken,
    readSecret,
    /** Stop and start again on the same store (a stream it hosted is then read from the store). */
    async restart() {
      await stopServer(server.child);
      server = await startServer(BIN, args());
      tp.url = `http://${server.addr}`;
    },
    async stop() {
      await stopServer(server.child);
      rmSync(work, { recursive: true, force: true });
    },
  };
  return tp;
}

/** The events of an SSE body as `{ id, data }`. */
export async function* sse(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let ev = { data: null, id: undefined };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line === '') {
          if (ev.data !== null) yield ev;
          ev = { data: null, id: undefined };
        } else if (line.startsWith('data: ')) ev.data = ev.data === null ? line.slice(6) : `${ev.data}\n${line.slice(6)}`;
        else if (line.startsWith('id: ')) ev.id = Number(line.slice(4));
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * Read `GET .../ui-message-stream?from=N` (with `tail`, `&tail=1`) with a read token: `events` ({ id, chunk }, `[DONE]` as
 * `{ done: true }`; `id` is the offset of the event's group, whose last event alone carries it on
 * the wire), stopping early when `cut(event, events)` says so at the end of a group (the
 * connection is then aborted). Every wait is bounded by `timeoutMs`.
 */
export async function readUi(tp, token, streamId, { from = 0, tail = false, cut, timeoutMs = 30_000 } = {}) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error(`no end in ${timeoutMs} ms`)), timeoutMs);
  const events = [];
  let cutAt = false;
  try {
    const res = await fetch(`${tp.url}/v1/streams/${encodeURIComponent(streamId)}/ui-message-stream?from=${from}${tail ? '&tail=1' : ''}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: ac.signal,
    });
    if (res.status === 204) return { status: 204, events, cut: false };
    if (!res.ok) throw new Error(`GET ui-message-stream: ${res.status} ${await res.text()}`);
    let group = [];
    for await (const ev of sse(res.body)) {
      const e = ev.data === '[DONE]' ? { id: ev.id, done: true } : { id: ev.id, chunk: JSON.parse(ev.data) };
      events.push(e);
      // Only the last event of a group carries its id: the others are given it once it comes,
      // and a reader can stand (be cut) only where a group ends.
      if (e.id === undefined && !e.done) {
        group.push(e);
        continue;
      }
      for (const g of group) g.id = e.id;
      group = [];
      if (cut?.(e, events)) {
        cutAt = true;
        ac.abort();
        break;
      }
    }
    return { status: res.status, events, cut: cutAt };
  } catch (e) {
    if (cutAt) return { status: 200, events, cut: true };
    throw e;
  } finally {
    clearTimeout(timer);
  }
}
