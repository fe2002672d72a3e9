// Reading the bytes a benchmark reader received: SSE events located by byte offset (the servers
// end lines with "\n"; 0x0a never occurs inside a UTF-8 sequence, so a split on bytes is safe),
// and what a reader holds of a UI message, to tell which bytes of a resume it already had.

const LF2 = Buffer.from('\n\n');

/**
 * The complete events in `buf` from byte `from`: `{ start, end, id, data }` with `end` past the
 * blank line; `data` is null for a block without a data line (a comment). `rest` is where the
 * incomplete tail starts.
 */
export function splitEvents(buf, from = 0) {
  const events = [];
  let at = from;
  for (;;) {
    const stop = buf.indexOf(LF2, at);
    if (stop < 0) break;
    const block = buf.toString('utf8', at, stop);
    let id = null;
    let data = null;
    for (const line of block.split('\n')) {
      if (line.startsWith('data:')) {
        const v = line.slice(line[5] === ' ' ? 6 : 5);
        data = data === null ? v : `${data}\n${v}`;
      } else if (line.startsWith('id:')) {
        id = line.slice(line[3] === ' ' ? 4 : 3);
      }
    }
    events.push({ start: at, end: stop + 2, id, data });
    at = stop + 2;
  }
  return { events, rest: at };
}

/** Whether `buf` holds a complete event with a data line (the first chunk has arrived). */
export function hasDataEvent(buf) {
  let at = 0;
  for (;;) {
    const stop = buf.indexOf(LF2, at);
    if (stop < 0) return false;
    const block = buf.toString('latin1', at, stop);
    if (block.startsWith('data:') || block.includes('\ndata:')) return true;
    at = stop + 2;
  }
}

/** The bytes of `buf` that decode to whole characters, and their length in UTF-16 units. */
export function wholeChars(buf) {
  const text = new TextDecoder().decode(buf, { stream: true });
  return { chars: text.length, bytes: Buffer.byteLength(text) };
}

/** A JSON text with sorted keys, so equal chunks compare equal whatever their key order. */
export function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .filter((k) => value[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A body delta's part and text, or null for any other chunk. */
function bodyOf(chunk) {
  switch (chunk.type) {
    case 'text-delta':
      return { key: `text:${chunk.id}`, text: chunk.delta };
    case 'reasoning-delta':
      return { key: `reasoning:${chunk.id}`, text: chunk.delta };
    case 'tool-input-delta':
      return { key: `tool:${chunk.toolCallId}`, text: chunk.inputTextDelta };
    default:
      return null;
  }
}

/**
 * What a reader holds after `events`: per streamed part, the length of its body; every other
 * chunk as its canonical JSON, counted.
 */
export function holdings(events) {
  const bodies = new Map();
  const atoms = new Map();
  for (const e of events) {
    if (e.data === null || e.data === '[DONE]') continue;
    const chunk = JSON.parse(e.data);
    const body = bodyOf(chunk);
    if (body) bodies.set(body.key, (bodies.get(body.key) ?? 0) + body.text.length);
    else {
      const a = canonical(chunk);
      atoms.set(a, (atoms.get(a) ?? 0) + 1);
    }
  }
  return { bodies, atoms };
}

/**
 * The bytes of `events` (a resume's) that repeat what `held` holds. A delta whose text the reader
 * has whole counts with its framing; one that it has in part counts the UTF-8 bytes of that part;
 * any other chunk counts when the reader holds an equal one (each held chunk matches once).
 * `continues`: the events carry on from the held position (an offset the server honoured), so
 * their bodies start where the held ones end; otherwise they rebuild the message from nothing.
 * `clip` is the first byte that belongs to the resume (an event begun before it counts from it).
 */
export function repeatedBytes(events, held, { continues, clip = 0 }) {
  const at = new Map(continues ? held.bodies : []);
  const atoms = new Map(held.atoms);
  let repeated = 0;
  for (const e of events) {
    if (e.data === null || e.data === '[DONE]') continue;
    const size = e.end - Math.max(e.start, clip);
    const chunk = JSON.parse(e.data);
    const body = bodyOf(chunk);
    if (body) {
      const from = at.get(body.key) ?? 0;
      const have = held.bodies.get(body.key) ?? 0;
      const overlap = Math.max(0, Math.min(from + body.text.length, have) - from);
      if (overlap > 0 && overlap === body.text.length) repeated += size;
      else if (overlap > 0) repeated += Buffer.byteLength(body.text.slice(0, overlap));
      at.set(body.key, from + body.text.length);
    } else {
      const a = canonical(chunk);
      const n = atoms.get(a) ?? 0;
      if (n > 0) {
        repeated += size;
        atoms.set(a, n - 1);
      }
    }
  }
  return repeated;
}
