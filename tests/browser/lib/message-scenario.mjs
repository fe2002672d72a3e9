// A message made of parts (docs/contract.md §8) read end to end by StreamReader over a fake fetch
// transport that speaks SSE, in any runtime: pure ECMAScript (fetch-style Response and
// ReadableStream, no Node or DOM import), so the same module runs in Node over each backend
// (tests/js/message-reader.test.mjs) and in a Chromium page over the wasm build
// (pages/vectors.html).
//
// The message: reasoning; a tool call whose input JSON arrives in 40 pieces (one of them splits a
// surrogate pair), its input, then an output set twice (preliminary, then final); a step boundary;
// a text with a pair split between two deltas and a lone surrogate; a data part replaced once; a
// transient part; a second text; metadata and the finish reason. `EXPECTED` is that message
// written out by hand, as the AI SDK's UIMessage would hold it: the oracle every read must reach.
//
// `runMessageScenario(api)` returns `[{ name, ok, detail }]`.

/** Builds a producer's frames: the one coordinate, one unit per structural event. */
export class Producer {
  frames = [];
  pos = 0;
  lens = [0];

  #event(frame) {
    this.frames.push({ type: frame.type, from: this.pos, seq: this.pos + 1, ...frame.rest });
    this.pos += 1;
  }

  start(kind, value) {
    const part = this.lens.length;
    this.lens.push(0);
    this.#event({ type: 'part', rest: value === undefined ? { part, kind } : { part, kind, value } });
    return part;
  }

  delta(part, text) {
    const at = this.lens[part];
    const frame = { type: 'chunk', from: this.pos, seq: this.pos + text.length, text };
    // The shorthand exactly when it is part 0 at its own `from`.
    if (part !== 0 || at !== this.pos) Object.assign(frame, { part, at });
    this.frames.push(frame);
    this.pos += text.length;
    this.lens[part] += text.length;
  }

  end(part, value) {
    this.#event({ type: 'part-end', rest: value === undefined ? { part } : { part, value } });
  }

  set(part, value) {
    this.#event({ type: 'set', rest: { part, value } });
  }

  meta(value) {
    this.#event({ type: 'meta', rest: { value } });
  }

  finish(reason) {
    this.#event({ type: 'finish', rest: { reason } });
  }

  transient(kind, value) {
    this.#event({ type: 'transient', rest: { kind, value } });
  }
}

export const STREAM_ID = 'msg-1';
const TOOL_INPUT = { city: '東京 😀', units: 'metric', days: [1, 2, 3] };
const INPUT_TEXT = JSON.stringify(TOOL_INPUT);
/** Every part's body length in EXPECTED, part 0 (untouched) first. */
const bodyLengths = (message) => [0, ...message.parts.map((p) => (p.text ?? p.inputText ?? '').length)];

/** The scenario's frames (`log`, ending with `end`), its length, and the offsets the cuts use. */
export function scenarioLog() {
  const p = new Producer();
  const at = {};
  const r = p.start('reasoning');
  for (const d of ['Let me ', 'look up ', 'the weather']) p.delta(r, d);
  at.midReasoning = p.pos;
  for (const d of [' in 東京', ' \ud83d', '\ude00.']) p.delta(r, d);
  p.end(r);
  const tool = p.start('tool-getWeather', { toolCallId: 'call-1', state: 'input-streaming' });
  const n = INPUT_TEXT.length;
  for (let i = 0; i < 40; i++) {
    p.delta(tool, INPUT_TEXT.slice(Math.floor((i * n) / 40), Math.floor(((i + 1) * n) / 40)));
    if (i === 17) at.midToolInput = p.pos;
  }
  p.set(tool, { state: 'input-available', input: TOOL_INPUT });
  p.end(tool);
  at.betweenInputAndOutput = p.pos;
  p.set(tool, { state: 'output-available', output: { tempC: 20 }, preliminary: true });
  p.set(tool, { output: { tempC: 21, sky: 'clear' }, preliminary: false });
  const step = p.start('step-start');
  p.end(step);
  const text = p.start('text');
  for (const d of ['It is 21 °C', ' in 東京 ', '\ud83d', '\ude00', ' and a lone \udc00 stays.']) p.delta(text, d);
  p.end(text);
  const data = p.start('data-weather', { id: 'w1', data: { tempC: 20 } });
  p.transient('data-notice', { data: 'refreshing' });
  p.set(data, { data: { tempC: 21 } });
  at.afterData = p.pos;
  const second = p.start('text');
  for (const d of ['Anything ', 'else?']) p.delta(second, d);
  p.end(second);
  p.meta({ model: 'm-1' });
  p.finish('stop');
  const total = p.pos;
  p.frames.push({ type: 'end', seq: total, status: 'complete' });
  return { log: p.frames, total, at };
}

