// A small HTTP/1.1 client for the per-delta producers of bench/conversations: keep-alive
// connections to one server, each carrying one request at a time (no pipelining), requests
// queued for the next free connection. Each request goes out as one socket write of its head and
// body. Node's `http` client spends several times the CPU per request, and on a 2-core machine the
// producers, not the server, then set the pace; this keeps more of the machine for the server.
// Answers with `content-length`, chunked answers and body-less statuses are read; anything else
// (or a connection that breaks) answers status 0 and the connection is dropped.
import net from 'node:net';

const CRLF2 = Buffer.from('\r\n\r\n');

class Conn {
  constructor(pool) {
    this.pool = pool;
    this.job = null;
    this.buf = Buffer.alloc(0);
    this.dead = false;
    this.socket = net.connect({ host: '127.0.0.1', port: pool.port });
    this.socket.setNoDelay(true);
    this.socket.on('data', (d) => this.onData(d));
    const gone = (e) => this.die(e?.message ?? 'connection closed');
    this.socket.on('error', gone);
    this.socket.on('close', () => gone());
  }

  send(job) {
    this.job = job;
    this.buf = Buffer.alloc(0);
    const { spec } = job;
    const body = spec.body ?? '';
    let head = `${spec.method} ${spec.path} HTTP/1.1\r\nhost: 127.0.0.1:${this.pool.port}\r\n`;
    for (const [k, v] of Object.entries(spec.headers ?? {})) head += `${k}: ${v}\r\n`;
    head += `content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
    this.socket.write(head + body);
    job.onSent?.();
  }

  onData(d) {
    if (!this.job) return this.die('data without a request');
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    const end = this.buf.indexOf(CRLF2);
    if (end < 0) return;
    const head = this.buf.subarray(0, end).toString('latin1');
    const status = Number(head.slice(9, 12));
    const lower = head.toLowerCase();
    const rest = this.buf.subarray(end + 4);
    let body = null;
    if (status === 204 || status === 304 || (status >= 100 && status < 200)) body = '';
    else if (/\r\ntransfer-encoding:\s*chunked/.test(lower)) body = dechunk(rest);
    else {
      const m = /\r\ncontent-length:\s*(\d+)/.exec(lower);
      if (!m) return this.die(`an answer without a length: ${head.slice(0, 80)}`);
      if (rest.length >= Number(m[1])) body = rest.subarray(0, Number(m[1])).toString('utf8');
    }
    if (body === null) return;
    const job = this.job;
    this.job = null;
    if (/\r\nconnection:\s*close/.test(lower)) {
      this.dead = true;
      this.socket.destroy();
      this.pool.lost(this);
    }
    job.resolve({ status, body });
    if (!this.dead) this.pool.free(this);
  }

  die(why) {
    if (this.dead) return;
    this.dead = true;
    this.socket.destroy();
    this.pool.lost(this);
    const job = this.job;
    this.job = null;
    job?.resolve({ status: 0, body: why });
  }
}

/** The body of a complete chunked answer, or null while it is incomplete. */
function dechunk(buf) {
  let at = 0;
  let out = '';
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size)) return null;
    if (size === 0) return buf.indexOf(CRLF2, eol - 2) >= 0 ? out : null;
    if (buf.length < eol + 2 + size + 2) return null;
    out += buf.subarray(eol + 2, eol + 2 + size).toString('utf8');
    at = eol + 2 + size + 2;
  }
}

export class RawPool {
  constructor(port, max) {
    this.port = port;
    this.max = max;
    this.count = 0;
    this.idle = [];
    this.queue = [];
  }

  /** Sends `spec` ({ method, path, headers, body }); `onSent` is called as it is written. */
  request(spec, onSent) {
    return new Promise((resolve) => {
      const job = { spec, onSent, resolve };
      const conn = this.idle.pop();
      if (conn) conn.send(job);
      else if (this.count < this.max) {
        this.count += 1;
        new Conn(this).send(job);
      } else this.queue.push(job);
    });
  }

  free(conn) {
    const job = this.queue.shift();
    if (job) conn.send(job);
    else this.idle.push(conn);
  }

  lost(conn) {
    this.count -= 1;
    const i = this.idle.indexOf(conn);
    if (i >= 0) this.idle.splice(i, 1);
    const job = this.queue.shift();
    if (job) {
      this.count += 1;
      new Conn(this).send(job);
    }
  }

  close() {
    for (const c of this.idle) c.socket.destroy();
    this.idle = [];
  }
}
