// An executable model of the mapping docs/ai-sdk-protocol.md proposes between the AI SDK's UI
// message stream and twoplane's message events (docs/contract.md §8). It is not the product
// (that is Rust, in the server); it is the proposal written so that the SDK's own reader can judge
// it: `replay(fold(toEvents(chunks)))` read by `readUIMessageStream` must build the message the SDK
// builds from `chunks`, for every prefix of every fixture.
//
//   toEvents(chunks)  UI message chunks -> our events, in order:
//                       {type:'part', part, kind, value}   a part starts
//                       {type:'chunk', part, text}         body delta (text, reasoning, tool input)
//                       {type:'part-end', part, value}     the body is complete
//                       {type:'set', part, value}          merge attributes
//                       {type:'meta', value}               merge message metadata (members)
//                       {type:'finish', reason}            the finish reason
//                       {type:'transient', kind, value}    live only
//                       {type:'end', status, error}        the stream's end (abort)
//   fold(events)      our events -> the stored document (parts with body, attributes, ended)
//   replay(doc)       the document -> a compacted UI message stream (an array of chunks)
//
// Attributes whose names start with `$` are replay hints the proposal needs beyond the
// SDK's own part fields; each is listed as an open problem in the doc.

/** The SDK's `mergeObjects` is a deep merge; our `meta` is member by member. The ingest sends,
 * for each member a chunk touches, the member's deep-merged value, so both agree. */
function deepMerge(base, over) {
  if (over === undefined) return base;
  if (base === undefined || base === null || typeof base !== 'object' || Array.isArray(base)) return over;
  if (over === null || typeof over !== 'object' || Array.isArray(over)) return over;
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = deepMerge(base[k], v);
  return out;
}

function defined(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) out[k] = v;
  return out;
}

