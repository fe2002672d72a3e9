// `twoplane/wasm`: the package over the WebAssembly build, in browsers, bundlers and Node alike.
//
// Loading (wasm-load.js): the .wasm sits next to wasm-bindgen's `--target web` glue in ../wasm/,
// fetched and compiled by streaming in a browser or bundler, read from disk from a `file:` URL;
// ready before this module finishes evaluating, so every export works synchronously.

import init, * as glue from '../wasm/twoplane_wasm.js';
import { buildApi } from './facade.js';
import { wasmBackend } from './backend-wasm.js';
import { instantiate } from './wasm-load.js';

const wasmUrl = new URL('../wasm/twoplane_wasm_bg.wasm', import.meta.url);

// The instance's exports: the per-frame calls go to them directly.
const raw = await instantiate(init, glue, wasmUrl);

/** The backend object (docs/js-backend.md) over the wasm build, for code that mixes backends. */
export const backend = wasmBackend(glue, raw);

const api = buildApi(backend);

// The public names of the namespace above: written by scripts/gen-npm-entries.mjs from buildApi
// (and ui-calls.js), not by hand; tests/js/entries.test.mjs fails when they are not current.
export const {
  STREAM_STATUS_STREAMING, STREAM_SSE_HEADERS, frameResumePoint, spliceStreamText,
  assembleDurableText, streamChunkId, streamChunkTableDdl, streamRequestFromHttp,
  StreamRelayConform, StreamReader, SseDecoder, encodeSseEvent, encodeSseEvents, TwoplaneError,
  encodeMessageFrame, encodeMessageEvent, decodeMessageFrame, messageResumePoint,
  assembleDurableMessage, DurableMessage, MessageRelayConform, MessageReader,
} = api;
export { buildApi };
export default api;
