// `twoplane` in Node (the package's default entry there): the native addon where one exists for
// the platform, the wasm build where none does, and, where both load, each operation routed to
// the one measured faster in Node.
//
// What it guarantees:
// - The same names, types and behaviour as every other entry (both backends run the same core;
//   tests/js replays the shared vectors and a differential property test against each).
// - Importing never fails while either build loads. When neither does, it throws a TwoplaneError
//   (kind `invalid_state`) naming what was tried.
// - `backend.name` is `"napi"` when the addon loaded, else `"wasm"`; `routesInUse` says, member
//   by member, which build serves it.
//
// ROUTING follows what bench/node.mjs (bash scripts/bench-node.sh) measured; ROUTES below records
// the numbers behind each choice.

import { buildApi } from './facade.js';
// The module, not its class by name: the class is also one of the public names exported below.
import * as errors from './errors.js';
import { loadAddon, napiBackend, napiSseBatchEncoder } from './backend-napi.js';

/**
 * Which build serves each member when both load, as measured by bench/node.mjs (Node 20.20,
 * x86_64 AMD EPYC, 2 cores, shared; each build in its own process; best of 3 processes x 5 runs,
 * CPU time). A Node-API call costs a few hundred nanoseconds before it does anything (here
 * ~440 ns for a numbers-only method, ~145 ns for a function), a call into wasm ~6-16 ns, so
 * everything called per frame, or with numbers only, goes to wasm. The addon wins only where
 * strings cross in both directions and the wasm glue copies them unit by unit (streamChunkId),
 * and for batches of SSE events, where one native pass replaces per-frame JavaScript.
 *
 *   member                 measured through              addon        wasm
 *   Conform                StreamRelayConform.feed       491-503 ns   26-32 ns per frame (plain JS model 15.1-15.6,
 *                          so the routed feed is 1.7-1.9x plain JavaScript; the JS-to-wasm call alone is ~11 ns)
 *   Reader                 StreamReader.push             885 ns       39.7 ns per frame
 *   splicePoint            spliceStreamText              160 ns       18.0 ns
 *   assemblyOrder          assembleDurableText, 64 rows  6.9-7.9 us   4.3-6.4 us
 *   streamChunkId          streamChunkId                 382 ns       721 ns
 *   streamChunkTableDdl    streamChunkTableDdl           4.4-7.9 us   3.3-3.5 us
 *   streamRequestFromHttp  streamRequestFromHttp         1.9-3.5 us   1.4-1.7 us
 *   encodeSseEvents        per frame, against JSON.stringify + template per frame (JS):
 *                          1/call: addon 1217, JS 450 ns; 4: 580 vs 444; 16: 446 vs 457;
 *                          32: 393 vs 464; 64: 355 vs 461; 256: 352 vs 467; 1024: 362 vs 471
 *                          (191 MB/s against 144 MB/s at 256 frames per call), so the addon
 *                          from SSE_BATCH_MIN frames per call, JavaScript below.
 *   MessageReaderCore      StreamReader.push per delta   1.05-1.32 us 0.08-0.15 us (bench/js/message-node.mjs,
 *                          1,000 to 100,000 deltas over 1 to 100 parts, Node 20.20, 2 December)
 *
 * Re-run the benchmark and update this table when a binding changes.
 */
export const ROUTES = Object.freeze({
  Conform: 'wasm',
  Reader: 'wasm',
  splicePoint: 'wasm',
  assemblyOrder: 'wasm',
  streamChunkId: 'napi',
  // The same call with a second string instead of a number (a `seq` that was not a number):
  // routed with streamChunkId, not measured on its own.
  streamChunkIdText: 'napi',
  streamChunkTableDdl: 'wasm',
  streamRequestFromHttp: 'wasm',
  // Once per connection, not per frame: not worth a route of its own; the wasm build like the
  // request parser above.
  subscribeUrl: 'wasm',
  encodeSseEvents: 'napi',
  // Messages made of parts. The conform pass is per frame, so it follows Conform to wasm; so
  // does the numeric message reader, which StreamReader.push calls per frame (measured above).
  // The codec is the addon's, since the shipped wasm build leaves it out for its size;
  // assembleMessage (the core's assembly, which the package's JavaScript assembly is tested
  // against) likewise.
  MessageConform: 'wasm',
  MessageReaderCore: 'wasm',
  messageFrame: 'napi',
  messageResumePoint: 'napi',
  messageErrorField: 'napi',
  assembleMessage: 'napi',
});

/** The smallest batch the addon's SSE encoder is measured faster for (see ROUTES); below it the
 *  fixed cost of the call (a typed array, two strings across Node-API) is not paid back. */
export const SSE_BATCH_MIN = 16;

const loaded = loadAddon();
let wasmApi = null;
let wasmError = null;
try {
  wasmApi = await import('./wasm.js');
} catch (err) {
  wasmError = err;
}

if (loaded.addon === null && wasmApi === null) {
  throw new errors.TwoplaneError(
    'invalid_state',
    `twoplane: neither build loads here: ${loaded.error.message}; wasm: ${wasmError?.message ?? wasmError}`,
    { cause: wasmError },
  );
}

const napi = loaded.addon === null ? null : napiBackend(loaded.addon);
const wasm = wasmApi === null ? null : wasmApi.backend;

/** Member by member: the routed choice when both builds loaded, else the one that did. */
const routes = {};
const backend = { name: napi !== null ? 'napi' : 'wasm' };
// Every member ROUTES names is a backend member, but the encoder, which is the namespace's (below).
for (const member of Object.keys(ROUTES).filter((m) => m !== 'encodeSseEvents')) {
  const from = napi === null ? 'wasm' : wasm === null ? 'napi' : ROUTES[member];
  routes[member] = from;
  backend[member] = (from === 'napi' ? napi : wasm)[member];
}

const base = buildApi(backend);
routes.encodeSseEvents = napi !== null && ROUTES.encodeSseEvents === 'napi' ? 'napi' : 'javascript';
let encodeSseEventsRouted = base.encodeSseEvents;
if (routes.encodeSseEvents === 'napi') {
  const native = napiSseBatchEncoder(loaded.addon, base.frameResumePoint, base.encodeSseEvent);
  const js = base.encodeSseEvents;
  encodeSseEventsRouted = function encodeSseEvents(frames) {
    return Array.isArray(frames) && frames.length >= SSE_BATCH_MIN ? native(frames) : js(frames);
  };
}
const api = { ...base, encodeSseEvents: encodeSseEventsRouted };

export { backend };
/** Which build serves each member (`"napi"`, `"wasm"`, or `"javascript"` for the encoder). */
export const routesInUse = Object.freeze(routes);
/** Why the addon did not load, when it did not (the wasm build serves everything then). */
export const addonError = loaded.addon === null ? loaded.error : null;

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
