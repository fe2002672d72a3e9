// Types of `twoplane/wasm`: every public name, plus the backend object and the facade builder
// for code that mixes backends.
export * from './index.js';
// TwoplaneApi below is the type of index.d.ts's values, so the public names are listed there only.
import type * as Public from './index.js';

type PublicValues = typeof Public;

/** What both numeric conform passes of a backend answer besides `feed` (docs/js-backend.md). */
export interface BackendConformCalls {
  end(): number;
  fail(): number;
  pos(): number;
  lastDurable(): number;
  requested(): number;
  violation(): number;
  reason(streamIdJson: string, from: string, seq: string, typeJson: string): string;
}

/** The numeric conform pass a backend provides (docs/js-backend.md). */
export interface BackendConform extends BackendConformCalls {
  feed(kind: number, idMatches: boolean, a: number, b: number, c: number): number;
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
export interface BackendMessageConform extends BackendConformCalls {
  feed(kind: number, idMatches: boolean, a: number, b: number, c: number, part: number, at: number): number;
  open(idMatches: boolean, from: number, seq: number, durableSeq: number, parts: Float64Array): number;
}

/** The numeric message reader a backend provides (twoplane_core::message::MessageReaderCore):
 *  `feed` answers the action code (MESSAGE_ACTIONS) and leaves the part that action names in
 *  `part` (NaN: none) and a splice's body offset in `at` (NaN after any other action). */
export interface BackendMessageReaderCore {
  feed(kind: number, idMatches: boolean, a: number, b: number, c: number, part: number, at: number): number;
  readonly part: number;
  readonly at: number;
  stopCode(): number;
  resumeFrom(): number;
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
  /** A reader holding a durable message `len` units long with this part table (empty: nothing
   *  structural happened) whose parts numbered in `ended` ended; throws with `.kind`. */
  MessageReaderCore: new (len: number, parts: Float64Array, ended: Float64Array) => BackendMessageReaderCore;
  // The text half of messages: absent from the shipped wasm build (for its size). The package
  // uses the codec members; assembleMessage is the core's assembly, which tests compare with the
  // package's own.
  /** The core's JSON (or SSE event, with `asEvent`) of a message frame's JSON text. */
  messageFrame?(json: string, asEvent: boolean): string;
  /** A message frame's SSE id, or -1 when it has none. */
  messageResumePoint?(json: string): number;
  /** The field a refused frame's decode error names, or null. */
  messageErrorField?(json: string): string | null;
  assembleMessage?(body: string | null, stored: string | null, seq: number, rows: BackendChunkRow[]): BackendMessage;
}

/** Every public name, as `buildApi` returns them: the values of index.d.ts (the one list of them),
 *  with the build's name. */
export interface TwoplaneApi extends PublicValues {
  readonly backend: string;
}

/** The wasm build's backend object. */
export declare const backend: TwoplaneBackend;
/** Build every public name over a backend. */
export declare function buildApi(backend: TwoplaneBackend): TwoplaneApi;
declare const api: TwoplaneApi;
export default api;
