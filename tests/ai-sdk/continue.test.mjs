// A message that goes on (docs/ai-sdk.md, "Client tools and approvals"), judged by the SDK's own
// `Chat` for one major of `ai` (TWOPLANE_AI=5|6|7, run as twoplane.test.mjs is):
//
// - a client-side tool: the model calls `confirm`, which has no `execute`; the page's
//   `onToolCall` answers with `addToolOutput` (ai 5: `addToolResult`) and `sendAutomaticallyWhen:
//   lastAssistantMessageIsCompleteWithToolCalls` sends the continuation, whose `originalMessages`
//   end in the assistant message the SDK goes on with;
// - a tool approval (ai 6 and 7): the model calls `deploy`, which `needsApproval`; the page answers
//   with `addToolApprovalResponse` and `lastAssistantMessageIsCompleteWithApprovalResponses` sends
//   the continuation, in which the server runs the tool.
//
// Each conversation runs twice with the same mock model and inputs: through the SDK's own
// `DefaultChatTransport` and a route without twoplane, and through `TwoplaneChatTransport` and a
// route producing into `twoplane serve` with `responseOptions(id, { originalMessages })`. The
// pages' final `messages` must be deep-equal, with one assistant message, each tool call's
// `onToolCall` once; and the twoplane stream is that message's: one stream under the message id
// that went on from its first turn's end, whose replay (`readUIMessageStream` over the resume
// route) rebuilds the message the server produced, both turns in it. An approval is also given
// after a reload, twoplane restarted in between: the first turn then goes on from the store.
// Pages reloaded mid first turn, between the turns and mid continuation: continue-reload.test.mjs
// (Node) and browser-continue.test.mjs (useChat in Chromium).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { loadMajor } from './lib/majors.mjs';
import { lastMessage, asJson } from './lib/read.mjs';
import { pacedModel } from './lib/turn.mjs';
import { continuationSteps, continuationTools } from './lib/continuation.mjs';
import { startTwoplane, readUi } from './lib/twoplane.mjs';
import { respond } from './lib/respond.mjs';
import { signStreamToken } from '../../npm/twoplane/src/token.js';

const major = process.env.TWOPLANE_AI;
const M = await loadMajor(major);
const { Chat } = await import(M.reactAlias);
const { createTwoplaneProducer, TwoplaneChatTransport, memoryHeld } = await import('../../npm/twoplane/src/ai-sdk.node.js');
const approvals = major !== '5';

let tp;
let producer;
let app;

const stepsFor = (flow, continuing) => continuationSteps(M, flow, continuing);
const tools = () => continuationTools(M);

/** The app: `/plain/<flow>` without twoplane, `/twoplane/<flow>` producing into it. Message ids
 *  are the same sequence on both, so the two conversations can be compared. */
function startApp() {
  const counters = { plain: 0, twoplane: 0 };
  const server = http.createServer(async (req, res) => {
    const [, mode, flow] = req.url.split('/');
    let raw = '';
    for await (const c of req) raw += c;
    const { messages } = JSON.parse(raw);
    const continuing = messages.at(-1)?.role === 'assistant';
    const result = M.ai.streamText({
      model: pacedModel(M, stepsFor(flow, continuing), 1),
      messages: await M.ai.convertToModelMessages(messages),
      tools: tools(),
      stopWhen: M.ai.stepCountIs(2),
    });
    const id = `${flow}-m${major}-${++counters[mode]}`;
    const options =
      mode === 'twoplane' ? await producer.responseOptions(id, { originalMessages: messages }) : { generateMessageId: () => id };
    await respond(res, result.toUIMessageStreamResponse({ ...options, originalMessages: messages }));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, server })));
}

before(async () => {
  tp = await startTwoplane();
  producer = createTwoplaneProducer({ url: tp.url, producerToken: tp.producerToken, readTokenSecret: tp.readSecret });
  app = await startApp();
});
after(async () => {
  app?.server.close();
  await tp?.stop();
});

const within = (ms, p, what) =>
  Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);

