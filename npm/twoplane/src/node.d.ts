// Types of `twoplane/node`: every public name (over the native addon, always), plus the backend
// object, where the addon was loaded from, and the facade builder.
export * from './index.js';
import type { TwoplaneApi, TwoplaneBackend } from './wasm.js';

/** The addon's backend object (docs/js-backend.md), for code that mixes backends. */
export declare const backend: TwoplaneBackend;
/** The path the addon was loaded from. */
export declare const addonFile: string;
/** Build every public name over a backend. */
export declare function buildApi(backend: TwoplaneBackend): TwoplaneApi;
declare const api: TwoplaneApi;
export default api;

import type { MessageFrame, StreamStatus } from './index.js';

/** A chunk of the AI SDK's UI message stream (`{ type: 'text-delta', id, delta }`, ...). */
export type UiMessageChunk = { type: string } & Record<string, unknown>;

/**
 * A whole UI message stream's chunks as the message frames the core maps them to (what
 * `twoplane serve` stores and relays for `POST .../ui-message-stream`). Throws a TwoplaneError
 * with the core's kind (`invalid_field`, `invalid_json`, ...) for a chunk it refuses.
 */
export declare function uiIngest(streamId: string, chunks: readonly UiMessageChunk[]): {
  frames: MessageFrame[];
  /** The stream ended with an `abort` chunk. */
  aborted: boolean;
};

/**
 * The UI message stream chunks a reader joining the message `frames` make at `from` (UTF-16
 * offset, default 0) reads, the stream having ended with `status` (default `complete`) and
 * `error` (for `error`).
 */
export declare function uiResume(
  streamId: string,
  frames: readonly MessageFrame[],
  options?: { from?: number; status?: StreamStatus; error?: string | null },
): UiMessageChunk[];
