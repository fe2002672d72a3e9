// Replays the shared vectors (tests/vectors/*.json, format in tests/vectors/README.md) through the
// package's public API. Pure ECMAScript with no Node or DOM import, so the very same module runs
// in Node (node-vectors.test.mjs) and in a Chromium page (pages/vectors.html).
//
// `replayVectors(api, files)` takes the package's exports and the parsed files by name
// (`{ conform, reader, text, codec, sse, request, ddl, message, ui }`), and returns one result per case:
// `{ file, name, ok, detail }`. A case is compared as JSON text (key order included, since the
// contract fixes it), and a frame the contract passes through must be the very object fed in.

/** JSON text of `v`, for comparisons: keeps key order and escapes lone surrogates. */
const j = (v) => JSON.stringify(v === undefined ? null : v);

function result(file, name, fn) {
  try {
    const detail = fn();
    return { file, name, ok: detail === null, detail };
  } catch (err) {
    return { file, name, ok: false, detail: `threw ${err?.kind ?? ''} ${err?.stack ?? err}` };
  }
}

function conformCase(api, c) {
  const violations = [];
  const pass = new api.StreamRelayConform(c.streamId, c.from, (reason) => violations.push(reason));
  for (let i = 0; i < c.calls.length; i++) {
    const call = c.calls[i];
    const want = c.expect[i];
    violations.length = 0;
    let out;
    if ('feed' in call) out = pass.feed(call.feed);
    else if ('end' in call) out = pass.end();
    else out = pass.fail();
    if (!Array.isArray(out)) return `call ${i}: returned ${j(out)}, not an array`;
    if (j(out) !== j(want.out)) return `call ${i}: out ${j(out)}, want ${j(want.out)}`;
    if ('feed' in call) {
      for (let k = 0; k < out.length; k++) {
        if (j(want.out[k]) === j(call.feed) && out[k] !== call.feed) {
          return `call ${i}: out[${k}] equals the frame fed but is another object`;
        }
      }
    }
    const got = violations.length === 0 ? null : violations.length === 1 ? violations[0] : violations;
    if (j(got) !== j(want.violation)) return `call ${i}: violation ${j(got)}, want ${j(want.violation)}`;
  }
  return null;
}

function readerCase(api, c) {
  let event = null;
  const reader = new api.StreamReader({
    streamId: c.streamId,
    durableText: c.durable,
    onUpdate(u) {
      event = { action: 'splice', at: u.cut };
    },
    onStop(reason) {
      event = { action: 'stop', reason };
    },
  });
  if (reader.text !== c.durable) return `seeded with ${j(reader.text)}, want ${j(c.durable)}`;
  for (let i = 0; i < c.frames.length; i++) {
    event = null;
    reader.push(c.frames[i]);
    const got = event ?? { action: 'ignore' };
    if (j(got) !== j(c.expect[i])) return `frame ${i}: ${j(got)}, want ${j(c.expect[i])}`;
  }
  if (reader.text !== c.text) return `text ${j(reader.text)}, want ${j(c.text)}`;
  if (reader.resumeFrom !== c.resumeFrom) return `resumeFrom ${reader.resumeFrom}, want ${c.resumeFrom}`;
  return null;
}

function sseCase(api, c) {
  const events = [];
  const decoder = new api.SseDecoder((data, event, id) => events.push({ event, data, id }));
  for (const bytes of c.chunks) decoder.push(new Uint8Array(bytes));
  decoder.end();
  if (j(events) !== j(c.events)) return `events ${j(events)}, want ${j(c.events)}`;
  if (decoder.lastEventId !== c.lastEventId) return `lastEventId ${j(decoder.lastEventId)}, want ${j(c.lastEventId)}`;
  if (decoder.retry !== c.retry) return `retry ${j(decoder.retry)}, want ${j(c.retry)}`;
  return null;
}