/** Wait until the chat is ready again after its chain of automatic sends. */
async function settled(chat) {
  for (let i = 0; i < 400; i += 1) {
    if (chat.status === 'ready' || chat.status === 'error') {
      await new Promise((r) => setTimeout(r, 30));
      if (chat.status === 'ready' || chat.status === 'error') return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`the chat never settled (${chat.status})`);
}

/** One conversation through `mode`, answering the tool as `flow` says. With `reload`, the page
 *  that asked for the approval is gone before it is given: twoplane restarts (the first turn is
 *  then only in the store, sealed), and a new page with the messages the app stored answers. */
async function converse(mode, flow, { reload = false } = {}) {
  const calls = [];
  const held = memoryHeld();
  const open = (messages = []) => {
    const transport =
      mode === 'twoplane'
        ? new TwoplaneChatTransport({ api: `${app.url}/twoplane/${flow}`, endpoint: tp.url, held })
        : new M.ai.DefaultChatTransport({ api: `${app.url}/plain/${flow}` });
    const chat = new Chat({
      id: `chat-${flow}`,
      messages,
      transport,
      sendAutomaticallyWhen:
        flow === 'client' ? M.ai.lastAssistantMessageIsCompleteWithToolCalls : M.ai.lastAssistantMessageIsCompleteWithApprovalResponses,
      onToolCall: ({ toolCall }) => {
        calls.push(toolCall.toolCallId);
        if (flow === 'client') {
          const answer = chat.addToolOutput ?? chat.addToolResult;
          answer.call(chat, { tool: 'confirm', toolCallId: toolCall.toolCallId, output: { answer: 'yes' } });
        }
      },
    });
    return chat;
  };
  let chat = open();
  await within(20_000, chat.sendMessage({ text: 'Go ahead.' }), `${mode} ${flow}: the first turn`);
  if (flow === 'approval') {
    await settled(chat);
    if (reload) {
      const stored = JSON.parse(JSON.stringify(chat.messages));
      if (mode === 'twoplane') {
        await tp.restart();
        producer = createTwoplaneProducer({ url: tp.url, producerToken: tp.producerToken, readTokenSecret: tp.readSecret });
      }
      chat = open(stored);
    }
    const part = chat.messages.at(-1).parts.find((p) => p.state === 'approval-requested');
    assert.ok(part, `${mode}: the tool waits for its approval`);
    chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
  }
  await settled(chat);
  assert.equal(chat.status, 'ready', `${mode} ${flow}: ${chat.error ?? ''}`);
  // The user message's id is the page's own random one, an approval's the SDK's.
  const messages = JSON.parse(JSON.stringify(chat.messages)).map((m) => (m.role === 'user' ? { ...m, id: 'user' } : m));
  for (const p of messages.flatMap((m) => m.parts)) if (p.approval?.id) p.approval.id = 'approval';
  return { messages, calls };
}

for (const flow of approvals ? ['client', 'approval'] : ['client']) {
  test(`${flow === 'client' ? 'a client-side tool' : 'a tool approval'} and its continuation: one message, as without twoplane`, async () => {
    const plain = await converse('plain', flow);
    const through = await converse('twoplane', flow);
    assert.deepEqual(through.messages, plain.messages, 'the same final messages as through DefaultChatTransport');
    assert.equal(through.messages.length, 2, 'one user and one assistant message');
    assert.deepEqual(through.calls, flow === 'client' ? ['call-1'] : plain.calls, 'onToolCall once per call');
    const assistant = through.messages.at(-1);
    assert.ok(assistant.parts.some((p) => p.type === 'text' && p.text === 'You said so; done.'), 'the continuation is in the same message');
    // The twoplane stream is that message's: both turns, under its id, one coordinate.
    const token = signStreamToken({ secret: tp.readSecret, streamId: assistant.id, ttlSeconds: 600 });
    const read = await readUi(tp, token, assistant.id);
    assert.equal(read.events.at(-1).done, true, 'the continued stream ended');
    const ids = read.events.filter((e) => !e.done).map((e) => e.id);
    assert.ok(ids.every((o, i) => i === 0 || o >= ids[i - 1]), 'one coordinate: offsets never go back');
    const stored = asJson((await lastMessage(M, read.events.filter((e) => !e.done).map((e) => e.chunk))).message);
    assert.equal(stored.id, assistant.id);
    const texts = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text);
    assert.deepEqual(texts(stored), texts(assistant), 'the stream holds both turns of the message');
  });
}

if (approvals) {
  test('a tool approval given after a reload and a server restart: the sealed turn goes on from the store, one message', async () => {
    const plain = await converse('plain', 'approval', { reload: true });
    const through = await converse('twoplane', 'approval', { reload: true });
    assert.deepEqual(through.messages, plain.messages, 'the same final messages as through DefaultChatTransport');
    assert.equal(through.messages.length, 2, 'one user and one assistant message');
    const assistant = through.messages.at(-1);
    assert.ok(assistant.parts.some((p) => p.type === 'text' && p.text === 'You said so; done.'), 'the continuation is in the same message');
    const token = signStreamToken({ secret: tp.readSecret, streamId: assistant.id, ttlSeconds: 600 });
    const read = await readUi(tp, token, assistant.id);
    const stored = asJson((await lastMessage(M, read.events.filter((e) => !e.done).map((e) => e.chunk))).message);
    const texts = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text);
    assert.deepEqual(texts(stored), texts(assistant), 'the stream holds both turns of the message');
  });
}
