// A plain-JavaScript model of the client reader, written from docs/contract.md §4 alone (no
// backend, no facade code): the third opinion in the reader's differential test. It holds its
// text as one string and splices by slicing, the most direct reading of the rules:
//
//   - the accumulator starts as the durable text joined at (rules 1, 2);
//   - `end`, `stale` and `absent` stop it; so does an `open` for another stream (rule 4) and
//     anything that breaks the wire contract of §1 (offsets that are not integers in
//     0..2^53-1, a chunk whose text does not span exactly `seq - from`, an unknown type);
//     after a stop every frame is ignored (rule 3);
//   - a chunk is spliced at its own `from`: `acc = acc.slice(0, from) + text` (rule 5), a chunk
//     starting past the end is a gap and stops it, and a chunk ending inside the text (both are
//     prefixes of one produced text) changes nothing;
//   - `open` (for this stream) and `durable` carry no text;
//   - the resume point is the accumulator's length; the rendered text is
//     `spliceStreamText(durableNow, acc)` for this stream and the durable text for any other.

const isOffset = (x) => Number.isInteger(x) && x >= 0 && x <= Number.MAX_SAFE_INTEGER;

/** docs/contract.md §2: the durable text wins when it is at least as long as the produced text. */
export function modelSplice(durable, produced) {
  return durable.length >= produced.length ? durable : durable + produced.slice(durable.length);
}

export class ModelReader {
  constructor(streamId, durableText) {
    this.streamId = streamId;
    this.text = durableText;
    this.stopped = null;
    /** `{ cut, appended }` of the last frame that changed the text, else null. */
    this.update = null;
  }

  get resumeFrom() {
    return this.text.length;
  }

  /** Returns whether the reader is still live, as `StreamReader.push` does. */
  push(frame) {
    this.update = null;
    if (this.stopped !== null) return false;
    const type = frame === null || typeof frame !== 'object' ? undefined : frame.type;
    switch (type) {
      case 'open':
        if (frame.streamId !== this.streamId) return this.stop('foreign_stream');
        return isOffset(frame.from) ? true : this.stop('malformed');
      case 'chunk': {
        const { from, seq, text } = frame;
        if (!isOffset(from) || !isOffset(seq) || seq < from || typeof text !== 'string' || text.length !== seq - from) {
          return this.stop('malformed');
        }
        if (from > this.text.length) return this.stop('gap');
        if (seq <= this.text.length) return true;
        this.text = this.text.slice(0, from) + text;
        // The cut is an offset: -0 (which passes as the integer 0) is reported as 0.
        this.update = { cut: from + 0, appended: text };
        return true;
      }
      case 'durable':
        return true;
      case 'end':
      case 'stale':
      case 'absent':
        return this.stop(type);
      default:
        return this.stop('malformed');
    }
  }

  rendered(durableNow, streamId = this.streamId) {
    return streamId === this.streamId ? modelSplice(durableNow, this.text) : durableNow;
  }

  stop(reason) {
    this.stopped = reason;
    return false;
  }
}