function requestCase(api, c) {
  let parses = true;
  try {
    new URL(c.url);
  } catch {
    parses = false;
  }
  if (parses !== c.absolute) return `new URL() ${parses ? 'parses' : 'refuses'} it, the vector says absolute=${c.absolute}`;
  const headers = { get: (name) => (name.toLowerCase() === 'last-event-id' ? c.lastEventId : null) };
  let got;
  try {
    got = api.streamRequestFromHttp({ url: c.url, headers });
  } catch (err) {
    if (!(err instanceof api.TwoplaneError)) return `threw a ${err?.name}, not a TwoplaneError: ${err}`;
    got = { error: err.kind };
  }
  const want = c.absolute ? c.expected : { error: 'invalid_url' };
  if (j(got) !== j(want)) return `${j(got)}, want ${j(want)}`;
  const nodeHeaders = c.lastEventId === null ? {} : { 'last-event-id': c.lastEventId };
  const node = api.streamRequestFromHttp({ url: c.url, headers: nodeHeaders });
  return j(node) === j(c.expected) ? null : `node-style ${j(node)}, want ${j(c.expected)}`;
}

function ddlCase(api, c) {
  let got;
  try {
    got = { expected: api.streamChunkTableDdl(c.tables, { name: c.dialect }) };
  } catch (err) {
    if (!(err instanceof api.TwoplaneError)) return `threw a ${err?.name}, not a TwoplaneError: ${err}`;
    got = { error: err.kind };
  }
  const want = 'error' in c ? { error: c.error } : { expected: c.expected };
  return j(got) === j(want) ? null : `${j(got)}, want ${j(want)}`;
}

function ddlArgsCase(api, c) {
  let got;
  try {
    got = { expected: api.streamChunkTableDdl(c.tables, c.dialect) };
  } catch (err) {
    if (!(err instanceof api.TwoplaneError)) return `threw a ${err?.name}, not a TwoplaneError: ${err}`;
    got = { error: err.kind };
  }
  const want = 'error' in c ? { error: c.error } : { expected: c.expected };
  return j(got) === j(want) ? null : `${j(got)}, want ${j(want)}`;
}

/** The URL a StreamReader requests when it starts, joined holding `c.from` units of durable text
 *  (its resume point), through a fetch that records the URL and never answers. */
function subscribeCase(api, c) {
  let url = null;
  const reader = new api.StreamReader({
    endpoint: c.endpoint,
    streamId: c.streamId,
    durableText: 'x'.repeat(c.from),
    fetch: (u) => {
      url = u;
      return new Promise(() => {});
    },
  });
  reader.start();
  reader.close();
  return url === c.url ? null : `${j(url)}, want ${j(c.url)}`;
}

// ---------------------------------------------------------------- message.json (§8)

/** A conform case through the message pass: the same checks as conformCase. */
function messageConformCase(api, c) {
  return conformCase({ StreamRelayConform: api.MessageRelayConform }, c);
}

/** A durable message folded from `frames` (from offset 0): one parts row holding them. */
function durableOf(api, frames) {
  return api.assembleDurableMessage({ seq: 0 }, [{ seq: 0, text: '', parts: JSON.stringify(frames) }]);
}

/** `parts` (every part by number) agrees with `message` (the document, which leaves an
 *  untouched part 0 out). */
function partsAgree(reader) {
  const listed = reader.message.parts;
  const all = reader.parts;
  if (all.length === listed.length) return j(all) === j(listed) ? null : `parts ${j(all)} are not the message's ${j(listed)}`;
  if (all.length === listed.length + 1 && j(all.slice(1)) === j(listed) && j(all[0]) === j({ type: 'text', text: '' })) return null;
  return `parts ${j(all)} do not match the message's ${j(listed)}`;
}

/** A reader case through MessageReader, or (`stream`) through StreamReader joined holding the
 *  same durable message: the same actions, message, parts and resume point. */
