// A producer in a process of its own (so a test can kill it mid-answer): the paced turn of
// turn.mjs produced into twoplane with `twoplane/ai-sdk`, printing every chunk (one JSON per line)
// as it hands it to the request body. Env: TWOPLANE_AI (with ./ai-alias.mjs), TP_URL, TP_PRODUCER,
// TP_STREAM, TP_DELAY.
import { loadMajor } from './majors.mjs';
import { pacedTurn } from './turn.mjs';

const { produceUIMessageStream } = await import('../../../npm/twoplane/src/ai-sdk.node.js');
const M = await loadMajor(process.env.TWOPLANE_AI);
const streamId = process.env.TP_STREAM;
const source = pacedTurn(M, { streamId, delayMs: Number(process.env.TP_DELAY ?? 10) }).getReader();
const printed = new ReadableStream({
  async pull(c) {
    const { value, done } = await source.read();
    if (done) return c.close();
    process.stdout.write(`${JSON.stringify(value)}\n`);
    c.enqueue(value);
  },
});
const out = await produceUIMessageStream({ url: process.env.TP_URL, producerToken: process.env.TP_PRODUCER, streamId, stream: printed });
process.stderr.write(`${JSON.stringify(out)}\n`);
