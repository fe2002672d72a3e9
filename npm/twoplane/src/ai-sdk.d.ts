// Types of `twoplane/ai-sdk` (ai-sdk.js in browsers and bundlers, ai-sdk.node.js in Node). The
// only declarations of the package that name the AI SDK's types (`ai` 5, 6 or 7, an optional peer
// dependency).
import type { ChatTransport, HttpChatTransportInitOptions, UIMessage, UIMessageChunk } from 'ai';

/** How a produced stream ended (`produceUIMessageStream`, `TwoplaneProducer.produce`). */
export interface ProduceOutcome {
  /**
   * The stream's status as the server sealed it (`complete`; `cancelled` when the producer sent
   * `abort` or a reader cancelled; `error` when a chunk was refused), or `failed` when the request
   * itself failed (network, authorization, a refusal before anything was read).
   */
  status: 'complete' | 'cancelled' | 'error' | 'interrupted' | 'failed' | (string & {});
  /** A reader cancelled the stream (`409 cancelled`): the source was cancelled. */
  readerCancelled: boolean;
  /** The message's length in the stream's coordinate, when known. */
  seq?: number;
  /** How much of it the store holds, when known. */
  durableSeq?: number;
  /** How many chunks the server applied (a `200` answer). */
  chunks?: number;
  /** The error's stable kind (`bad_chunk`, `unauthorized`, `network`, ...), when not `200`. */
  kind?: string;
  message?: string;
  httpStatus?: number;
}

/** A UI message stream as the SDK hands it out: chunk objects, or the SSE text `consumeSseStream` receives. */
export type UIMessageStreamSource = ReadableStream<UIMessageChunk> | ReadableStream<string> | ReadableStream<Uint8Array>;

