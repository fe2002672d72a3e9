// Types of `twoplane/wasm`: every public name, plus the backend object and the facade builder
// for code that mixes backends.
export * from './index.js';
import type {
  StreamReader,
  StreamRelayConform,
  SseDecoder,
  TwoplaneError,
  STREAM_STATUS_STREAMING,
  STREAM_SSE_HEADERS,
  frameResumePoint,
  spliceStreamText,
  assembleDurableText,
  streamChunkId,
  streamChunkTableDdl,
  streamRequestFromHttp,
  encodeSseEvent,
  encodeSseEvents,
  encodeMessageFrame,
  encodeMessageEvent,
  decodeMessageFrame,
  messageResumePoint,
  assembleDurableMessage,
  DurableMessage,
  MessageRelayConform,
  MessageReader,
} from './index.js';

/** The numeric conform pass a backend provides (docs/js-backend.md). */
export interface BackendConform {
  feed(kind: number, idMatches: boolean, a: number, b: number, c: number): number;
  end(): number;
  fail(): number;
  pos(): number;
  lastDurable(): number;
  requested(): number;
  violation(): number;
  reason(streamIdJson: string, from: string, seq: string, typeJson: string): string;
}

/** The numeric reader a backend provides (docs/js-backend.md). */
export interface BackendReader {
  feed(kind: number, idMatches: boolean, a: number, b: number, c: number): number;
  at(): number;
  stopCode(): number;
  accLen(): number;
  resumeFrom(): number;
}

/** The numeric message conform pass a backend provides (docs/contract.md §8; facade.js). */
export interface BackendMessageConform {
  feed(kind: number, idMatches: boolean, a: number, b: number, c: number, part: number, at: number): number;
  open(idMatches: boolean, from: number, seq: number, durableSeq: number, parts: Float64Array): number;
  end(): number;
  fail(): number;
  pos(): number;
  lastDurable(): number;
  requested(): number;
  violation(): number;
  reason(streamIdJson: string, from: string, seq: string, typeJson: string): string;
}

/** A backend's message reader: decides from numbers, folds the frames that change the message. */
export interface BackendMessageReader {
  feed(kind: number, idMatches: boolean, a: number, b: number, c: number, part: number, at: number): number;
  part(): number;
  at(): number;
  apply(frameJson: string): void;
  document(): string;
  resumeFrom(): number;
  stopCode(): number;
}

/** A backend's durable message. */
export interface BackendMessage {
  document(): string;
  len(): number;
  partTable(): ArrayLike<number>;
  reader(): BackendMessageReader;
}

/** A chunk row as `assembleMessage` takes it. */
export interface BackendChunkRow {
  seq: number;
  text: unknown;
  parts: unknown;
}

/** What `buildApi` needs (docs/js-backend.md). */
export interface TwoplaneBackend {
  readonly name: string;
  Conform: new (from: number) => BackendConform;
  Reader: new (durableLen: number) => BackendReader;
  splicePoint(durableLen: number, producedLen: number): number;
  assemblyOrder(seqs: Float64Array): Uint32Array;
  streamChunkId(streamId: string, seq: number): string;
  /** The chunk id for a `seq` that was not a number, as JavaScript printed it (`${seq}`). */
  streamChunkIdText(streamId: string, seqText: string): string;
  streamChunkTableDdl(tables: unknown, dialect: unknown): string[];
  /** With `requireAbsolute`, a relative URL throws `invalid_url` (a fetch request's URL is absolute). */
  streamRequestFromHttp(url: string, lastEventId: string | null, requireAbsolute?: boolean): { streamId: string; from: number };
  /** The URL a reader subscribes with; throws `invalid_offset` when `from` is not an offset. */
  subscribeUrl(endpoint: string, streamId: string, from: number): string;
  MessageConform: new (from: number) => BackendMessageConform;
  // The text half of messages: absent from the shipped wasm build (for its size).
  /** The core's JSON (or SSE event, with `asEvent`) of a message frame's JSON text. */
  messageFrame?(json: string, asEvent: boolean): string;
  /** A message frame's SSE id, or -1 when it has none. */
  messageResumePoint?(json: string): number;
  /** The field a refused frame's decode error names, or null. */
  messageErrorField?(json: string): string | null;
  assembleMessage?(body: string | null, stored: string | null, seq: number, rows: BackendChunkRow[]): BackendMessage;
}

/** Every public name, as `buildApi` returns them. */
export interface TwoplaneApi {
  readonly backend: string;
  STREAM_STATUS_STREAMING: typeof STREAM_STATUS_STREAMING;
  STREAM_SSE_HEADERS: typeof STREAM_SSE_HEADERS;
  frameResumePoint: typeof frameResumePoint;
  spliceStreamText: typeof spliceStreamText;
  assembleDurableText: typeof assembleDurableText;
  streamChunkId: typeof streamChunkId;
  streamChunkTableDdl: typeof streamChunkTableDdl;
  streamRequestFromHttp: typeof streamRequestFromHttp;
  StreamRelayConform: typeof StreamRelayConform;
  StreamReader: typeof StreamReader;
  SseDecoder: typeof SseDecoder;
  encodeSseEvent: typeof encodeSseEvent;
  encodeSseEvents: typeof encodeSseEvents;
  TwoplaneError: typeof TwoplaneError;
  encodeMessageFrame: typeof encodeMessageFrame;
  encodeMessageEvent: typeof encodeMessageEvent;
  decodeMessageFrame: typeof decodeMessageFrame;
  messageResumePoint: typeof messageResumePoint;
  assembleDurableMessage: typeof assembleDurableMessage;
  DurableMessage: typeof DurableMessage;
  MessageRelayConform: typeof MessageRelayConform;
  MessageReader: typeof MessageReader;
}

/** The wasm build's backend object. */
export declare const backend: TwoplaneBackend;
/** Build every public name over a backend. */
export declare function buildApi(backend: TwoplaneBackend): TwoplaneApi;
declare const api: TwoplaneApi;
export default api;
