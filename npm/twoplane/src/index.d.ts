// Types of the public names of `twoplane` (every entry: ".", "./wasm", "./node"). Hand-written,
// except the code names imported from codes.d.ts (generated from the core); checked against a
// usage file by tests/browser/types (tsc --noEmit).

import type { CoreStopReason, MessageActionName, StreamStatus, TwoplaneErrorKind } from './codes.js';

/** How a sealed stream ended (generated from the core, in codes.d.ts). */
export type { StreamStatus };

/** The status column's value while a stream is live. */
export declare const STREAM_STATUS_STREAMING: 'streaming';

/** The join was accepted; the replay starts at `from`. */
export interface StreamOpenFrame {
  type: 'open';
  streamId: string;
  from: number;
  seq: number;
  durableSeq: number;
  ended: boolean;
}

/** Produced text `from..seq` (UTF-16 code units); not a durability claim. */
export interface StreamChunkFrame {
  type: 'chunk';
  from: number;
  seq: number;
  text: string;
}

/** The store holds the prefix through `seq`. */
export interface StreamDurableFrame {
  type: 'durable';
  seq: number;
}

/** Sealed; `seq` is the DURABLE length. */
export interface StreamEndFrame {
  type: 'end';
  seq: number;
  status: StreamStatus;
  error?: string;
}

/** Read the store: the join was below the retained floor, or the reader fell behind. */
export interface StreamStaleFrame {
  type: 'stale';
  floorSeq: number;
  durableSeq: number;
}

/** This process does not host the stream; the store is the whole truth. */
export interface StreamAbsentFrame {
  type: 'absent';
}

/** One frame of a subscription (docs/contract.md §1), discriminated by `type`. */
export type StreamFrame =
  | StreamOpenFrame
  | StreamChunkFrame
  | StreamDurableFrame
  | StreamEndFrame
  | StreamStaleFrame
  | StreamAbsentFrame;

/** `end`, `stale` and `absent`: nothing follows them. */
export type StreamTerminalFrame = StreamEndFrame | StreamStaleFrame | StreamAbsentFrame;

export declare const STREAM_SSE_HEADERS: Readonly<{
  'content-type': 'text/event-stream; charset=utf-8';
  'cache-control': 'no-cache, no-transform';
  connection: 'keep-alive';
  'x-accel-buffering': 'no';
}>;

/** The SSE `id:` of a frame: `open` gives `from`; `chunk`, `durable`, `end` give `seq`. */
export declare function frameResumePoint(frame: StreamOpenFrame | StreamChunkFrame | StreamDurableFrame | StreamEndFrame): number;
export declare function frameResumePoint(frame: StreamStaleFrame | StreamAbsentFrame): undefined;
export declare function frameResumePoint(frame: StreamFrame): number | undefined;

/** `durable` followed by `produced` from `durable.length` when `produced` is longer, else `durable`. */
export declare function spliceStreamText(durable: string, produced: string): string;

export interface StreamMessageRow {
  body?: string | null;
}

export interface StreamChunkRow {
  seq: number;
  text?: string | null;
}

/** `message.body` then the chunks' texts in ascending `seq` (stable); missing text is empty. */
export declare function assembleDurableText(
  message: StreamMessageRow | null | undefined,
  chunks?: readonly StreamChunkRow[],
): string;

/** `"<streamId>:<seq>"`. A `seq` that is not a number is printed as a template literal prints it
 *  (`undefined` gives `"<streamId>:undefined"`), as the TypeScript original did. */
export declare function streamChunkId(streamId: string, seq: number): string;

/** Column names on the app's tables; every entry has a default except cancel, error and host. */
export interface StreamColumns {
  key?: string;
  body?: string;
  status?: string;
  seq?: string;
  cancel?: string;
  error?: string;
  host?: string;
  chunkKey?: string;
  chunkStream?: string;
  chunkSeq?: string;
  chunkText?: string;
}

export interface StreamTables {
  message: string;
  chunks: string;
  columns?: StreamColumns;
}

/** A SQL dialect: `"postgres"` picks Postgres types; any other name, SQLite's. */
export type SqlDialectLike = { name: string } | 'sqlite' | 'postgres';

/** The chunk table's migration: `[CREATE TABLE ..., CREATE INDEX ...]`. Throws a TwoplaneError
 *  (`invalid_identifier`, `missing_field`, `invalid_field`, `invalid_argument`). */
export declare function streamChunkTableDdl(tables: StreamTables, dialect: SqlDialectLike): string[];

/** A fetch `Request` (its `url` must be absolute), or a Node `IncomingMessage` (headers as a plain
 *  object; its `url` may be origin-relative). */
