// A stream sealed `error` ends, for every reader, with the SDK's `error` chunk: a page can tell it
// failed. For one major of `ai` (TWOPLANE_AI=5|6|7, run with `node --import ./lib/ai-alias.mjs`).
//
// The stream: a first turn that completes, then a continuation (the stream re-opened at its end,
// as `responseOptions` does for one) whose `start` names another message, which the server
// refuses (`bad_chunk`) and seals the stream `error`. Its readers: one that was following the
// stream live when the refusal came, one that resumes after it (`?from=0` and `?from=<the first
// turn's end>`, with and without `&tail=1`), and the same once twoplane restarted (the stream read
// from the store). Each must end with an `error` chunk before `[DONE]`; and the SDK's own `Chat`,
// resuming the stream through `TwoplaneChatTransport`, must end in its `error` status with the
// message of the first turn.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadMajor } from './lib/majors.mjs';
import { chatClass } from './lib/chat.mjs';
import { startTwoplane, readUi } from './lib/twoplane.mjs';
import { signStreamToken } from '../../npm/twoplane/src/token.js';

const M = await loadMajor(process.env.TWOPLANE_AI);
const Chat = await chatClass(M);
const { createTwoplaneProducer, TwoplaneChatTransport } = await import('../../npm/twoplane/src/ai-sdk.node.js');

let tp;
before(async () => {
  tp = await startTwoplane();
});
after(async () => {
  await tp?.stop();
});

const chunks = (list) =>
  new ReadableStream({
    start(c) {
      for (const x of list) c.enqueue(x);
      c.close();
    },
  });

const FIRST = (id) => [
  { type: 'start', messageId: id },
  { type: 'start-step' },
  { type: 'text-start', id: 't1' },
  { type: 'text-delta', id: 't1', delta: 'The first turn.' },
  { type: 'text-end', id: 't1' },
  { type: 'finish-step' },
  { type: 'finish' },
];

/** How a reader's events end: the chunk types after the last group of the first turn. */
const ending = (events) => events.filter((e) => !e.done).map((e) => e.chunk.type).slice(-1)[0];

/** The SDK's `Chat` resuming the stream from nothing: its status and last message. */
async function chatResumes(streamId) {
  const token = signStreamToken({ secret: tp.readSecret, streamId, ttlSeconds: 60 });
  const transport = new TwoplaneChatTransport({
    endpoint: tp.url,
    stream: () => ({ url: `${tp.url}/v1/streams/${encodeURIComponent(streamId)}/ui-message-stream`, token, streamId }),
  });
  const chat = new Chat({ id: `chat-${streamId}`, transport, onError: () => {} });
  await chat.resumeStream();
  return { status: chat.status, error: chat.error, message: JSON.parse(JSON.stringify(chat.messages.at(-1) ?? null)) };
}

test(`a stream sealed error (a continuation whose start names another message) ends with the SDK's error chunk, live, resumed and from the store (${M.version})`, async () => {
  const producer = createTwoplaneProducer({ url: tp.url, producerToken: tp.producerToken, readTokenSecret: tp.readSecret });
  const id = `err-${M.major}`;
  await producer.open(id);
  const first = await producer.produce(id, chunks(FIRST(id)));
  assert.equal(first.status, 'complete', JSON.stringify(first));
  const end = first.seq;
  // The continuation: the stream re-opened at its end, a reader following it live from there.
  await producer.open(id, { offset: end });
  const token = signStreamToken({ secret: tp.readSecret, streamId: id, ttlSeconds: 60 });
  const live = readUi(tp, token, id, { from: end });
  const refused = await producer.produce(id, chunks([{ type: 'start', messageId: 'another-message' }, { type: 'start-step' }]));
  assert.equal(refused.kind, 'bad_chunk', `the server refuses the start of another message (${JSON.stringify(refused)})`);
  const readers = { live: await live };
  readers.resumed = await readUi(tp, token, id, { from: 0 });
  readers['resumed from the first turn'] = await readUi(tp, token, id, { from: end });
  readers['resumed from the first turn, tail only'] = await readUi(tp, token, id, { from: end, tail: true });
  const chatLive = await chatResumes(id);
  await tp.restart();
  readers['from the store'] = await readUi(tp, token, id, { from: 0 });
  readers['from the store, from the first turn'] = await readUi(tp, token, id, { from: end });
  readers['from the store, tail only'] = await readUi(tp, token, id, { from: end, tail: true });
  const chatStored = await chatResumes(id);
  for (const [name, r] of Object.entries(readers)) {
    assert.equal(r.events.at(-1)?.done, true, `${name}: the response ends with [DONE] (${JSON.stringify(r.events)})`);
    assert.equal(ending(r.events), 'error', `${name}: the last chunk is the SDK's error chunk (${JSON.stringify(r.events)})`);
  }
  for (const [name, c] of Object.entries({ 'a Chat on the hosted stream': chatLive, 'a Chat on the stored stream': chatStored })) {
    assert.equal(c.status, 'error', `${name}: the SDK's Chat ends in error (${JSON.stringify(c)})`);
    assert.equal(c.message?.id, id, `${name}: with the message of the first turn`);
    assert.deepEqual(
      c.message.parts.filter((p) => p.type === 'text').map((p) => p.text),
      ['The first turn.'],
      `${name}: the first turn's text`,
    );
  }
});
