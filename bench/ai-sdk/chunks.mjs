// The benchmark's model turn: exactly TOTAL UI message chunks (ai 5, 6 and 7 share every type
// used here), deterministic, spread over the part kinds a chat answer has: reasoning, two tool
// calls with streamed input and preliminary outputs, data parts (one replaced by id as the turn
// goes on, others added), two steps and two texts, with some non-ASCII text and an emoji.

export const TOTAL = 2000;

/** A small deterministic generator (mulberry32), so every run sends the same bytes. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VOCAB = [
  'the', 'stream', 'resumes', 'where', 'it', 'was', 'reader', 'model', 'answer', 'token',
  'checkpoint', 'because', 'délai', 'naïve', 'über', 'cost', 'of', 'a', 'reload', 'while',
  'tool', 'result', 'and', 'then', 'we', 'compare', 'every', 'chunk', '😀', 'Zürich',
];

/** `n` word-sized deltas ("word " or "word, "; a newline now and then). */
function words(random, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const w = VOCAB[Math.floor(random() * VOCAB.length)];
    const r = random();
    out.push(r < 0.04 ? `${w}.\n\n` : r < 0.15 ? `${w}, ` : `${w} `);
  }
  return out;
}

/** A tool input of about `n` pieces: its JSON text cut into short pieces, and the value. */
function toolInput(random, n, label) {
  const input = { query: label, filters: [], limit: 20 };
  while (JSON.stringify(input).length < n * 4) {
    input.filters.push({ field: VOCAB[Math.floor(random() * VOCAB.length)], op: 'contains', value: words(random, 2).join('').trim() });
  }
  const text = JSON.stringify(input);
  const pieces = [];
  let at = 0;
  for (let i = 0; i < n; i++) {
    const end = i === n - 1 ? text.length : Math.round(((i + 1) * text.length) / n);
    pieces.push(text.slice(at, end));
    at = end;
  }
  return { pieces: pieces.filter((p) => p.length > 0), input };
}

/**
 * The chunks of the turn (objects, in order). `messageId` is the stream id: twoplane's ingest
 * requires `start.messageId` to name the stream it is posted to.
 */
export function turnChunks(messageId) {
  const random = rng(24);
  const c = [];
  let statusN = 0;
  const status = (phase) => c.push({ type: 'data-status', id: 'status', data: { phase, n: ++statusN } });
  const tool = (id, name, n) => {
    const { pieces, input } = toolInput(random, n, `${name} ${id}`);
    c.push({ type: 'tool-input-start', toolCallId: id, toolName: name });
    for (const p of pieces) c.push({ type: 'tool-input-delta', toolCallId: id, inputTextDelta: p });
    c.push({ type: 'tool-input-available', toolCallId: id, toolName: name, input });
    for (let k = 1; k <= 4; k++) {
      c.push({ type: 'tool-output-available', toolCallId: id, output: { progress: k / 5, rows: k * 3 }, preliminary: true });
      status(`${id} ${k}`);
    }
    c.push({
      type: 'tool-output-available',
      toolCallId: id,
      output: { rows: Array.from({ length: 6 }, (_, i) => ({ i, title: words(random, 4).join('').trim() })) },
    });
  };
  const text = (id, n, everyData) => {
    c.push({ type: 'text-start', id });
    words(random, n).forEach((w, i) => {
      c.push({ type: 'text-delta', id, delta: w });
      if (everyData && i % everyData === everyData - 1) {
        c.push({ type: `data-citation`, id: `${id}-cite-${i}`, data: { url: `https://example.com/${id}/${i}`, title: w.trim() } });
      }
    });
    c.push({ type: 'text-end', id });
  };

  c.push({ type: 'start', messageId });
  c.push({ type: 'start-step' });
  status('thinking');
  c.push({ type: 'reasoning-start', id: 'reasoning-1' });
  for (const w of words(random, 340)) c.push({ type: 'reasoning-delta', id: 'reasoning-1', delta: w });
  c.push({ type: 'reasoning-end', id: 'reasoning-1' });
  tool('call-1', 'search', 240);
  c.push({ type: 'finish-step' });
  c.push({ type: 'start-step' });
  status('writing');
  text('text-1', 520, 50);
  tool('call-2', 'lookup', 150);
  // The second text takes what is left (a data-status update pads the count when the citations
  // every 60 deltas skip it), so the turn has exactly TOTAL chunks.
  // Left for the text's deltas and citations: all but text-start, text-end, the last status,
  // finish-step and finish.
  const room = TOTAL - c.length - 5;
  let n = room;
  while (n + Math.floor(n / 60) > room) n--;
  text('text-2', n, 60);
  while (c.length < TOTAL - 2) status('done');
  c.push({ type: 'finish-step' });
  c.push({ type: 'finish', finishReason: 'stop' });
  if (c.length !== TOTAL) throw new Error(`the turn has ${c.length} chunks, not ${TOTAL}`);
  return c;
}

/** The SSE text of one chunk, as `toUIMessageStreamResponse()` writes it. */
export const sseOf = (chunk) => `data: ${JSON.stringify(chunk)}\n\n`;

/** Counts of the turn's chunks by type (for the conditions printed with the table). */
export function census(chunks) {
  const by = {};
  for (const ch of chunks) by[ch.type] = (by[ch.type] ?? 0) + 1;
  return by;
}
