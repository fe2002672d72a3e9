// Compiled with `tsc --noEmit` (types.test.mjs): the package's hand-written types must accept
// this usage and reject what the @ts-expect-error lines do.
import {
  STREAM_STATUS_STREAMING,
  STREAM_SSE_HEADERS,
  StreamReader,
  StreamRelayConform,
  TwoplaneError,
  assembleDurableText,
  frameResumePoint,
  spliceStreamText,
  streamChunkId,
  streamChunkTableDdl,
  streamRequestFromHttp,
  type StreamFrame,
  type StreamStatus,
  type StreamStopReason,
} from 'twoplane';
import * as wasm from 'twoplane/wasm';
import * as full from 'twoplane/wasm-full';
import { useStreamedMessage, useStreamedText, useStreamedTextState } from 'twoplane/react';

const status: 'streaming' = STREAM_STATUS_STREAMING;
const contentType: string = STREAM_SSE_HEADERS['content-type'];

function describe(frame: StreamFrame): string {
  switch (frame.type) {
    case 'open':
      return `${frame.streamId} from ${frame.from}`;
    case 'chunk':
      return frame.text;
    case 'durable':
      return String(frame.seq);
    case 'end': {
      const s: StreamStatus = frame.status;
      return frame.error ?? s;
    }
    case 'stale':
      return `${frame.floorSeq}/${frame.durableSeq}`;
    case 'absent':
      return 'absent';
  }
}

const chunk = { type: 'chunk', from: 0, seq: 2, text: 'hi' } as const;
const id: number = frameResumePoint(chunk);
const none: undefined = frameResumePoint({ type: 'absent' });
const text: string = spliceStreamText('ab', 'xyz') + assembleDurableText({ body: 'x' }, [{ seq: 1, text: 'y' }]);
const rowId: string = streamChunkId('m1', 42);
const ddl: string[] = streamChunkTableDdl({ message: 'messages', chunks: 'chunks', columns: { chunkText: 'slice' } }, { name: 'postgres' });
const req = streamRequestFromHttp({ url: '/s?streamId=a', headers: new Headers() });
const from: number = req.from;

const pass = new StreamRelayConform('m1', 0, (reason: string) => console.warn(reason));
const out = pass.feed(chunk);
const first: StreamFrame = out[0];
pass.feed(JSON.parse('{"type":"bogus"}'));
const tail: StreamFrame[] = pass.end();

const reader = new StreamReader({
  endpoint: '/api/stream',
  streamId: 'm1',
  durableText: 'Hel',
  transport: 'fetch',
  backoff: { initialMs: 100, maxMs: 2000 },
  onUpdate(u) {
    // A splice keeps the text reader's fields; other changes name their action and frame.
    if (u.action === 'splice') {
      const { cut, appended, text: whole, part } = u;
      const n: number = cut + appended.length + whole.length + part;
      void n;
    } else {
      const f: wasm.MessageFrame = u.frame;
      // @ts-expect-error: only a splice has a cut
      void u.cut;
      void f;
    }
  },
  onStop(reason: StreamStopReason, frame) {
    if (frame?.type === 'end') console.log(frame.status, reason);
  },
}).start();
const shown: string = reader.rendered('Hello', 'm1');
const stopped: StreamStopReason | null = reader.stopped;
const live: boolean = reader.push({ type: 'chunk', from: 3, seq: 5, text: 'lo' });

try {
  streamChunkTableDdl({ message: 'm', chunks: 'a"b' }, 'sqlite');
} catch (err) {
  if (err instanceof TwoplaneError && err.kind === 'invalid_identifier') console.log(err.message);
}

const w = new wasm.StreamRelayConform('m1', 0);
const backendName: string = wasm.backend.name;
const verdict: number = new wasm.backend.Conform(0).feed(1, false, 0, 1, 1);

function Chat(props: { id: string; body: string; live: boolean }): string {
  const t: string = useStreamedText({ endpoint: '/api/stream', streamId: props.id, durableText: props.body, enabled: props.live });
  const s = useStreamedTextState({ endpoint: '/api/stream', streamId: props.id });
  return t + (s.stopped ?? '') + s.connections;
}

// @ts-expect-error: a chunk needs its text
const bad: StreamFrame = { type: 'chunk', from: 0, seq: 1 };
// @ts-expect-error: not a status
const badStatus: StreamStatus = 'streaming';
// @ts-expect-error: the reader needs a stream id
new StreamReader({ endpoint: '/x' });
// @ts-expect-error: no such transport
new StreamReader({ streamId: 's', transport: 'websocket' });

export { status, contentType, describe, id, none, text, rowId, ddl, from, first, tail, shown, stopped, live, w, backendName, verdict, Chat, bad, badStatus };