function messageReaderCase(api, c, stream) {
  let event = null;
  const durable = durableOf(api, c.durable);
  const options = {
    streamId: c.streamId,
    durable,
    onUpdate(u) {
      // The vector's key order: action, part, at (a StreamReader's splice names it `cut`).
      event = { action: u.action };
      if (u.part !== undefined) event.part = u.part;
      const at = stream ? u.cut : u.at;
      if (at !== undefined) event.at = at;
      if (u.action !== 'splice' && u.frame !== c.frames[i]) event.frame = 'not the frame pushed';
    },
    onStop(reason) {
      event = { action: 'stop', reason };
    },
  };
  const reader = stream ? new api.StreamReader(options) : new api.MessageReader(options);
  if (j(reader.message) !== durable.document) return `seeded with ${j(reader.message)}, want ${durable.document}`;
  if (reader.resumeFrom !== durable.len) return `joined at ${reader.resumeFrom}, want ${durable.len}`;
  let i = 0;
  for (; i < c.frames.length; i++) {
    event = null;
    reader.push(c.frames[i]);
    const got = event ?? { action: 'ignore' };
    if (j(got) !== j(c.expect[i])) return `frame ${i}: ${j(got)}, want ${j(c.expect[i])}`;
  }
  if (!stream && reader.document !== c.message) return `message ${j(reader.document)}, want ${j(c.message)}`;
  if (j(reader.message) !== c.message) return `message ${j(reader.message)}, want ${c.message}`;
  if (reader.resumeFrom !== c.resumeFrom) return `resumeFrom ${reader.resumeFrom}, want ${c.resumeFrom}`;
  return partsAgree(reader);
}

function messageAssembleCase(api, c) {
  const row = { body: c.body, document: c.stored, seq: c.seq };
  let m;
  try {
    m = api.assembleDurableMessage(row, c.chunks);
  } catch (err) {
    if (!(err instanceof api.TwoplaneError)) return `threw a ${err?.name}, not a TwoplaneError: ${err}`;
    return err.kind === c.error ? null : `threw ${err.kind}, want ${j(c.error ?? c.document)}`;
  }
  if ('error' in c) return `assembled ${j(m.document)}, want the error ${c.error}`;
  if (m.document !== c.document) return `document ${j(m.document)}, want ${j(c.document)}`;
  if (j(m.message) !== c.document) return `message ${j(m.message)}, want ${c.document}`;
  if (m.len !== c.len) return `len ${m.len}, want ${c.len}`;
  // The part table is every part's body length (part 0 first), null while the message is one text.
  const doc = JSON.parse(c.document);
  const bodies = doc.parts.map((p) => (p.type.startsWith('tool-') || p.type === 'dynamic-tool' ? p.inputText : p.text) ?? '');
  if (doc.parts[0]?.type !== 'text') bodies.unshift('');
  const structured = bodies.length > 1 || bodies[0].length !== c.len;
  const table = structured ? bodies.map((b) => b.length) : null;
  return j(m.parts) === j(table) ? null : `part table ${j(m.parts)}, want ${j(table)}`;
}

function messageDecodeErrorCase(api, c) {
  try {
    const f = api.decodeMessageFrame(c.input);
    return `decoded ${j(f)}, want the error ${c.kind}`;
  } catch (err) {
    if (!(err instanceof api.TwoplaneError)) return `threw a ${err?.name}, not a TwoplaneError: ${err}`;
    const got = { kind: err.kind, field: err.field };
    const want = { kind: c.kind, field: c.field };
    return j(got) === j(want) ? null : `${j(got)}, want ${j(want)}`;
  }
}

/** Whether this build has the message codec (the shipped wasm build does not). */
export function hasMessageCodec(api) {
  try {
    api.encodeMessageFrame({ type: 'absent' });
    return true;
  } catch (err) {
    if (err?.kind === 'invalid_state') return false;
    throw err;
  }
}

/** Without the codec, every name that needs it throws `invalid_state`, a TwoplaneError. */
function codecRefused(api) {
  const calls = {
    encodeMessageFrame: () => api.encodeMessageFrame({ type: 'absent' }),
    encodeMessageEvent: () => api.encodeMessageEvent({ type: 'absent' }),
    decodeMessageFrame: () => api.decodeMessageFrame('{"type":"absent"}'),
    messageResumePoint: () => api.messageResumePoint({ type: 'absent' }),
  };
  for (const [name, fn] of Object.entries(calls)) {
    try {
      fn();
      return `${name} worked without the codec`;
    } catch (err) {
      if (!(err instanceof api.TwoplaneError) || err.kind !== 'invalid_state') return `${name} threw ${err?.kind ?? err}, not invalid_state`;
    }
  }
  return null;
}

