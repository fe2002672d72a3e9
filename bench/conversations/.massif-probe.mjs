// Memory of many quiet conversations in one `twoplane serve`: S streams opened with one append
// each, then one SSE reader per stream, connected and left idle. Prints the server's RSS per open
// stream and per idle reader (the differences of /proc's VmRSS before and after each step,
// divided by S). Each reader is checked to have been answered 200 with its stream's open frame.
//
//   TWOPLANE_BIN=target/release/twoplane node bench/conversations/idle-readers.mjs
//   (S=1000 streams by default; R=1 reader per stream, each of the S x R readers on its own
//   connection; ROUNDS=3 servers one after the other; EXTRA="..." adds flags)
//
// A quicker, narrower probe than run.mjs (no peers, no traffic), for a change to what a reader
// or a stream holds; run.mjs measures the same two figures in its own run beside the peers.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { join } from 'node:path';

const BIN = process.env.TWOPLANE_BIN;
if (!BIN) {
  console.error('idle-readers: set TWOPLANE_BIN to a twoplane binary');
  process.exit(2);
}
const S = Number(process.env.S ?? 1000);
const R = Number(process.env.R ?? 1);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function round(port) {
  const dir = mkdtempSync(join(os.tmpdir(), 'twoplane-idle-readers-'));
  const args = ['serve', '--listen', `127.0.0.1:${port}`, '--db', join(dir, 'x.db')];
  const readers = S * R;
  args.push('--max-connections-per-ip', String(readers + 100), '--max-subscribers-per-ip', String(readers + 100));
  args.push('--max-subscribers-per-stream', String(R + 10));
  if (process.env.EXTRA) args.push(...process.env.EXTRA.split(' '));
  // Warnings and errors only: the info lines (one per opened stream) are not what this measures.
  const child = spawn(BIN, args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, RUST_LOG: 'warn' } });
  const rss = () => Number(readFileSync(`/proc/${child.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
  const request = (method, path, body, headers = {}) =>
    new Promise((resolve, reject) => {
      const r = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, text }));
      });
      r.on('error', reject);
      r.end(body);
    });
  const sockets = [];
  try {
    for (let i = 0; ; i++) {
      try {
        await request('GET', '/healthz');
        break;
      } catch (e) {
        if (i > 100) throw e;
        await sleep(100);
      }
    }
    await sleep(1000);
    const rss0 = rss();
    const ids = Array.from({ length: S }, (_, i) => `idle-${i}`);
    for (let i = 0; i < S; i += 20) {
      await Promise.all(
        ids.slice(i, i + 20).map(async (id) => {
          const open = await request('POST', `/v1/streams/${id}/open`, '{"create":true}', { 'content-type': 'application/json' });
          const append = await request('POST', `/v1/streams/${id}/append?offset=0`, 'abcd', { 'content-type': 'text/plain; charset=utf-8' });
          if (open.status !== 200 || append.status !== 200) throw new Error(`${id}: open ${open.status}, append ${append.status} ${append.text}`);
        }),
      );
    }
    await sleep(1500);
    const rss1 = rss();
    let answered = 0;
    const wrong = [];
    for (const id of ids.flatMap((id) => Array(R).fill(id))) {
      const socket = net.connect(port, '127.0.0.1');
      let seen = '';
      socket.on('data', (d) => {
        if (seen === null) return;
        seen += d;
        if (!seen.includes('"type":"open"')) return;
        if (!seen.startsWith('HTTP/1.1 200') || !seen.includes(`"streamId":"${id}"`)) wrong.push(`${id}: ${seen.slice(0, 120)}`);
        answered += 1;
        seen = null;
      });
      socket.on('error', (e) => wrong.push(`${id}: ${e.message}`));
      socket.write(`GET /api/stream?streamId=${id}&from=4 HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\naccept: text/event-stream\r\n\r\n`);
      sockets.push(socket);
      if (sockets.length % 50 === 0) await sleep(5);
    }
    for (let t = 0; answered + wrong.length < readers; t++) {
      if (t > 600) throw new Error(`only ${answered} of ${readers} readers were answered`);
      await sleep(50);
    }
    if (wrong.length) throw new Error(`${wrong.length} readers were not served: ${wrong.slice(0, 3).join('; ')}`);
    console.log("READY", child.pid); await sleep(90000);
    const rss2 = rss();
    return { perStream: (rss1 - rss0) / S, perReader: (rss2 - rss1) / readers };
  } finally {
    for (const s of sockets) s.destroy();
    agent.destroy();
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

for (let r = 0; r < ROUNDS; r++) {
  const { perStream, perReader } = await round(18600 + r);
  console.log(`${S} streams, ${R} reader(s) each: RSS per open stream ${perStream.toFixed(2)} KiB, per idle reader ${perReader.toFixed(2)} KiB`);
}