/** UI message chunks -> our events (the ingest side of `POST .../ui-message-stream`). */
export function toEvents(chunks) {
  const events = [];
  let parts = 0;
  const textIds = new Map(); // text-start id -> part (active text parts)
  const reasoningIds = new Map();
  const toolIds = new Map(); // toolCallId -> part (the latest part of that call)
  const approvalIds = new Map(); // approvalId -> part
  const dataIds = new Map(); // `${type}\0${id}` -> part
  const stepParts = []; // parts started since the last step-start, for reset-step
  let stepStart = null; // the open step-start part
  let metadata;

  const start = (kind, value) => {
    const part = parts++;
    events.push({ type: 'part', part, kind, value: defined(value) });
    stepParts.push(part);
    return part;
  };
  const set = (part, value) => {
    const v = defined(value);
    if (Object.keys(v).length) events.push({ type: 'set', part, value: v });
  };
  const meta = (m) => {
    if (m == null) return;
    const before = metadata;
    metadata = deepMerge(metadata, m);
    // send each member the chunk touched with its merged value
    const value = {};
    if (typeof m === 'object' && !Array.isArray(m) && (before == null || typeof before === 'object')) {
      for (const k of Object.keys(m)) value[k] = metadata[k];
      events.push({ type: 'meta', value });
    } else {
      events.push({ type: 'meta', value: { $whole: metadata } }); // metadata that is not an object
    }
  };
  const toolPart = (c, hint) => {
    let part = toolIds.get(c.toolCallId);
    if (part === undefined) {
      part = start(c.dynamic ? 'dynamic-tool' : `tool-${c.toolName}`, {
        toolCallId: c.toolCallId,
        toolName: c.dynamic ? c.toolName : undefined,
        ...hint,
      });
      toolIds.set(c.toolCallId, part);
    }
    return part;
  };

  for (const c of chunks) {
    switch (c.type) {
      case 'start':
        if (c.messageId != null) events.push({ type: 'message-id', id: c.messageId }); // open problem: no event says this
        meta(c.messageMetadata);
        break;
      case 'message-metadata':
        meta(c.messageMetadata);
        break;
      case 'finish':
        meta(c.messageMetadata);
        if (c.finishReason != null) events.push({ type: 'finish', reason: c.finishReason });
        break;
      case 'abort':
        events.push({ type: 'end', status: 'cancelled', error: c.reason });
        break;
      case 'error':
        // kept in the message at its place, as a part the UI message does not list
        start('error', { errorText: c.errorText });
        break;
      case 'start-step':
        stepParts.length = 0;
        stepStart = start('step-start', {});
        stepParts.length = 0;
        break;
      case 'finish-step':
        if (stepStart !== null) events.push({ type: 'part-end', part: stepStart });
        stepStart = null;
        textIds.clear(); // ai 5 forgets active text and reasoning parts here
        reasoningIds.clear();
        break;
      case 'reset-step':
        // our parts cannot be removed: they are marked, and a replay leaves them out
        for (const p of stepParts) set(p, { $dropped: true });
        stepParts.length = 0;
        textIds.clear();
        reasoningIds.clear();
        for (const [k, p] of toolIds) if (events.some((e) => e.type === 'set' && e.part === p && e.value.$dropped)) toolIds.delete(k);
        break;
      case 'text-start':
        textIds.set(c.id, start('text', { providerMetadata: c.providerMetadata }));
        break;
      case 'reasoning-start':
        reasoningIds.set(c.id, start('reasoning', { id: c.id, providerMetadata: c.providerMetadata }));
        break;
      case 'text-delta':
      case 'reasoning-delta': {
        const part = (c.type === 'text-delta' ? textIds : reasoningIds).get(c.id);
        if (part === undefined) throw new Error(`${c.type} for unknown id ${c.id}`);
        if (c.delta !== '') events.push({ type: 'chunk', part, text: c.delta });
        set(part, { providerMetadata: c.providerMetadata });
        break;
      }
      case 'text-end':
      case 'reasoning-end': {
        const ids = c.type === 'text-end' ? textIds : reasoningIds;
        const part = ids.get(c.id);
        if (part === undefined) throw new Error(`${c.type} for unknown id ${c.id}`);
        events.push({ type: 'part-end', part, value: defined({ providerMetadata: c.providerMetadata, citations: c.citations }) });
        ids.delete(c.id);
        break;
      }
      case 'tool-input-start': {
        const part = start(c.dynamic ? 'dynamic-tool' : `tool-${c.toolName}`, {
          toolCallId: c.toolCallId,
          toolName: c.dynamic ? c.toolName : undefined,
          state: 'input-streaming',
          $streamed: true,
          providerExecuted: c.providerExecuted,
          title: c.title,
          toolMetadata: c.toolMetadata,
          inputEncoding: c.inputEncoding,
          callProviderMetadata: c.providerMetadata,
        });
        toolIds.set(c.toolCallId, part);
        break;
      }
      case 'tool-input-delta': {
        const part = toolIds.get(c.toolCallId);
        if (part === undefined) throw new Error(`tool-input-delta for unknown call ${c.toolCallId}`);
        if (c.inputTextDelta !== '') events.push({ type: 'chunk', part, text: c.inputTextDelta });
        break;
      }
      case 'tool-input-available': {
        const part = toolPart(c, {});
        set(part, {
          state: 'input-available',
          input: c.input,
          providerExecuted: c.providerExecuted,
          callProviderMetadata: c.providerMetadata,
          title: c.title,
          toolMetadata: c.toolMetadata,
        });
        events.push({ type: 'part-end', part });
        break;
      }
      case 'tool-input-error': {
        const part = toolPart(c, {});
        set(part, {
          state: 'output-error',
          $inputError: true,
          input: c.input,
          errorText: c.errorText,
          providerExecuted: c.providerExecuted,
          callProviderMetadata: c.providerMetadata,
          toolMetadata: c.toolMetadata,
          title: c.title,
        });
        events.push({ type: 'part-end', part });
        break;
      }
      case 'tool-approval-request': {
        const part = toolIds.get(c.toolCallId);
        approvalIds.set(c.approvalId, part);
        set(part, { state: 'approval-requested', approval: defined({ id: c.approvalId, descriptor: c.approvalDescriptor, inputSchemaInput: c.inputSchemaInput, requestReason: c.reason, isAutomatic: c.isAutomatic || undefined, signature: c.signature }) });
        break;
      }
      case 'tool-approval-response': {
        const part = approvalIds.get(c.approvalId);
        set(part, { state: 'approval-responded', $approvalResponse: defined({ approved: c.approved, reason: c.reason }), providerExecuted: c.providerExecuted, callProviderMetadata: c.providerMetadata });
        break;
      }
      case 'tool-output-available': {
        const part = toolIds.get(c.toolCallId);
        set(part, { state: 'output-available', output: c.output, preliminary: c.preliminary ? true : false, providerExecuted: c.providerExecuted, resultProviderMetadata: c.providerMetadata, toolMetadata: c.toolMetadata });
        break;
      }
      case 'tool-output-error': {
        const part = toolIds.get(c.toolCallId);
        set(part, { state: 'output-error', errorText: c.errorText, providerExecuted: c.providerExecuted, resultProviderMetadata: c.providerMetadata, toolMetadata: c.toolMetadata });
        break;
      }
      case 'tool-output-denied':
        set(toolIds.get(c.toolCallId), { state: 'output-denied' });
        break;
      default: {
        if (c.type.startsWith('data-')) {
          if (c.transient) {
            events.push({ type: 'transient', kind: c.type, value: defined({ id: c.id, data: c.data }) });
            break;
          }
          const key = `${c.type}\0${c.id}`;
          if (c.id != null && dataIds.has(key)) set(dataIds.get(key), { data: c.data });
          else {
            const part = start(c.type, { id: c.id, data: c.data });
            if (c.id != null) dataIds.set(key, part);
          }
          break;
        }
        // every other chunk is an atomic part whose attributes are its fields: source-url,
        // source-document, file, reasoning-file, custom, steering-message, and any type the
        // ingest does not know
        const { type, ...fields } = c;
        start(type, fields);
      }
    }
  }
  return events;
}

