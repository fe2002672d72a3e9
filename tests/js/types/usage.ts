// Type check of the Node entries' declarations (index.node.d.ts, node.d.ts, backend-napi.d.ts):
// compiled with `tsc --noEmit` by scripts/test-node.sh, never run.
import api, {
  StreamRelayConform,
  encodeSseEvents,
  encodeSseEvent,
  streamChunkTableDdl,
  streamRequestFromHttp,
  ROUTES,
  routesInUse,
  SSE_BATCH_MIN,
  addonError,
  backend,
  type StreamFrame,
} from '../../../npm/twoplane/src/index.node.js';
import nodeApi, { addonFile, backend as napiBackendObject, uiIngest, type UiIngested } from '../../../npm/twoplane/src/node.js';
import { loadAddon, napiBackend, napiSseBatchEncoder, SSE_SLICE } from '../../../npm/twoplane/src/backend-napi.js';

const frames: StreamFrame[] = [{ type: 'chunk', from: 0, seq: 1, text: 'a' }, { type: 'absent' }];
const sse: string = encodeSseEvents(frames) + encodeSseEvent(frames[0]) + api.encodeSseEvents(frames) + nodeApi.encodeSseEvents(frames);
const conform = new StreamRelayConform('s', 0, (reason: string) => void reason);
const out: StreamFrame[] = conform.feed(frames[0]);
const ddl: string[] = streamChunkTableDdl({ message: 'm', chunks: 'c' }, { name: 'postgres' });
const req: { streamId: string; from: number } = streamRequestFromHttp({ url: 'http://h/?streamId=s', headers: { get: () => null } });
const route: 'napi' | 'wasm' = ROUTES.Conform;
const readerRoute: 'napi' | 'wasm' = ROUTES.MessageReaderCore;
const core = new backend.MessageReaderCore(3, Float64Array.of(0, 2), Float64Array.of(1));
const action: number = core.feed(1, false, 3, 4, 1, 0, 0) + core.part + core.at + core.stopCode() + core.resumeFrom();
const inUse: string = routesInUse.encodeSseEvents;
const min: number = SSE_BATCH_MIN + SSE_SLICE;
const kind: string | undefined = addonError?.kind;
const name: string = backend.name + napiBackendObject.name + addonFile;
const loaded = loadAddon();
if (loaded.addon !== null) {
  const be = napiBackend(loaded.addon);
  const enc = napiSseBatchEncoder(loaded.addon, api.frameResumePoint, api.encodeSseEvent);
  void [be.splicePoint(1, 2), enc(frames)];
}
// twoplane/node has the UI mapping, by name and on its default export.
const ingested: UiIngested = uiIngest('s', [{ type: 'start' }]);
const aborted: boolean = nodeApi.uiIngest('s', []).aborted && ingested.aborted;
void [sse, out, ddl, req, route, readerRoute, action, inUse, min, kind, name, aborted];