/** The message every read of the scenario ends with, written out by hand. */
export const EXPECTED = {
  parts: [
    { type: 'reasoning', text: 'Let me look up the weather in 東京 😀.' },
    {
      type: 'tool-getWeather',
      inputText: INPUT_TEXT,
      toolCallId: 'call-1',
      state: 'output-available',
      input: TOOL_INPUT,
      output: { tempC: 21, sky: 'clear' },
      preliminary: false,
    },
    { type: 'step-start' },
    { type: 'text', text: 'It is 21 °C in 東京 😀 and a lone \udc00 stays.' },
    { type: 'data-weather', id: 'w1', data: { tempC: 21 } },
    { type: 'text', text: 'Anything else?' },
  ],
  metadata: { model: 'm-1' },
  finishReason: 'stop',
};

/** A chunk cut to the part of it inside `lo..hi` (`from`, `seq` and `at` adjusted). */
function cutChunk(f, lo, hi) {
  const from = Math.max(f.from, lo);
  const seq = Math.min(f.seq, hi);
  const cut = { type: 'chunk', from, seq, text: f.text.slice(from - f.from, seq - f.from) };
  const part = f.part ?? 0;
  const at = (f.at ?? f.from) + (from - f.from);
  if (part !== 0 || at !== from) Object.assign(cut, { part, at });
  return cut;
}

/** The frames a server replays from `from`: everything ending after it, a delta across it cut. */
export function replayFrom(log, from) {
  const out = [];
  for (const f of log) {
    if (f.type === 'end') out.push(f);
    else if (f.seq > from) out.push(f.type === 'chunk' && f.from < from ? cutChunk(f, from, f.seq) : f);
  }
  return out;
}

/** The chunk rows of checkpoints at `cuts` (ascending offsets): each slice's frames as one parts
 *  row (this message is structural from its first unit), a transient stored without content. */
export function checkpointRows(log, cuts) {
  const rows = [];
  let lo = 0;
  for (const hi of cuts) {
    const frames = [];
    for (const f of log) {
      if (f.type === 'end' || f.seq <= lo || f.from >= hi) continue;
      if (f.type === 'chunk') frames.push(cutChunk(f, lo, hi));
      else frames.push(f.type === 'transient' ? { type: 'transient', from: f.from, seq: f.seq } : f);
    }
    rows.push({ seq: hi, text: '', parts: JSON.stringify(frames) });
    lo = hi;
  }
  return rows;
}

/** One SSE event of a frame: `id:` its resume point, then `data:`. */
const sseEvent = (f) => `id: ${f.type === 'open' ? f.from : f.seq}\ndata: ${JSON.stringify(f)}\n\n`;

/** Consecutive deltas of one body merged into one chunk, as a server that re-cuts may send them. */
function coalesce(frames) {
  const out = [];
  for (const f of frames) {
    const last = out[out.length - 1];
    if (f.type === 'chunk' && last?.type === 'chunk' && last.seq === f.from && (last.part ?? 0) === (f.part ?? 0) &&
      (last.at ?? last.from) + last.text.length === (f.at ?? f.from)) {
      out[out.length - 1] = { ...last, seq: f.seq, text: last.text + f.text };
    } else {
      out.push(f);
    }
  }
  return out;
}

