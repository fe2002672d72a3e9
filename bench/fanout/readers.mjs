// One reader process of bench/fanout/run.mjs: `count` SSE connections to one stream, each
// counting the text it received; every `sampleEvery`th also notes when each delta reached it.
// Told over IPC: { url, count, total, deltaLen, sampleEvery, format }; answers `connected`
// (every connection has its response head), then `done` with what each connection got.
import http from 'node:http';

const now = () => performance.timeOrigin + performance.now();

process.on('message', (job) => {
  if (job === null || typeof job !== 'object') return;
  const { url, count, total, deltaLen, sampleEvery, format, first } = job;
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  let connected = 0;
  let finished = 0;
  const results = [];
  const conns = [];
  for (let k = 0; k < count; k++) {
    const sampled = (first + k) % sampleEvery === 0;
    const r = { got: 0, times: sampled ? [] : null, error: null };
    results.push(r);
    const req = http.get(url, { agent, headers: { accept: 'text/event-stream' } }, (res) => {
      connected += 1;
      if (connected === count) process.send({ type: 'connected' });
      res.setEncoding('utf8');
      let buf = '';
      let ended = false;
      const finish = () => {
        if (ended) return;
        ended = true;
        req.destroy();
        finished += 1;
        if (finished === count) process.send({ type: 'done', results });
      };
      res.on('data', (s) => {
        buf += s;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = 'message';
          let data = null;
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) {
              const v = line.slice(line[5] === ' ' ? 6 : 5);
              data = data === null ? v : `${data}\n${v}`;
            }
          }
          if (data === null) continue;
          let at = r.got;
          if (format === 'twoplane') {
            if (!data.includes('"chunk"')) continue;
            at = Math.max(at, JSON.parse(data).seq);
          } else if (event === 'data') {
            at += data.length;
          }
          if (r.times) {
            const t = now();
            for (let d = Math.floor(r.got / deltaLen); d < Math.floor(at / deltaLen); d++) r.times.push(t);
          }
          r.got = at;
          if (r.got >= total) return finish();
        }
      });
      res.on('end', finish);
      res.on('error', finish);
    });
    req.on('error', (e) => {
      r.error = e.message;
      connected += 1;
      finished += 1;
      if (connected === count) process.send({ type: 'connected' });
      if (finished === count) process.send({ type: 'done', results });
    });
    conns.push(req);
  }
  process.on('message', (m) => {
    if (m === 'stop') {
      for (const c of conns) c.destroy();
      process.exit(0);
    }
  });
});