/** An empty document. */
export function emptyDoc() {
  return { parts: [], metadata: undefined, finishReason: undefined, status: undefined, error: undefined, messageId: undefined };
}

/** Our events -> the stored document (parts in start order, each with body, attributes, ended). */
export function fold(events, doc = emptyDoc()) {
  for (const e of events) applyEvent(doc, e);
  return doc;
}

/** Applies one event to a document. */
export function applyEvent(doc, e) {
  {
    switch (e.type) {
      case 'part':
        if (e.part !== doc.parts.length) throw new Error('part out of order');
        doc.parts.push({ kind: e.kind, body: '', attrs: { ...e.value }, ended: false });
        break;
      case 'chunk':
        if (doc.parts[e.part].ended) throw new Error('chunk after end');
        doc.parts[e.part].body += e.text;
        break;
      case 'part-end':
        Object.assign(doc.parts[e.part].attrs, e.value ?? {});
        doc.parts[e.part].ended = true;
        break;
      case 'set':
        Object.assign(doc.parts[e.part].attrs, e.value);
        break;
      case 'meta':
        if ('$whole' in e.value) doc.metadata = e.value.$whole;
        else doc.metadata = { ...(doc.metadata ?? {}), ...e.value };
        break;
      case 'finish':
        doc.finishReason = e.reason;
        break;
      case 'transient':
        break;
      case 'end':
        doc.status = e.status;
        doc.error = e.error;
        break;
      case 'message-id':
        doc.messageId = e.id;
        break;
      default:
        throw new Error(`unknown event ${e.type}`);
    }
  }
}

/**
 * The live tail: the UI chunks for `events` that follow a reader's join, where `doc` is the
 * document at the join (it is advanced as the events are applied). A part's ids are the ones
 * the replay gives it, so a replay and a tail fit together.
 */
