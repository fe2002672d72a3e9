// Type check of `twoplane/ai-sdk` (npm/twoplane/src/ai-sdk.d.ts) against the SDK's own
// declarations, compiled with `tsc --noEmit` once per major (tsconfig.5.json, tsconfig.7.json map
// `ai` and `@ai-sdk/react` to that major) by scripts/test-aisdk.sh, never run.
import { streamText, createUIMessageStreamResponse, type UIMessage, type ChatTransport, type UIMessageChunk } from 'ai';
import { Chat } from '@ai-sdk/react';
import {
  TwoplaneChatTransport,
  createTwoplaneProducer,
  produceUIMessageStream,
  webStorageHeld,
  memoryHeld,
  isReplayedChunk,
  type ProduceOutcome,
  type HeldStream,
  type TwoplaneProducer,
} from '../../../npm/twoplane/src/ai-sdk.js';

declare const model: Parameters<typeof streamText>[0]['model'];
declare const chunks: ReadableStream<UIMessageChunk>;

// a route: one line next to toUIMessageStreamResponse
export async function POST(): Promise<Response> {
  const producer: TwoplaneProducer = createTwoplaneProducer({ url: 'http://127.0.0.1:8787', producerToken: 'p', readTokenSecret: 's' });
  const streamId = 'm-1';
  const result = streamText({ model, prompt: 'hi', abortSignal: producer.signal(streamId) });
  return result.toUIMessageStreamResponse(await producer.responseOptions(streamId, { userId: 'u' }));
}

export async function viaWriter(producer: TwoplaneProducer): Promise<Response> {
  const options = await producer.responseOptions('m-2', { onEnd: (o: ProduceOutcome) => void o.readerCancelled });
  const done: Promise<ProduceOutcome> = options.done;
  void done;
  return createUIMessageStreamResponse({ stream: chunks, ...options });
}

export async function produceDirectly(): Promise<number | undefined> {
  const out = await produceUIMessageStream({ url: 'http://127.0.0.1:8787', streamId: 'm-3', stream: chunks });
  const status: string = out.status;
  const token: string | undefined = createTwoplaneProducer({ url: 'x' }).readToken('m-3');
  void status;
  void token;
  return out.seq;
}

// a page
const transport = new TwoplaneChatTransport<UIMessage>({
  api: '/api/chat',
  endpoint: 'https://tp.example.com',
  held: webStorageHeld(globalThis.sessionStorage),
  stream: ({ chatId, streamId }) => (streamId ? { url: `/api/chat/${chatId}/stream`, streamId } : null),
  reconnect: { attempts: 3 },
  cancelOnStop: true,
});
const asTransport: ChatTransport<UIMessage> = transport;
const stored: UIMessage[] = [];
const chat = new Chat<UIMessage>({
  id: 'c',
  messages: transport.restore('c', stored),
  transport,
  onToolCall: transport.fresh(({ toolCall }) => {
    const id: string = toolCall.toolCallId;
    void id;
  }),
  onData: transport.fresh((part) => void part.data),
});
const replay: true = transport.resumeStreamIsReplay;
const held: Promise<HeldStream | undefined> = transport.held('c');
const fromMemory = new TwoplaneChatTransport({ held: memoryHeld() });
// the whole record a store gives back: the snapshot holds UI message chunks
const whole: HeldStream = { streamId: 's', offset: 3, toolCalls: [], snapshot: [{ type: 'start', messageId: 's' }], goesOn: true, reoffered: [] };
void whole;
const replayed: boolean = isReplayedChunk({ type: 'start' }) && transport.isReplayed(null);
export { asTransport, chat, replay, held, fromMemory, replayed };

// @ts-expect-error: a stream id is required
produceUIMessageStream({ url: 'x', stream: chunks });
// @ts-expect-error: a held offset is a number
const bad: HeldStream = { streamId: 's', offset: '3', toolCalls: [] };
void bad;
// @ts-expect-error: the stream target needs a url
new TwoplaneChatTransport({ stream: () => ({ token: 't' }) });