/** The cases of message.json (README: `encode`, `sse`, `decodeErrors`, `conform`, `reader`,
 *  `assemble`, `resumePoint`). `log`, `replay` and `rows` are the producer's log, which the
 *  package does not expose: replayed by the Rust tests only. Every build replays `conform`,
 *  `reader` (through MessageReader and StreamReader) and `assemble`; a build without the message
 *  codec (the shipped wasm build) checks that the codec refuses instead of replaying its sections. */
export function replayMessageVectors(api, message) {
  const out = [];
  const add = (name, fn) => out.push(result('message', name, fn));
  for (const c of message.conform) add(`conform ${c.name}`, () => messageConformCase(api, c));
  for (const c of message.reader) {
    add(`reader ${c.name}`, () => messageReaderCase(api, c, false));
    add(`reader ${c.name} (StreamReader)`, () => messageReaderCase(api, c, true));
  }
  message.assemble.forEach((c, i) => add(`assemble ${c.name ?? i}`, () => messageAssembleCase(api, c)));
  if (!hasMessageCodec(api)) {
    // The shipped wasm build leaves the codec out (its size budget); it must say so.
    add('codec absent: invalid_state', () => codecRefused(api));
    return out;
  }
  message.encode.forEach((c, i) =>
    add(`encode ${i}`, () => {
      if (JSON.stringify(c.frame) !== c.json) return `JSON.stringify gives ${j(JSON.stringify(c.frame))}, want ${j(c.json)}`;
      const got = api.encodeMessageFrame(c.frame);
      if (got !== c.json) return `${j(got)}, want ${j(c.json)}`;
      const back = api.decodeMessageFrame(c.json);
      return j(back) === j(c.frame) ? null : `decodes to ${j(back)}, want ${j(c.frame)}`;
    }));
  message.sse.forEach((c, i) =>
    add(`sse ${i}`, () => {
      const got = api.encodeMessageEvent(c.frame);
      return got === c.event ? null : `${j(got)}, want ${j(c.event)}`;
    }));
  message.decodeErrors.forEach((c, i) => add(`decodeError ${i}`, () => messageDecodeErrorCase(api, c)));
  message.resumePoint.forEach((c, i) =>
    add(`resumePoint ${i}`, () => {
      const got = api.messageResumePoint(c.frame);
      const want = c.expected === null ? undefined : c.expected;
      return got === want ? null : `${j(got)}, want ${j(want)}`;
    }));
  return out;
}

// ---------------------------------------------------------------- ui.json (the AI SDK's stream)

/** The cases of ui.json (README: `ingest`, `resume`, `errors`) through `api.uiIngest` and
 *  `api.uiResume`, which only the full wasm build (`twoplane/wasm-full`) and the Node entry have:
 *  the frames and whether an abort came, the chunks a reader joining at `from` reads, and the
 *  kind each refused stream throws. */
export function replayUiVectors(api, ui) {
  const out = [];
  const add = (name, fn) => out.push(result('ui', name, fn));
  for (const c of ui.ingest) {
    add(`ingest ${c.name}`, () => {
      const got = api.uiIngest(c.streamId, c.chunks);
      if (j(got.frames) !== j(c.frames)) return `frames ${j(got.frames)}, want ${j(c.frames)}`;
      return got.aborted === c.abort ? null : `aborted ${j(got.aborted)}, want ${j(c.abort)}`;
    });
  }
  for (const c of ui.resume) {
    add(`resume ${c.name} from ${c.from} (${c.status})`, () => {
      const got = api.uiResume(c.streamId, c.frames, { from: c.from, status: c.status, error: c.error });
      return j(got) === j(c.chunks) ? null : `chunks ${j(got)}, want ${j(c.chunks)}`;
    });
  }
  for (const c of ui.errors) {
    add(`error ${c.name}`, () => {
      try {
        const got = api.uiIngest(c.streamId, c.chunks);
        return `ingested ${j(got)}, want the error ${c.kind}`;
      } catch (err) {
        if (!(err instanceof api.TwoplaneError)) return `threw a ${err?.name}, not a TwoplaneError: ${err}`;
        return err.kind === c.kind ? null : `threw ${err.kind}, want ${c.kind}`;
      }
    });
  }
  return out;
}