export interface StreamHttpRequestLike {
  url: string;
  headers: { get(name: string): string | null } | Record<string, string | string[] | undefined>;
}

export interface StreamRequest {
  streamId: string;
  from: number;
}

/** `streamId` from the query; the offset from `Last-Event-ID` when present, else `?from`, else 0.
 *  Throws a TwoplaneError `invalid_url` for a fetch-style request whose URL is relative. */
export declare function streamRequestFromHttp(req: StreamHttpRequestLike): StreamRequest;

/** What StreamRelayConform and MessageRelayConform both hold: relay.js makes the two classes from
 *  one definition, over the two numeric passes. */
interface RelayConformState {
  readonly streamId: string;
  readonly from: number;
  onViolation?: (reason: string) => void;
  /** End of the delivered prefix. */
  readonly pos: number;
  /** The last `durable` passed. */
  readonly lastDurable: number;
}

/** The relay conform pass (docs/contract.md §3): every violation becomes one legal `stale`. */
export declare class StreamRelayConform {
  constructor(streamId: string, from: number, onViolation?: (reason: string) => void);
  /** 0 to 2 frames; an accepted frame is returned as the very object fed in. Any value may be
   *  fed (relays are untrusted): whatever is not a legal frame becomes a violation. */
  feed<F extends StreamFrame>(frame: F): Array<F | StreamOpenFrame | StreamStaleFrame>;
  feed(frame: unknown): Array<StreamFrame>;
  /** The source finished without a terminal frame. */
  end(): StreamStaleFrame[];
  /** The source threw, or the reader is being dropped. */
  fail(): StreamStaleFrame[];
}
export interface StreamRelayConform extends RelayConformState {}

/** Why a StreamReader stopped. */
export type StreamStopReason = CoreStopReason | 'refused' | 'closed';

/** A body splice: part `part`'s body was cut at `cut`, then `appended` was appended (for a
 *  stream of today's frames, always part 0, whose body is `reader.text`). */
export interface StreamReaderSpliceUpdate {
  readonly action: 'splice';
  readonly part: number;
  readonly cut: number;
  readonly appended: string;
  /** That part's whole body (joined on first read; read it during the callback). */
  readonly text: string;
}

/** A part started (its kind and attributes are the frame's `kind` and `value`), ended, or had
 *  its attributes merged (the frame's `value`). */
export interface StreamReaderPartUpdate {
  readonly action: 'start' | 'end' | 'set';
  readonly part: number;
  readonly frame: MessagePartFrame | MessagePartEndFrame | MessageSetFrame;
}

/** Metadata merged, the finish reason, or a transient part (reported, never kept). */
export interface StreamReaderMessageUpdate {
  readonly action: 'meta' | 'finish' | 'transient';
  readonly part?: undefined;
  readonly frame: MessageMetaFrame | MessageFinishFrame | MessageTransientFrame;
}

/** One change of the message a StreamReader holds, discriminated by `action`. */
export type StreamReaderUpdate = StreamReaderSpliceUpdate | StreamReaderPartUpdate | StreamReaderMessageUpdate;

export interface StreamReaderBackoff {
  /** First reconnect delay (a server `retry:` replaces it). Default 250. */
  initialMs?: number;
  /** Longest reconnect delay. Default 5000. */
  maxMs?: number;
}

export interface StreamReaderOptions {
  /** The subscribe endpoint; `?streamId=…&from=…` is appended. Required for start(). */
  endpoint?: string | URL;
  streamId: string;
  /** The durable text the app shows now: the join offset and the seed of part 0 (a message of
   *  that one text). Exclusive with `durable`. */
  durableText?: string;
  /** The durable message the app holds now (`assembleDurableMessage`): its `len` is the join
   *  offset and it is the seed. Exclusive with `durableText` (both: `invalid_argument`). */
  durable?: DurableMessage | null;
  transport?: 'fetch' | 'eventsource';
  fetch?: typeof fetch;
  EventSource?: typeof EventSource;
  withCredentials?: boolean;
  headers?: HeadersInit;
  backoff?: StreamReaderBackoff;
  onUpdate?: (update: StreamReaderUpdate) => void;
  onStop?: (reason: StreamStopReason, frame: MessageFrame | undefined) => void;
  onFrame?: (frame: MessageFrame) => void;
}

/** The live-plane reader (docs/contract.md §4 and §8), framework-free: it accumulates one message
 *  (a stream of today's frames is a message of one text, part 0). */
