// Types of `twoplane/node`: every public name (over the native addon, always), plus the backend
// object, where the addon was loaded from, and the facade builder; and the AI SDK's UI message
// stream in bulk, the very calls of `twoplane/wasm-full` (ui-calls.js serves both), so their
// types are that entry's.
export * from './index.js';
export { uiIngest, uiResume } from './wasm-full.js';
export type { UiIngested, UiMessageChunk, UiResumeOptions } from './wasm-full.js';
import type { TwoplaneApi, TwoplaneBackend } from './wasm.js';
import type { TwoplaneFullApi } from './wasm-full.js';

/** The addon's backend object (docs/js-backend.md), for code that mixes backends. */
export declare const backend: TwoplaneBackend;
/** The path the addon was loaded from. */
export declare const addonFile: string;
/** Build every public name over a backend. */
export declare function buildApi(backend: TwoplaneBackend): TwoplaneApi;
declare const api: TwoplaneFullApi;
export default api;
