// `twoplane/wasm-full`: the package over the full WebAssembly build, an opt-in second module
// (npm/twoplane/wasm-full/, built by scripts/build-wasm.sh from bindings/wasm with the features
// `message-text` and `ui`). It has every name of `twoplane/wasm`, with the message codec the
// shipped module leaves out (`encodeMessageFrame`, `decodeMessageFrame`, ...), plus the AI SDK's
// UI message stream mapped by the core in bulk: `uiIngest` and `uiResume`, the same calls with the
// same answers as `twoplane/node`'s over the addon. For runtimes that cannot load the addon (edge
// functions, workers) and need those; a page that only reads streams keeps `twoplane`, whose
// module is about two and a half times smaller (docs/js-backend.md).
//
// Loading is wasm.js's (wasm-load.js): fetched and compiled by streaming in a browser or bundler,
// read from disk from a `file:` URL, ready before this module finishes evaluating.

import init, * as glue from '../wasm-full/twoplane_wasm_full.js';
import { buildApi } from './facade.js';
import { callCore, wasmBackend } from './backend-wasm.js';
import { toUnits } from './units.js';
import { uiCalls } from './ui-calls.js';
import { instantiate } from './wasm-load.js';

const wasmUrl = new URL('../wasm-full/twoplane_wasm_full_bg.wasm', import.meta.url);

const raw = await instantiate(init, glue, wasmUrl);

/** The backend object (docs/js-backend.md) over the full build; it has the optional codec. */
export const backend = wasmBackend(glue, raw);

const api = {
  ...buildApi(backend),
  // Text crosses as UTF-16 code units (toUnits), never through wasm-bindgen's lossy strings.
  ...uiCalls({
    str: toUnits,
    ingest: (id, json) => callCore(() => glue.uiIngest(id, json)),
    resume: (id, json, at, status, error) => callCore(() => glue.uiResume(id, json, at, status, error)),
  }),
};

// The public names of the namespace above: written by scripts/gen-npm-entries.mjs from buildApi
// (and ui-calls.js), not by hand; tests/js/entries.test.mjs fails when they are not current.
export const {
  STREAM_STATUS_STREAMING, STREAM_SSE_HEADERS, frameResumePoint, spliceStreamText,
  assembleDurableText, streamChunkId, streamChunkTableDdl, streamRequestFromHttp,
  StreamRelayConform, StreamReader, SseDecoder, encodeSseEvent, encodeSseEvents, TwoplaneError,
  encodeMessageFrame, encodeMessageEvent, decodeMessageFrame, messageResumePoint,
  assembleDurableMessage, DurableMessage, MessageRelayConform, MessageReader, uiIngest, uiResume,
} = api;
export { buildApi };
export default api;