/**
 * A fetch that serves the scenario as SSE. Connection i follows `plan[i]` (default: the whole
 * replay): `back` replays from that many units before the offset asked for, `coalesce` merges
 * consecutive deltas of a body (with `back`, a chunk then reaches over what the reader holds: an
 * overlap it splices at its own offset), `dropAt` closes the body before the first frame ending
 * past that offset, `partial` first sends part of that frame's event. Bodies arrive in 37-byte
 * pieces, so events are split anywhere.
 */
export function fakeSseFetch(log, plan = []) {
  const calls = [];
  const encoder = new TextEncoder();
  async function fetch(url, init) {
    const asked = Number(init.headers.get('last-event-id') ?? new URL(String(url), 'http://h').searchParams.get('from'));
    const step = plan[calls.length] ?? {};
    const from = Math.max(0, asked - (step.back ?? 0));
    calls.push({ url: String(url), asked, lastEventId: init.headers.get('last-event-id') });
    let text = sseEvent({ type: 'open', streamId: STREAM_ID, from, seq: from, durableSeq: from, ended: false });
    const frames = replayFrom(log, from);
    for (const f of step.coalesce ? coalesce(frames) : frames) {
      if (step.dropAt !== undefined && f.seq > step.dropAt) {
        if (step.partial) text += sseEvent(f).slice(0, 20);
        break;
      }
      text += sseEvent(f);
    }
    const bytes = encoder.encode(text);
    const body = new ReadableStream({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 37) controller.enqueue(bytes.slice(i, i + 37));
        controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  }
  return { fetch, calls };
}

const j = (v) => JSON.stringify(v);

/** A StreamReader over `fetch` to the end; what it held and what its updates rebuilt. */
async function readToEnd(api, options) {
  // What a UI holding one text node per part rebuilds from the updates alone.
  const shown = [];
  let stop;
  const done = new Promise((resolve) => {
    stop = resolve;
  });
  const reader = new api.StreamReader({
    endpoint: '/sse',
    streamId: STREAM_ID,
    backoff: { initialMs: 0, maxMs: 0 },
    ...options,
    onUpdate(u) {
      if (u.action === 'start') shown[u.part] = '';
      if (u.action === 'splice') shown[u.part] = shown[u.part].slice(0, u.cut) + u.appended;
    },
    onStop: (reason) => stop(reason),
  });
  // Seed what the UI shows with what the reader joined holding.
  reader.parts.forEach((p, i) => {
    shown[i] = p.text ?? p.inputText ?? '';
  });
  reader.start();
  const timer = new Promise((resolve) => setTimeout(() => resolve('timeout'), 10000));
  const reason = await Promise.race([done, timer]);
  return { reader, reason, shown };
}

/** The checks every read must pass: it ended, holds EXPECTED, and its updates rebuilt it. */
function finalChecks(got, total) {
  const { reader, reason, shown } = got;
  if (reason !== 'end') return `stopped with ${reason}`;
  if (j(reader.message) !== j(EXPECTED)) return `message ${j(reader.message)}\nwant ${j(EXPECTED)}`;
  if (reader.resumeFrom !== total) return `resumeFrom ${reader.resumeFrom}, want ${total}`;
  const bodies = reader.parts.map((p) => p.text ?? p.inputText ?? '');
  if (j(shown) !== j(bodies)) return `the updates rebuilt ${j(shown)}, the reader holds ${j(bodies)}`;
  return null;
}

/** Runs `fn` (async, returning null or a failure's detail) as one named result. */
async function check(out, name, fn) {
  try {
    const detail = await fn();
    out.push({ name, ok: detail === null, detail });
  } catch (err) {
    out.push({ name, ok: false, detail: `threw ${err?.kind ?? ''} ${err?.stack ?? err}` });
  }
}

/** Every scenario check, against the package's exports `api`. */
export async function runMessageScenario(api) {
  const { log, total, at } = scenarioLog();
  const out = [];

  await check(out, 'uninterrupted read', async () => {
    const { fetch, calls } = fakeSseFetch(log);
    const got = await readToEnd(api, { fetch });
    return finalChecks(got, total) ?? (calls.length === 1 ? null : `${calls.length} connections`);
  });

  await check(out, 'cut mid reasoning, mid tool input (mid-event), between input and output; one replay overlapping', async () => {
    const plan = [
      { dropAt: at.midReasoning },
      { dropAt: at.midToolInput, partial: true },
      { back: 3, coalesce: true, dropAt: at.betweenInputAndOutput },
      { back: 1 },
    ];
    const { fetch, calls } = fakeSseFetch(log, plan);
    const got = await readToEnd(api, { fetch });
    const failed = finalChecks(got, total);
    if (failed !== null) return failed;
    const asked = calls.map((c) => c.asked);
    const want = [0, at.midReasoning, at.midToolInput, at.betweenInputAndOutput];
    if (j(asked) !== j(want)) return `connections asked for ${j(asked)}, want ${j(want)}`;
    return calls[1].lastEventId === String(at.midReasoning) ? null : `Last-Event-ID ${calls[1].lastEventId}`;
  });

  await check(out, 'joined holding the checkpoints up to mid tool input', async () => {
    const rows = checkpointRows(log, [4, at.midReasoning + 2, at.midToolInput]);
    const durable = api.assembleDurableMessage({ seq: 0 }, rows);
    if (durable.len !== at.midToolInput) return `durable len ${durable.len}, want ${at.midToolInput}`;
    // The durable message is the fold of the frames up to the cut: what a reader held there.
    const upTo = new api.MessageReader({ streamId: STREAM_ID });
    for (const f of log) if (f.type !== 'end' && f.seq <= at.midToolInput) upTo.push(f);
    if (j(durable.message) !== j(upTo.message)) return `durable ${j(durable.message)}\nwant ${j(upTo.message)}`;
    const table = [0, EXPECTED.parts[0].text.length, Math.floor((18 * INPUT_TEXT.length) / 40)];
    if (j(durable.parts) !== j(table)) return `part table ${j(durable.parts)}, want ${j(table)}`;
    const { fetch, calls } = fakeSseFetch(log, [{ dropAt: at.afterData }]);
    const got = await readToEnd(api, { fetch, durable });
    if (calls[0].asked !== at.midToolInput) return `joined at ${calls[0].asked}`;
    if (got.reader.joinOffset !== at.midToolInput) return `joinOffset ${got.reader.joinOffset}`;
    return finalChecks(got, total);
  });

  await check(out, 'the sealed row: the document is the message, and renders over a shorter reader', () => {
    const body = EXPECTED.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    const sealed = api.assembleDurableMessage({ body, document: JSON.stringify(EXPECTED), seq: total }, []);
    if (sealed.document !== JSON.stringify(EXPECTED)) return `document ${sealed.document}`;
    if (j(sealed.message) !== j(EXPECTED) || sealed.len !== total) return `message ${j(sealed.message)} len ${sealed.len}`;
    if (j(sealed.parts) !== j(bodyLengths(EXPECTED))) return `part table ${j(sealed.parts)}`;
    const reader = new api.StreamReader({ streamId: STREAM_ID });
    for (const f of log) if (f.seq <= at.midToolInput) reader.push(f);
    // Every part the document lists has ended: a reader joined holding it refuses more body.
    let stopped = null;
    const joined = new api.StreamReader({ streamId: STREAM_ID, durable: sealed, onStop: (r) => (stopped = r) });
    joined.push({ type: 'chunk', from: total, seq: total + 1, text: '!', part: 6, at: 'Anything else?'.length });
    if (stopped !== 'malformed' || j(joined.message) !== j(EXPECTED)) return `a delta for a stored part: ${stopped}`;
    if (reader.renderedMessage(sealed) !== sealed.message) return 'the longer durable message does not win';
    const early = api.assembleDurableMessage({ seq: 0 }, checkpointRows(log, [at.midReasoning]));
    if (reader.renderedMessage(early) !== reader.message) return 'the longer live message does not win';
    if (reader.renderedMessage(early, 'other') !== early.message) return 'rule 4: another stream shows its durable message';
    if (j(reader.renderedMessage(null)) !== j(reader.message)) return 'no durable message: the live one';
    if (j(reader.renderedMessage(null, 'other')) !== j({ parts: [] })) return 'no durable message, another stream: the empty one';
    return null;
  });

  await check(out, 'a surrogate pair split between deltas and a lone surrogate survive', async () => {
    const { fetch } = fakeSseFetch(log, [{ dropAt: at.midToolInput }]);
    const { reader } = await readToEnd(api, { fetch });
    const reasoning = reader.parts[1].text;
    const text = reader.parts[4].text;
    if (!reasoning.endsWith(' \ud83d\ude00.')) return `reasoning ${j(reasoning)}`;
    if (!text.includes('東京 \ud83d\ude00 and a lone \udc00 stays')) return `text ${j(text)}`;
    return reader.parts[2].inputText === INPUT_TEXT ? null : `tool input ${j(reader.parts[2].inputText)}`;
  });

  await check(out, 'hostile part frames stop the reader and leave what it holds whole', () => {
    const cut = at.midToolInput;
    const hostile = {
      'a delta for an unknown part': [{ type: 'chunk', from: cut, seq: cut + 1, text: 'x', part: 9, at: 0 }, 'malformed'],
      'a gap in a body': [{ type: 'chunk', from: cut, seq: cut + 1, text: 'x', part: 2, at: 30 }, 'gap'],
      'a body that goes back': [{ type: 'chunk', from: cut, seq: cut + 1, text: 'x', part: 2, at: 1 }, 'malformed'],
      'a change of kind (part 2 again)': [{ type: 'part', from: cut, seq: cut + 1, part: 2, kind: 'text' }, 'malformed'],
      'a delta for an ended part': [{ type: 'chunk', from: cut, seq: cut + 1, text: 'x', part: 1, at: EXPECTED.parts[0].text.length }, 'malformed'],
      'a gap in the message': [{ type: 'meta', from: cut + 2, seq: cut + 3 }, 'gap'],
      'a value naming the body': [{ type: 'set', from: cut, seq: cut + 1, part: 2, value: { inputText: 'x' } }, 'malformed'],
      'a value that is not an object': [{ type: 'set', from: cut, seq: cut + 1, part: 2, value: [1] }, 'malformed'],
      'a part without a kind': [{ type: 'part', from: cut, seq: cut + 1, part: 3 }, 'malformed'],
    };
    for (const [name, [frame, reason]] of Object.entries(hostile)) {
      let stopped = null;
      const updates = [];
      const reader = new api.StreamReader({ streamId: STREAM_ID, onStop: (r) => (stopped = r), onUpdate: (u) => updates.push(u) });
      for (const f of log) if (f.seq <= cut) reader.push(f);
      const before = j(reader.message);
      const parts = j(reader.parts);
      const count = updates.length;
      if (reader.push(frame) !== false || stopped !== reason) return `${name}: stopped ${stopped}, want ${reason}`;
      if (j(reader.message) !== before || j(reader.parts) !== parts) return `${name}: the message changed`;
      if (reader.resumeFrom !== cut || updates.length !== count) return `${name}: resumeFrom ${reader.resumeFrom}, ${updates.length - count} updates`;
      if (reader.push(log.find((f) => f.from === cut)) !== false) return `${name}: live after its stop`;
    }
    return null;
  });

  return out;
}