/** Every case of every file given; files that are missing are skipped. */
export function replayVectors(api, files) {
  const out = [];
  const { conform, reader, text, codec, sse, request, ddl } = files;
  for (const c of conform?.cases ?? []) out.push(result('conform', c.name, () => conformCase(api, c)));
  for (const c of reader?.cases ?? []) out.push(result('reader', c.name, () => readerCase(api, c)));
  if (text) {
    text.splice.forEach((c, i) =>
      out.push(result('text', `splice ${i}`, () => {
        const got = api.spliceStreamText(c.durable, c.produced);
        return got === c.expected ? null : `${j(got)}, want ${j(c.expected)}`;
      })));
    text.assemble.forEach((c, i) =>
      out.push(result('text', `assemble ${i}`, () => {
        const got = 'chunks' in c ? api.assembleDurableText(c.message, c.chunks) : api.assembleDurableText(c.message);
        return got === c.expected ? null : `${j(got)}, want ${j(c.expected)}`;
      })));
    text.chunkId.forEach((c, i) =>
      out.push(result('text', `chunkId ${i}`, () => {
        const got = api.streamChunkId(c.streamId, c.seq);
        return got === c.expected ? null : `${j(got)}, want ${j(c.expected)}`;
      })));
    text.chunkIdText.forEach((c, i) =>
      out.push(result('text', `chunkIdText ${i}`, () => {
        const seq = c.seq.undefined ? undefined : c.seq.value;
        if (`${seq}` !== c.seqText) return `JavaScript prints ${j(`${seq}`)}, the vector says ${j(c.seqText)}`;
        const got = api.streamChunkId(c.streamId, seq);
        return got === c.expected ? null : `${j(got)}, want ${j(c.expected)}`;
      })));
    text.resumePoint.forEach((c, i) =>
      out.push(result('text', `resumePoint ${i}`, () => {
        const got = api.frameResumePoint(c.frame);
        const want = c.expected === null ? undefined : c.expected;
        return got === want ? null : `${j(got)}, want ${j(want)}`;
      })));
  }
  if (codec) {
    // The package encodes frames with JSON.stringify; the core's encoder must agree byte for byte.
    codec.encode.forEach((c, i) =>
      out.push(result('codec', `encode ${i}`, () => {
        const got = JSON.stringify(c.frame);
        return got === c.json ? null : `${j(got)}, want ${j(c.json)}`;
      })));
  }
  if (sse) {
    for (const c of sse.decode) out.push(result('sse', `decode ${c.name}`, () => sseCase(api, c)));
    sse.encode.forEach((c, i) =>
      out.push(result('sse', `encode ${i}`, () => {
        const got = api.encodeSseEvent(c.frame);
        return got === c.sse ? null : `${j(got)}, want ${j(c.sse)}`;
      })));
  }
  for (const c of request?.cases ?? []) out.push(result('request', c.url + (c.lastEventId === null ? '' : ` (Last-Event-ID ${j(c.lastEventId)})`), () => requestCase(api, c)));
  for (const c of request?.subscribe ?? []) out.push(result('request', `subscribe ${c.endpoint} ${j(c.streamId)} ${c.from}`, () => subscribeCase(api, c)));
  for (const c of ddl?.cases ?? []) out.push(result('ddl', `${j(c.tables)} ${c.dialect}`, () => ddlCase(api, c)));
  for (const c of ddl?.args ?? []) out.push(result('ddl', `args ${j(c.tables)} ${j(c.dialect)}`, () => ddlArgsCase(api, c)));
  if (files.message) out.push(...replayMessageVectors(api, files.message));
  if (files.ui) out.push(...replayUiVectors(api, files.ui));
  return out;
}

/** The vector files replayed (codec's decodeErrors need a strict decoder the package does not
 *  expose; its reader and conform vectors cover how malformed frames are treated). */
export const VECTOR_FILES = ['conform', 'reader', 'text', 'codec', 'sse', 'request', 'ddl', 'message'];

/** The files replayed over the full build (`twoplane/wasm-full`): all of the above, and ui.json. */
export const FULL_VECTOR_FILES = [...VECTOR_FILES, 'ui'];
