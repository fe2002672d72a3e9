// `twoplane/ai-sdk`: the Vercel AI SDK (`ai` 5, 6 and 7) on `twoplane serve`. The only entry of
// the package that imports `ai` (an optional peer dependency); ai-sdk.node.js is this entry in
// Node, with a producer that mints read tokens by itself.
//
// Its four rooms, each with what it guarantees in its own header:
// - producing (ai-sdk/producer.js): `produceUIMessageStream` sends a UI message stream into
//   twoplane and resolves with how it ended; `createTwoplaneProducer(...).responseOptions` is the
//   one-line form for a route's `toUIMessageStreamResponse`;
// - what a page holds (ai-sdk/held.js): the `held` stores, `memoryHeld` and `webStorageHeld`;
// - reading one stream (ai-sdk/follow.js): the SSE groups of `GET .../ui-message-stream` handed
//   to the SDK whole, a broken connection reopened from the last group received, and
//   `isReplayedChunk`;
// - the `ChatTransport` (ai-sdk/transport.js): `TwoplaneChatTransport`, which sends with the SDK's
//   `DefaultChatTransport`, reads and resumes from twoplane by offset, and turns a stop into a
//   cancel.
// docs/ai-sdk.md is the guide.

export { createTwoplaneProducer, produceUIMessageStream } from './ai-sdk/producer.js';
export { memoryHeld, webStorageHeld } from './ai-sdk/held.js';
export { isReplayedChunk } from './ai-sdk/follow.js';
export { TwoplaneChatTransport } from './ai-sdk/transport.js';
