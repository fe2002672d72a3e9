// Types of `twoplane/wasm-full`: every name of `twoplane/wasm` (over the full build, where the
// message codec works), plus the AI SDK's UI message stream in bulk.
export * from './wasm.js';
import type { TwoplaneApi } from './wasm.js';
import type { MessageFrame, StreamStatus } from './index.js';

/** A chunk of the AI SDK's UI message stream (`{ type: 'text-delta', id, delta }`, ...). */
export type UiMessageChunk = { type: string } & Record<string, unknown>;

/** What `uiIngest` answers. */
export interface UiIngested {
  /** The message's frames, in order (what `twoplane serve` stores and relays). */
  frames: MessageFrame[];
  /** The stream ended with an `abort` chunk. */
  aborted: boolean;
}

/** How the stream a reader resumes ended. */
export interface UiResumeOptions {
  /** Where the reader joins (UTF-16 offset in the message's coordinate; default 0). */
  from?: number;
  /** Default `complete`. */
  status?: StreamStatus;
  /** The error of a stream that ended with `error`. */
  error?: string | null;
}

/**
 * A whole UI message stream's chunks as the message frames the core maps them to. Throws a
 * TwoplaneError with the core's kind (`invalid_field`, `missing_field`, ...) for a chunk it
 * refuses, `invalid_argument` for arguments of the wrong type.
 */
export declare function uiIngest(streamId: string, chunks: readonly UiMessageChunk[]): UiIngested;

/**
 * The UI message stream chunks a reader joining the message `frames` make at `from` reads: the
 * start, the compacted replay of the message there, a chunk per later frame, the end.
 */
export declare function uiResume(streamId: string, frames: readonly MessageFrame[], options?: UiResumeOptions): UiMessageChunk[];

/** Every public name, with the UI message stream calls. */
export interface TwoplaneFullApi extends TwoplaneApi {
  uiIngest: typeof uiIngest;
  uiResume: typeof uiResume;
}
declare const api: TwoplaneFullApi;
export default api;
