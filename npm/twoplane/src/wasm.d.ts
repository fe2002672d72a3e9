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
}

/** The wasm build's backend object. */
export declare const backend: TwoplaneBackend;
/** Build every public name over a backend. */
export declare function buildApi(backend: TwoplaneBackend): TwoplaneApi;
declare const api: TwoplaneApi;
export default api;
