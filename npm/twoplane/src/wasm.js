// `twoplane/wasm`: the package over the WebAssembly build, in browsers, bundlers and Node alike.
//
// Loading: the .wasm sits next to wasm-bindgen's `--target web` glue in ../wasm/. In a browser
// (and in Vite, which bundles the file it sees in `new URL('…', import.meta.url)`) it is fetched
// and compiled by streaming; from a `file:` URL (Node) it is read from disk and compiled
// synchronously, since Node's fetch does not read files. Either way the module is ready before
// this module finishes evaluating (top-level await), so every export works synchronously.

import init, * as glue from '../wasm/twoplane_wasm.js';
import { buildApi } from './facade.js';
import { wasmBackend } from './backend-wasm.js';

const wasmUrl = new URL('../wasm/twoplane_wasm_bg.wasm', import.meta.url);

// The instance's exports: the per-frame calls go to them directly.
let raw;
if (wasmUrl.protocol === 'file:') {
  // Hidden from bundlers: this branch only ever runs where files are files.
  const fsModule = 'node:fs';
  const { readFileSync } = await import(/* @vite-ignore */ /* webpackIgnore: true */ fsModule);
  raw = glue.initSync({ module: readFileSync(wasmUrl) });
} else {
  raw = await init({ module_or_path: wasmUrl });
}

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
