// Types of `twoplane` in Node (index.node.js): every public name, plus how the entry chose its
// builds: the routed backend object, the measured routes, and why the addon did not load.
export * from './index.js';
import type { TwoplaneApi, TwoplaneBackend } from './wasm.js';
import type { TwoplaneError } from './index.js';

export type TwoplaneBuild = 'napi' | 'wasm';

/** The routed backend object: `name` is "napi" when the addon loaded, else "wasm". */
export declare const backend: TwoplaneBackend;
/** The build each member is routed to when both load (measured by bench/node.mjs). */
export declare const ROUTES: Readonly<{
  Conform: TwoplaneBuild;
  Reader: TwoplaneBuild;
  splicePoint: TwoplaneBuild;
  assemblyOrder: TwoplaneBuild;
  streamChunkId: TwoplaneBuild;
  streamChunkIdText: TwoplaneBuild;
  streamChunkTableDdl: TwoplaneBuild;
  streamRequestFromHttp: TwoplaneBuild;
  subscribeUrl: TwoplaneBuild;
  encodeSseEvents: TwoplaneBuild;
  MessageConform: TwoplaneBuild;
  MessageReaderCore: TwoplaneBuild;
  messageFrame: TwoplaneBuild;
  messageResumePoint: TwoplaneBuild;
  messageErrorField: TwoplaneBuild;
  assembleMessage: TwoplaneBuild;
}>;
/** The smallest batch `encodeSseEvents` hands to the addon; smaller ones stay in JavaScript. */
export declare const SSE_BATCH_MIN: number;
/** The build serving each member in this process (`"javascript"`: the encoder without the addon). */
export declare const routesInUse: Readonly<Record<keyof typeof ROUTES, TwoplaneBuild | 'javascript'>>;
/** Why the addon did not load (the wasm build serves everything then), or null. */
export declare const addonError: TwoplaneError | null;
/** Build every public name over a backend. */
export declare function buildApi(backend: TwoplaneBackend): TwoplaneApi;
declare const api: TwoplaneApi;
export default api;
