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