export function liveChunks(doc, events) {
  const out = [];
  for (const e of events) {
    const before = e.part !== undefined && doc.parts[e.part] ? structuredClone(doc.parts[e.part]) : undefined;
    applyEvent(doc, e);
    const p = e.part !== undefined ? doc.parts[e.part] : undefined;
    switch (e.type) {
      case 'part':
        // a part that starts streamed announces itself; the others wait for their content
        if (p.kind === 'text' || p.kind === 'reasoning' || p.kind === 'step-start' || p.kind === 'error' || p.kind.startsWith('data-') ||
            ((p.kind === 'dynamic-tool' || p.kind.startsWith('tool-')) && p.attrs.$streamed) ||
            !(p.kind === 'dynamic-tool' || p.kind.startsWith('tool-'))) {
          emitPart(out, p, e.part);
        }
        break;
      case 'chunk': {
        const id = p.kind === 'reasoning' ? p.attrs.id : `text-${e.part}`;
        if (p.kind === 'text' || p.kind === 'reasoning') out.push({ type: `${p.kind}-delta`, id, delta: e.text });
        else out.push({ type: 'tool-input-delta', toolCallId: p.attrs.toolCallId, inputTextDelta: e.text });
        break;
      }
      case 'part-end':
        if (p.kind === 'text' || p.kind === 'reasoning') {
          const id = p.kind === 'reasoning' ? p.attrs.id : `text-${e.part}`;
          out.push(defined({ type: `${p.kind}-end`, id, providerMetadata: e.value?.providerMetadata, citations: e.value?.citations }));
        } else if (p.kind === 'step-start') out.push({ type: 'finish-step' });
        break;
      case 'set': {
        if (e.value.$dropped) {
          if (!doc.parts[e.part + 1]?.attrs.$dropped) out.push({ type: 'reset-step' });
        } else if (p.kind === 'text' || p.kind === 'reasoning') {
          const id = p.kind === 'reasoning' ? p.attrs.id : `text-${e.part}`;
          out.push({ type: `${p.kind}-delta`, id, delta: '', providerMetadata: e.value.providerMetadata });
        } else if (p.kind.startsWith('data-')) {
          out.push(defined({ type: p.kind, id: p.attrs.id, data: p.attrs.data }));
        } else if (p.kind === 'dynamic-tool' || p.kind.startsWith('tool-')) {
          // the chunks that take the part from its state before to its state now
          const all = replayTool(p);
          const had = before && before.attrs.state ? replayTool(before) : [];
          const fresh = all.slice(sameHead(had, all));
          out.push(...fresh);
        }
        break;
      }
      case 'meta':
        out.push({ type: 'message-metadata', messageMetadata: '$whole' in e.value ? e.value.$whole : e.value });
        break;
      case 'finish':
        out.push({ type: 'finish', finishReason: e.reason });
        break;
      case 'transient':
        out.push({ type: e.kind, ...e.value, transient: true });
        break;
      case 'end':
        if (e.status === 'cancelled') out.push(defined({ type: 'abort', reason: e.error }));
        break;
      case 'message-id':
        out.push({ type: 'start', messageId: e.id });
        break;
    }
  }
  return out;
}

/** How many leading chunks two chunk lists share, by type. */
function sameHead(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i].type === b[i].type) i++;
  // a preliminary output followed by another output: the later one is new
  if (i > 0 && i === a.length && a[i - 1].type === 'tool-output-available') i--;
  return i;
}

/**
 * The document -> a compacted UI message stream: `start` (id and the whole metadata), then per
 * part its start, one delta with its body, its end if it ended (tools: the chunks that reach
 * their state), then `finish` if the stream finished, `abort` if it was cancelled.
 */
export function replay(doc, { finished = doc.finishReason !== undefined } = {}) {
  const out = [];
  out.push(defined({ type: 'start', messageId: doc.messageId, messageMetadata: doc.metadata }));
  doc.parts.forEach((p, i) => {
    const a = p.attrs;
    emitPart(out, p, i);
    // parts a `reset-step` dropped are replayed, then the reset: the SDK removes them again
    // (leaving them out would also build the message, but `readUIMessageStream` would then yield
    // its last snapshot before the step's `start-step`, which writes nothing)
    if (a.$dropped && !doc.parts[i + 1]?.attrs.$dropped) out.push({ type: 'reset-step' });
  });
  if (finished) out.push(defined({ type: 'finish', finishReason: doc.finishReason }));
  if (doc.status === 'cancelled') out.push(defined({ type: 'abort', reason: doc.error }));
  return out;
}