export interface ProduceUIMessageStreamOptions {
  /** The base URL of `twoplane serve` as this server reaches it, e.g. `http://127.0.0.1:8787`. */
  url: string;
  /** The stream (the message id). */
  streamId: string;
  stream: UIMessageStreamSource;
  /** The server's producer secret (omit on loopback without one). */
  producerToken?: string;
  fetch?: typeof globalThis.fetch;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

/** Produce one UI message stream into `twoplane serve`; never rejects. */
export function produceUIMessageStream(options: ProduceUIMessageStreamOptions): Promise<ProduceOutcome>;

export interface TwoplaneProducerOptions {
  /** The base URL of `twoplane serve` as this server reaches it. */
  url: string;
  producerToken?: string;
  /** The server's read-token secret: `responseOptions` and `readToken` mint tokens for pages. */
  readTokenSecret?: string | Uint8Array;
  /** Lifetime of minted read tokens, in seconds. Default 600. */
  readTokenTtlSeconds?: number;
  /** How tokens are minted; the Node entry uses `signStreamToken` of `twoplane/token`. */
  signToken?: (options: { secret: string | Uint8Array; streamId: string; ttlSeconds: number; userId?: string }) => string;
  fetch?: typeof globalThis.fetch;
}

export interface ResponseOptionsInit {
  /** Carried in the read token. */
  userId?: string;
  ttlSeconds?: number;
  /** More response headers. */
  headers?: Record<string, string>;
  /** Called with the outcome once the stream ended. */
  onEnd?: (outcome: ProduceOutcome) => void;
  /** The turn's messages, as given to `toUIMessageStreamResponse`: when they end in an assistant
   *  message (a client tool's output or a tool approval sent back), the turn goes on with that
   *  message's stream, under its id, from its durable end. */
  originalMessages?: ReadonlyArray<{ id: string; role: string }>;
}

/** The options `responseOptions` gives `toUIMessageStreamResponse` / `createUIMessageStreamResponse`. */
export interface TwoplaneResponseOptions {
  /** The message id is the stream id. */
  generateMessageId: () => string;
  /** Sends the SSE copy of the response to twoplane. */
  consumeSseStream: (options: { stream: ReadableStream<string> }) => void;
  /** `x-twoplane-stream` (the stream id) and `x-twoplane-token` (a read token, when minted). */
  headers: Record<string, string>;
  /** Resolves with the outcome once the stream ended (for a platform's `waitUntil`). */
  done: Promise<ProduceOutcome>;
}

export interface TwoplaneProducer {
  readonly url: string;
  /** Open the stream (its row created when missing) so that readers find it at once. */
  open(streamId: string, init?: { offset?: number }): Promise<void>;
  produce(streamId: string, stream: UIMessageStreamSource, options?: { signal?: AbortSignal; headers?: Record<string, string> }): Promise<ProduceOutcome>;
  /** A read token for the page (undefined without `readTokenSecret`). */
  readToken(streamId: string, options?: { userId?: string; ttlSeconds?: number }): string | undefined;
  /** `result.toUIMessageStreamResponse(await producer.responseOptions(streamId))`. */
  responseOptions(streamId: string, init?: ResponseOptionsInit): Promise<TwoplaneResponseOptions>;
  /** Aborted when a reader cancels the stream: give it to `streamText({ abortSignal })`. */
  signal(streamId: string): AbortSignal;
}

export function createTwoplaneProducer(options: TwoplaneProducerOptions): TwoplaneProducer;

/**
 * What a page holds of a chat's current stream: the whole record the transport writes. A store
 * keeps it as it is given (JSON-safe): a store that keeps only some fields loses what the others
 * say (without `snapshot`, a client tool's output and an approval the page gave are gone after a
 * reload).
 */
export interface HeldStream {
  /** The stream (the assistant message's id). */
  streamId: string;
  /** The read token the page reads it with. */
  token?: string;
  /** How far the page's `Chat` processed it, in the stream's coordinate. */
  offset: number;
  /** Tool calls whose `onToolCall` ran (through `fresh`). */
  toolCalls: string[];
  /**
   * The chunks the page's `Chat` processed up to `offset`, compacted, with what the page added to
   * the message itself when it sent a continuation (a client tool's output, an approval): a resume
   * replays them locally and asks twoplane only for what follows. Absent or empty: the resume gets
   * the server's replay, which does not hold what the page added.
   */
  snapshot?: UIMessageChunk[];
  /** A continuation was sent whose answer the page has not seen yet: a resume waits (10 s) for the
   *  stream to go on. */
  goesOn?: boolean;
  /** Tool calls whose `onToolCall` ran on a page that went away before their continuation was sent:
   *  offered once more to the next page (`fresh`). */
  reoffered?: string[];
}

/** Where the transport keeps `HeldStream`s (sync or async). */
export interface HeldStore {
  get(chatId: string): HeldStream | undefined | Promise<HeldStream | undefined>;
  set(chatId: string, held: HeldStream): void | Promise<void>;
  delete?(chatId: string): void | Promise<void>;
}

/** The default store: in memory, for the life of the page. */
export function memoryHeld(): HeldStore;
/** A store in `sessionStorage` or `localStorage`: survives a reload. */
export function webStorageHeld(storage: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>, prefix?: string): HeldStore;

/** Where a chat's stream is read. */
export interface StreamTarget {
  /** A `GET .../ui-message-stream` URL (twoplane's, or the app's route that proxies it); `?from=` is appended. */
  url: string;
  /** A read token, sent as `Authorization: Bearer`. */
  token?: string;
  headers?: Record<string, string>;
  credentials?: RequestCredentials;
  /** Where a stop posts the cancel; default: the URL with `/ui-message-stream` replaced by `/cancel` (else `/cancel` appended). */
  cancelUrl?: string;
  /** The stream's id, when known. */
  streamId?: string;
}

export interface TwoplaneChatTransportOptions<UI_MESSAGE extends UIMessage> extends HttpChatTransportInitOptions<UI_MESSAGE> {
  /** The base URL of `twoplane serve` as the page reaches it (default: the page's origin). */
  endpoint?: string;
  /**
   * Where a chat's stream is read (null: no stream). Default: twoplane's route for the stream the
   * page holds, else the app's `{api}/{chatId}/stream`.
   */
  stream?: (info: { chatId: string; streamId?: string; token?: string }) => StreamTarget | null | undefined | Promise<StreamTarget | null | undefined>;
  /** Where the held offsets are kept (default `memoryHeld()`). */
  held?: HeldStore;
  /** Whether the SDK's abort (`stop()`; in ai 7 also `useChat` unmounting) cancels the stream. Default true. */
  cancelOnStop?: boolean;
  /** Reopening a broken connection: attempts (default 6) and the backoff. */
  reconnect?: { attempts?: number; initialMs?: number; maxMs?: number };
}

/** A `ChatTransport` that reads from twoplane and resumes by offset. */
export class TwoplaneChatTransport<UI_MESSAGE extends UIMessage = UIMessage> implements ChatTransport<UI_MESSAGE> {
  constructor(options?: TwoplaneChatTransportOptions<UI_MESSAGE>);
  readonly resumeStreamIsReplay: true;
  sendMessages: ChatTransport<UI_MESSAGE>['sendMessages'];
  reconnectToStream: ChatTransport<UI_MESSAGE>['reconnectToStream'];
  /** What the page holds of a chat's current stream. */
  held(chatId: string): Promise<HeldStream | undefined>;
  /**
   * The messages to start the page's `Chat` with (`useChat({ messages })`), given those the app
   * kept: without the last assistant message when the page holds its stream, which the resume
   * then rebuilds (with what the page added to it). Needed on SDK releases whose resume builds on
   * the page's last message; the same result on the others. Asks the `held` store only when it
   * answers at once (`memoryHeld`, `webStorageHeld`); otherwise returns `messages` as they are.
   */
  restore<M extends { id: string; role: string }>(chatId: string, messages: M[]): M[];
  /** Whether a chunk only rebuilds what the page already held. */
  isReplayed(chunk: unknown): boolean;
  /** `onToolCall` or `onData`, called only for what is new to the page. */
  fresh<A extends unknown[], R>(handler: (...args: A) => R): (...args: A) => R | undefined;
  /** Stop following every stream (nothing is cancelled). */
  close(): void;
}

/** Whether a chunk the transport delivered only rebuilds what the page already held. */
export function isReplayedChunk(chunk: unknown): boolean;