export declare class StreamReader {
  constructor(options: StreamReaderOptions);
  /** Part 0's body (joined lazily): for a stream of today's frames, the accumulated text. */
  readonly text: string;
  /** Part 0's body length, without joining it. */
  readonly length: number;
  /** The message held, in the stored document's shape (the same object until it changes). */
  readonly message: StoredMessage;
  /** Every part by number, part 0 included, each shaped as a document entry. */
  readonly parts: readonly StoredPart[];
  readonly streamId: string;
  /** The durable length it joined at. */
  readonly joinOffset: number;
  /** Where a reconnect resumes. */
  readonly resumeFrom: number;
  /** null while live. */
  readonly stopped: StreamStopReason | null;
  /** How many connections it has opened. */
  readonly connections: number;
  /** `spliceStreamText(durableNow, text)` for this stream; `durableNow` alone for another. */
  rendered(durableNow: string, streamId?: string): string;
  /** The longer (by `len`; a tie to the store) of `durableNow` and the message held, for this
   *  stream; `durableNow`'s message alone for another (none: the empty message). */
  renderedMessage(durableNow: DurableMessage | null | undefined, streamId?: string): StoredMessage;
  start(): this;
  close(): void;
  /** Apply one frame (for an app's own transport); returns whether the reader is still live. */
  push(frame: unknown): boolean;
}

/** Incremental WHATWG event-stream decoder. */
export declare class SseDecoder {
  /** `ownId`: the event had an `id` field of its own (`lastEventId` may be an earlier event's). */
  constructor(onEvent: (data: string, type: string, lastEventId: string, ownId: boolean) => void);
  readonly lastEventId: string;
  readonly retry: number | null;
  push(chunk: Uint8Array | ArrayBuffer | string): void;
  end(): void;
}

/** One frame as one SSE event: `id: <resume point>\n` when it has one, then `data: <JSON>\n\n`. */
export declare function encodeSseEvent(frame: StreamFrame): string;

/** Many frames as their events, concatenated: exactly `frames.map(encodeSseEvent).join('')`.
 *  Throws a TwoplaneError (`invalid_argument`) when `frames` is not an array. */
export declare function encodeSseEvents(frames: readonly StreamFrame[]): string;

/** The stable `.kind` of every error (generated from the core, in codes.d.ts). */
export type { TwoplaneErrorKind };

export declare class TwoplaneError extends Error {
  constructor(kind: TwoplaneErrorKind, message: string, options?: { cause?: unknown });
  readonly kind: TwoplaneErrorKind;
  /** The field a decode error concerns (`decodeMessageFrame` only; null: none). */
  field?: string | null;
}

// ---------------------------------------------------------------- messages made of parts (§8)
// Every build reads messages: MessageRelayConform, assembleDurableMessage, DurableMessage,
// MessageReader and StreamReader. The codec (encodeMessageFrame, encodeMessageEvent,
// decodeMessageFrame, messageResumePoint) needs the core's JSON codec, which the shipped wasm
// build leaves out for its size: there it throws a TwoplaneError of kind `invalid_state` (the
// Node addon, and so the Node entries, have it).

/** A JSON value, as attributes and metadata hold them. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** An `open` of a message subscription: `parts` is every part's body length at `from`, absent
 *  when nothing structural happened before it. */
export interface MessageOpenFrame extends StreamOpenFrame {
  parts?: number[];
}

/** Body text of part `part` at body offset `at`, spanning `from..seq`; `part` and `at` are absent
 *  exactly when the chunk is part 0 at `from` (today's chunk). */
export interface MessageChunkFrame extends StreamChunkFrame {
  part?: number;
  at?: number;
}

/** Part `part` starts with `kind` (`text`, `reasoning`, `tool-<name>`, `data-<name>`, ...). */
export interface MessagePartFrame {
  type: 'part';
  from: number;
  seq: number;
  part: number;
  kind: string;
  value?: { [key: string]: JsonValue };
}

/** Part `part` receives no more body; `value` merges into its attributes. */
export interface MessagePartEndFrame {
  type: 'part-end';
  from: number;
  seq: number;
  part: number;
  value?: { [key: string]: JsonValue };
}

/** `value` merges into part `part`'s attributes. */
export interface MessageSetFrame {
  type: 'set';
  from: number;
  seq: number;
  part: number;
  value?: { [key: string]: JsonValue };
}

/** `value` merges into the message's metadata. */
export interface MessageMetaFrame {
  type: 'meta';
  from: number;
  seq: number;
  value?: { [key: string]: JsonValue };
}

/** The model's finish reason. */
export interface MessageFinishFrame {
  type: 'finish';
  from: number;
  seq: number;
  reason: string;
}

/** A live-only part, never stored (a stored one has neither `kind` nor `value`). */
export interface MessageTransientFrame {
  type: 'transient';
  from: number;
  seq: number;
  kind?: string;
  value?: { [key: string]: JsonValue };
}