function emitPart(out, p, i) {
  const a = p.attrs;
  {
    switch (true) {
      case p.kind === 'step-start':
        out.push({ type: 'start-step' });
        if (p.ended) out.push({ type: 'finish-step' });
        break;
      case p.kind === 'text':
      case p.kind === 'reasoning': {
        const id = p.kind === 'reasoning' ? a.id : `text-${i}`;
        out.push(defined({ type: `${p.kind}-start`, id, providerMetadata: a.providerMetadata }));
        if (p.body !== '') out.push({ type: `${p.kind}-delta`, id, delta: p.body });
        if (p.ended) out.push(defined({ type: `${p.kind}-end`, id, citations: a.citations }));
        break;
      }
      case p.kind === 'error':
        out.push({ type: 'error', errorText: a.errorText });
        break;
      case p.kind === 'dynamic-tool' || p.kind.startsWith('tool-'):
        out.push(...replayTool(p));
        break;
      case p.kind.startsWith('data-'):
        out.push(defined({ type: p.kind, id: a.id, data: a.data }));
        break;
      default:
        out.push({ type: p.kind, ...withoutHints(a) });
    }
  }
}

function withoutHints(a) {
  return Object.fromEntries(Object.entries(a).filter(([k]) => !k.startsWith('$')));
}

function replayTool(p) {
  const a = p.attrs;
  const dynamic = p.kind === 'dynamic-tool' ? true : undefined;
  const toolName = dynamic ? a.toolName : p.kind.slice('tool-'.length);
  const common = { toolCallId: a.toolCallId, toolName };
  const out = [];
  const state = a.state;
  if (a.$streamed) {
    out.push(defined({ type: 'tool-input-start', ...common, dynamic, providerExecuted: a.providerExecuted, title: a.title, toolMetadata: a.toolMetadata, inputEncoding: a.inputEncoding, providerMetadata: a.callProviderMetadata }));
    if (p.body !== '') out.push({ type: 'tool-input-delta', toolCallId: a.toolCallId, inputTextDelta: p.body });
  }
  if (state === 'input-streaming') return out;
  if (a.$inputError) {
    out.push(defined({ type: 'tool-input-error', ...common, dynamic, input: a.input, errorText: a.errorText, providerExecuted: a.providerExecuted, providerMetadata: a.callProviderMetadata, toolMetadata: a.toolMetadata, title: a.title }));
    return out;
  }
  out.push(defined({ type: 'tool-input-available', ...common, dynamic, input: a.input, providerExecuted: a.providerExecuted, providerMetadata: a.callProviderMetadata, title: a.title, toolMetadata: a.toolMetadata }));
  if (a.approval) {
    const { id, descriptor, inputSchemaInput, requestReason, isAutomatic, signature } = a.approval;
    out.push(defined({ type: 'tool-approval-request', approvalId: id, toolCallId: a.toolCallId, approvalDescriptor: descriptor, inputSchemaInput, reason: requestReason, isAutomatic, signature }));
    if (a.$approvalResponse) out.push(defined({ type: 'tool-approval-response', approvalId: id, ...a.$approvalResponse }));
  }
  if (state === 'output-available') {
    out.push(defined({ type: 'tool-output-available', toolCallId: a.toolCallId, dynamic, output: a.output, preliminary: a.preliminary ? true : undefined, providerExecuted: a.providerExecuted, providerMetadata: a.resultProviderMetadata, toolMetadata: a.toolMetadata }));
  } else if (state === 'output-error') {
    out.push(defined({ type: 'tool-output-error', toolCallId: a.toolCallId, dynamic, errorText: a.errorText, providerExecuted: a.providerExecuted, providerMetadata: a.resultProviderMetadata, toolMetadata: a.toolMetadata }));
  } else if (state === 'output-denied') {
    out.push({ type: 'tool-output-denied', toolCallId: a.toolCallId });
  }
  return out;
}
