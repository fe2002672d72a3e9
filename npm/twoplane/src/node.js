// `twoplane/node`: the package over the native addon, always (no wasm fallback, no routing).
// Importing it throws a TwoplaneError (kind `invalid_state`) when no addon loads on this platform;
// use the default entry (`twoplane`) for the automatic fallback to the wasm build.
//
// Same names and behaviour as every other entry, plus `encodeSseEvents(frames)`, the batch SSE
// encoder, here always through the addon (see backend-napi.js for how it stays byte-identical to
// `encodeSseEvent` per frame), and `uiIngest` / `uiResume`, the AI SDK's UI message stream mapped
// by the core in bulk (Node only: the browser build leaves them out to stay small).

import { buildApi } from './facade.js';
import { loadAddon, napiBackend, napiSseBatchEncoder, napiUiCalls } from './backend-napi.js';

const loaded = loadAddon();
if (loaded.addon === null) throw loaded.error;

/** The backend object (docs/js-backend.md) over the addon, for code that mixes backends. */
export const backend = napiBackend(loaded.addon);
/** Where the addon was loaded from. */
export const addonFile = loaded.file;

const base = buildApi(backend);
const api = {
  ...base,
  encodeSseEvents: napiSseBatchEncoder(loaded.addon, base.frameResumePoint, base.encodeSseEvent),
  ...napiUiCalls(loaded.addon),
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
