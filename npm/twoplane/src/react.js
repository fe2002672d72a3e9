// `twoplane/react`: the `useStreamedText` hook, the only module of the package that imports React
// (so apps without React never load it).
//
// The contract (docs/contract.md §4), on top of StreamReader:
// - The join offset is the durable text's length when the subscription starts; later durable
//   updates re-render but never restart the subscription (they are read through a ref, and are
//   not an effect dependency).
// - The rendered text is `spliceStreamText(durableNow, produced)` keyed to the stream id: after a
//   switch to another stream, the old stream's tail is never spliced onto the new durable text.
// - The reader closes itself on a terminal frame; unmounting, disabling, or changing the endpoint
//   or stream id closes it too.
// - Frames arriving faster than the screen refreshes are coalesced into one render per animation
//   frame (a macrotask where there is no requestAnimationFrame), so a fast stream costs one
//   splice per frame on screen rather than one per delta.

import { useEffect, useRef, useState } from 'react';
import { StreamReader, spliceStreamText } from 'twoplane';

const schedule = typeof requestAnimationFrame === 'function'
  ? (fn) => { const id = requestAnimationFrame(fn); return () => cancelAnimationFrame(id); }
  : (fn) => { const id = setTimeout(fn, 0); return () => clearTimeout(id); };

/**
 * The live state of one stream: `{ text, stopped, connections }`, where `text` is what to render
 * and `stopped` is null while live or the reader's stop reason.
 */
export function useStreamedTextState({ endpoint, streamId, durableText = '', enabled = true, ...readerOptions } = {}) {
  const durable = typeof durableText === 'string' ? durableText : '';
  // The durable text as of the latest render; the effect reads it once, at subscribe time.
  const durableRef = useRef(durable);
  durableRef.current = durable;
  const optionsRef = useRef(readerOptions);
  optionsRef.current = readerOptions;
  // The last snapshot of the reader: which stream it belongs to and its accumulated text.
  const [live, setLive] = useState(null);

  // A URL object is a new object on every render; its text is what identifies the endpoint.
  const target = endpoint === undefined || endpoint === null ? null : String(endpoint);
  const active = Boolean(enabled) && typeof streamId === 'string' && target !== null;
  useEffect(() => {
    if (!active) return undefined;
    let cancel = null;
    const { onUpdate, onStop, ...rest } = optionsRef.current;
    const snapshot = () => ({ streamId, text: reader.text, stopped: reader.stopped, connections: reader.connections });
    const flush = () => {
      cancel = null;
      setLive(snapshot());
    };
    const reader = new StreamReader({
      ...rest,
      endpoint: target,
      streamId,
      durableText: durableRef.current,
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

  const mine = live !== null && live.streamId === streamId ? live : null;
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
