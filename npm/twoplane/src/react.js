// `twoplane/react`: the `useStreamedText` and `useStreamedMessage` hooks, the only module of the
// package that imports React (so apps without React never load it).
//
// The contract (docs/contract.md §4, and §8 for messages), on top of StreamReader:
// - The join offset is the durable text's length (the durable message's `len`) when the
//   subscription starts; later durable updates re-render but never restart the subscription
//   (they are read through a ref, and are not an effect dependency).
// - The rendered text is `spliceStreamText(durableNow, produced)` keyed to the stream id, the
//   rendered message the longer of the durable one and the reader's: after a switch to another
//   stream, the old stream's tail is never shown with the new stream's durable state.
// - The reader closes itself on a terminal frame; unmounting, disabling, or changing the endpoint
//   or stream id closes it too.
// - Frames arriving faster than the screen refreshes are coalesced into one render per animation
//   frame (a macrotask where there is no requestAnimationFrame), so a fast stream costs one
//   splice per frame on screen rather than one per delta.

import { useEffect, useRef, useState } from 'react';
import { DurableMessage, StreamReader, spliceStreamText } from 'twoplane';

const schedule = typeof requestAnimationFrame === 'function'
  ? (fn) => { const id = requestAnimationFrame(fn); return () => cancelAnimationFrame(id); }
  : (fn) => { const id = setTimeout(fn, 0); return () => clearTimeout(id); };

/**
 * The reader of one stream while `active`, as the latest snapshot for `streamId` (null before
 * the first one, or when the snapshot is another stream's): `{ streamId, stopped, connections,
 * ...take(reader) }`. `seed()` gives the reader's durable option, read once per subscription.
 */
function useLiveReader(endpoint, streamId, enabled, readerOptions, seed, take) {
  const optionsRef = useRef(readerOptions);
  optionsRef.current = readerOptions;
  const seedRef = useRef(seed);
  seedRef.current = seed;
  const takeRef = useRef(take);
  takeRef.current = take;
  const [live, setLive] = useState(null);

  // A URL object is a new object on every render; its text is what identifies the endpoint.
  const target = endpoint === undefined || endpoint === null ? null : String(endpoint);
  const active = Boolean(enabled) && typeof streamId === 'string' && target !== null;
  useEffect(() => {
    if (!active) return undefined;
    let cancel = null;
    const { onUpdate, onStop, ...rest } = optionsRef.current;
    const pick = takeRef.current;
    const snapshot = () => ({ streamId, stopped: reader.stopped, connections: reader.connections, ...pick(reader) });
    const flush = () => {
      cancel = null;
      setLive(snapshot());
    };
    const reader = new StreamReader({
      ...rest,
      endpoint: target,
      streamId,
      ...seedRef.current(),
      onUpdate(update) {
        if (typeof onUpdate === 'function') onUpdate(update);
        if (cancel === null) cancel = schedule(flush);
      },
      onStop(reason, frame) {
        if (cancel !== null) cancel();
        flush();
        if (typeof onStop === 'function') onStop(reason, frame);
      },
    });
    reader.start();
    setLive(snapshot());
    return () => {
      if (cancel !== null) cancel();
      cancel = null;
      reader.close();
    };
  }, [active, target, streamId]);

  return live !== null && live.streamId === streamId ? live : null;
}

/**
 * The live state of one stream: `{ text, stopped, connections }`, where `text` is what to render
 * and `stopped` is null while live or the reader's stop reason.
 */
export function useStreamedTextState({ endpoint, streamId, durableText = '', enabled = true, ...readerOptions } = {}) {
  const durable = typeof durableText === 'string' ? durableText : '';
  // The durable text as of the latest render; the effect reads it once, at subscribe time.
  const mine = useLiveReader(endpoint, streamId, enabled, readerOptions, () => ({ durableText: durable }), (r) => ({ text: r.text }));
  return {
    text: mine === null ? durable : spliceStreamText(durable, mine.text),
    stopped: mine === null ? null : mine.stopped,
    connections: mine === null ? 0 : mine.connections,
  };
}

/** The text to render for `streamId`: the durable text spliced with the live tail. */
export function useStreamedText(options) {
  return useStreamedTextState(options).text;
}

/** What renders before anything is durable or live: the empty message. */
const EMPTY_MESSAGE = Object.freeze({ parts: Object.freeze([]) });

/**
 * The live state of one stream of a message made of parts (docs/contract.md §8): `{ message,
 * stopped, connections }`. `durable` is the DurableMessage the app holds now
 * (`assembleDurableMessage`; anything else counts as none): the reader joins at its `len` once,
 * and later values re-render but never restart the subscription. `message` is the longer of the
 * durable message and the reader's (by `len`; a tie goes to the store), keyed to `streamId`
 * (rule 4 of §4), in the stored document's shape.
 */
export function useStreamedMessage({ endpoint, streamId, durable = null, enabled = true, ...readerOptions } = {}) {
  const held = durable instanceof DurableMessage ? durable : null;
  const mine = useLiveReader(endpoint, streamId, enabled, readerOptions, () => ({ durable: held }), (r) => ({ message: r.message, len: r.resumeFrom }));
  const durableLen = held === null ? 0 : held.len;
  const durableMessage = held === null ? EMPTY_MESSAGE : held.message;
  return {
    message: mine === null || durableLen >= mine.len ? durableMessage : mine.message,
    stopped: mine === null ? null : mine.stopped,
    connections: mine === null ? 0 : mine.connections,
  };
}