export type MessageEventFrame =
  | MessagePartFrame
  | MessagePartEndFrame
  | MessageSetFrame
  | MessageMetaFrame
  | MessageFinishFrame
  | MessageTransientFrame;

/** Every frame of a message subscription. */
export type MessageFrame =
  | MessageOpenFrame
  | MessageChunkFrame
  | StreamDurableFrame
  | StreamEndFrame
  | StreamStaleFrame
  | StreamAbsentFrame
  | MessageEventFrame;

/** The core's JSON of a frame; an invalid frame throws a TwoplaneError with the decoder's kind. */
export declare function encodeMessageFrame(frame: MessageFrame): string;
/** One frame as one SSE event: `id: <resume point>\n` when it has one, then `data: <JSON>\n\n`. */
export declare function encodeMessageEvent(frame: MessageFrame): string;
/** Strictly decode one frame's JSON text; throws a TwoplaneError naming the first problem, with
 *  `field` set to the field it concerns (null: none). */
export declare function decodeMessageFrame(json: string): MessageFrame;
/** The SSE `id:` of a frame (`seq` for a structural event), or undefined. */
export declare function messageResumePoint(frame: MessageFrame): number | undefined;

/** One stored part, as the document lists it (close to the AI SDK's `UIMessage.parts`). */
export interface StoredPart {
  type: string;
  text?: string;
  inputText?: string;
  [attribute: string]: JsonValue | undefined;
}

/** The stored document of a message. */
export interface StoredMessage {
  parts: StoredPart[];
  metadata?: { [key: string]: JsonValue };
  finishReason?: string;
}

/** The message row: its plain-text `body`, the stored `document` (JSON text) and its `seq`. */
export interface MessageRowLike {
  body?: string | null;
  document?: string | null;
  seq?: number;
}

/** A chunk row of a message: `parts` is the JSON array of its frames, null in a text row. */
export interface MessageChunkRow {
  seq: number;
  text?: string | null;
  parts?: string | null;
}

/** The durable message of a row and its chunk rows (one class for every build). */
export declare class DurableMessage {
  private constructor();
  /** The stored document's JSON text (the core's document for the same rows). */
  readonly document: string;
  /** The document as an object (the same object each time; do not mutate it). */
  readonly message: StoredMessage;
  /** The length in the coordinate: where a reader holding it joins. */
  readonly len: number;
  /** Every part's body length, or null when nothing structural happened. */
  readonly parts: number[] | null;
}

/** Assemble the durable message; a row set no producer could have written throws a TwoplaneError
 *  with the core's kind (`invalid_field` a broken rule or a malformed document, `invalid_offset` a
 *  gap, `invalid_json` text that is not JSON, and the codec's kinds for a stored frame it refuses). */
export declare function assembleDurableMessage(row: MessageRowLike, chunks?: readonly MessageChunkRow[]): DurableMessage;

/** The relay conform pass for messages: as StreamRelayConform, with the part rules of §8. */
export declare class MessageRelayConform {
  constructor(streamId: string, from: number, onViolation?: (reason: string) => void);
  /** The frames to forward for one relayed value (any value: hostile input is handled). */
  feed(frame: unknown): MessageFrame[];
  end(): MessageFrame[];
  fail(): MessageFrame[];
}
export interface MessageRelayConform extends RelayConformState {}

/** One change a MessageReader reports. */
export interface MessageReaderUpdate {
  action: Exclude<MessageActionName, 'ignore' | 'stop'>;
  /** The part touched (absent for `meta`, `finish` and `transient`). */
  part?: number;
  /** For a splice: the part's body becomes `body.slice(0, at) + frame.text`. */
  at?: number;
  frame: MessageFrame;
}

export interface MessageReaderOptions {
  streamId: string;
  /** The durable message the reader joins holding (none: the empty message). */
  durable?: DurableMessage | null;
  onUpdate?: (update: MessageReaderUpdate) => void;
  onStop?: (reason: CoreStopReason) => void;
}

/** The reader of a message: accumulates its parts from the subscription's frames. */
export declare class MessageReader {
  constructor(options: MessageReaderOptions);
  readonly streamId: string;
  /** Why it stopped, or null while live. */
  readonly stopped: CoreStopReason | null;
  /** Where a reconnect resumes (`Last-Event-ID`). */
  readonly resumeFrom: number;
  /** The message held, as its document's JSON text. */
  readonly document: string;
  /** The message held, in the stored document's shape (a new object after every change). */
  readonly message: StoredMessage;
  /** Every part by number, part 0 included, each shaped as a document entry. */
  readonly parts: readonly StoredPart[];
  /** One frame of the subscription; returns whether the reader is still live. */
  push(frame: unknown): boolean;
}