// Messages made of parts (docs/contract.md §8).
{
  const durable: wasm.DurableMessage = wasm.assembleDurableMessage({ body: null, seq: 0 }, [{ seq: 3, text: '', parts: '[]' }]);
  const len: number = durable.len;
  const table: number[] | null = durable.parts;
  const doc: wasm.StoredMessage = durable.message;
  const firstKind: string | undefined = doc.parts[0]?.type;
  const reader = new wasm.MessageReader({
    streamId: 's',
    durable,
    onUpdate: (u: wasm.MessageReaderUpdate) => {
      const where: number | undefined = u.at;
      void where;
    },
    onStop: (reason: StreamStopReason) => void reason,
  });
  const live: boolean = reader.push({ type: 'part', from: 0, seq: 1, part: 1, kind: 'reasoning' });
  const resume: number = reader.resumeFrom;
  const pass = new wasm.MessageRelayConform('s', 0, (reason: string) => void reason);
  const out: wasm.MessageFrame[] = pass.feed({ type: 'meta', from: 0, seq: 1 });
  const json: string = wasm.encodeMessageFrame({ type: 'finish', from: 0, seq: 1, reason: 'stop' });
  const back: wasm.MessageFrame = wasm.decodeMessageFrame(json);
  const id: number | undefined = wasm.messageResumePoint(back);
  const event: string = wasm.encodeMessageEvent({ type: 'chunk', from: 0, seq: 1, text: 'a', part: 1, at: 0 });
  // @ts-expect-error a part frame names its kind
  wasm.encodeMessageFrame({ type: 'part', from: 0, seq: 1, part: 1 });
  void [len, table, firstKind, live, resume, out, id, event];
}

// StreamReader holding a message made of parts, and the hook.
{
  const durable = wasm.assembleDurableMessage({ seq: 0 }, [{ seq: 1, text: '', parts: '[{"type":"part","from":0,"seq":1,"part":1,"kind":"reasoning"}]' }]);
  const reader = new StreamReader({
    endpoint: '/api/stream',
    streamId: 'm1',
    durable,
    onUpdate(u: wasm.StreamReaderUpdate) {
      switch (u.action) {
        case 'splice': {
          const at: number = u.cut;
          void at;
          break;
        }
        case 'start':
        case 'end':
        case 'set': {
          const part: number = u.part;
          const frame: wasm.MessagePartFrame | wasm.MessagePartEndFrame | wasm.MessageSetFrame = u.frame;
          void [part, frame];
          break;
        }
        default: {
          const none: undefined = u.part;
          const kind: 'meta' | 'finish' | 'transient' = u.action;
          void [none, kind];
        }
      }
    },
  });
  const message: wasm.StoredMessage = reader.message;
  const parts: readonly wasm.StoredPart[] = reader.parts;
  const body: string | undefined = parts[1]?.text ?? parts[1]?.inputText;
  const shown: wasm.StoredMessage = reader.renderedMessage(durable);
  const other: wasm.StoredMessage = reader.renderedMessage(null, 'other');
  const reasons: string | undefined = message.finishReason;
  const messageReaderParts: readonly wasm.StoredPart[] = new wasm.MessageReader({ streamId: 'm1', durable }).parts;
  void [body, shown, other, reasons, messageReaderParts];

  function Live(props: { id: string; row: wasm.DurableMessage | null; live: boolean }): string {
    const state = useStreamedMessage({ endpoint: '/api/stream', streamId: props.id, durable: props.row, enabled: props.live, backoff: { initialMs: 100 } });
    const m: wasm.StoredMessage = state.message;
    const stopped: StreamStopReason | null = state.stopped;
    return m.parts.map((p) => p.type).join() + (stopped ?? '') + state.connections;
  }
  // @ts-expect-error: the hook takes a DurableMessage, not the row's text
  useStreamedMessage({ endpoint: '/x', streamId: 's', durable: 'text' });
  void Live;
}

// `twoplane/wasm-full`: every name of `twoplane/wasm`, plus the UI message stream calls.
{
  const { frames, aborted }: full.UiIngested = full.uiIngest('m', [{ type: 'start' }, { type: 'finish' }]);
  const chunks: full.UiMessageChunk[] = full.uiResume('m', frames, { from: 0, status: 'cancelled', error: null });
  const type: string = chunks[0].type;
  const json: string = full.encodeMessageFrame(frames[0]);
  const reader: full.StreamReader = new full.StreamReader({ streamId: 'm', durableText: '' });
  const viaDefault: full.UiMessageChunk[] = full.default.uiResume('m', full.default.uiIngest('m', []).frames);
  void [aborted, type, json, reader, viaDefault];
  // @ts-expect-error: the status is a stream status
  full.uiResume('m', frames, { status: 'done' });
  // @ts-expect-error: a chunk has a type
  full.uiIngest('m', [{ delta: 'x' }]);
}
