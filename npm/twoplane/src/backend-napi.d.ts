// Types of backend-napi.js: loading the Node addon and adapting it to the backend interface.
import type { TwoplaneBackend } from './wasm.js';
import type { StreamFrame, TwoplaneError } from './index.js';

/** The raw exports of the addon (bindings/node); use the backend object, not these. */
export interface TwoplaneAddon {
  Conform: new (from: number) => unknown;
  Reader: new (durableLen: number) => unknown;
  splicePointOf(durableLen: number, producedLen: number): number;
  assemblyOrderOf(seqs: Float64Array): Uint32Array;
  streamChunkId(streamId: string, seq: number): string;
  streamChunkIdText(streamId: string, seqText: string): string;
  streamChunkTableDdlOf(tables: unknown, dialect: unknown): string[];
  streamRequestOf(url: string, lastEventId: string | null | undefined, requireAbsolute: boolean): { streamId: string; from: number };
  subscribeUrlOf(endpoint: string, streamId: string, from: number): string;
  encodeSseJson(json: string, resumePoints: Float64Array, count: number): string;
  MessageConform: new (from: number) => unknown;
  MessageReaderCore: new (len: number, parts: Float64Array, ended: Float64Array) => unknown;
}

export type LoadedAddon =
  | { addon: TwoplaneAddon; file: string; error?: undefined }
  | { addon: null; file: null; error: TwoplaneError };

/** Finds and loads the addon (`$TWOPLANE_NODE_ADDON`, else `native/twoplane.<platform>.node`).
 *  Never throws. */
export declare function loadAddon(): LoadedAddon;

/** The backend object (docs/js-backend.md) over a loaded addon. */
export declare function napiBackend(addon: TwoplaneAddon): TwoplaneBackend;

/** The batch SSE encoder over the addon: exactly `frames.map(encodeSseEvent).join('')`. */
export declare function napiSseBatchEncoder(
  addon: TwoplaneAddon,
  frameResumePoint: (frame: StreamFrame) => number | undefined,
  encodeSseEvent: (frame: StreamFrame) => string,
): (frames: readonly StreamFrame[]) => string;

/** Frames per native call of the batch encoder. */
export declare const SSE_SLICE: number;
