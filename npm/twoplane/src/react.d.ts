// Types of `twoplane/react`.
import type { DurableMessage, StoredMessage, StreamReaderOptions, StreamStopReason } from './index.js';

export interface UseStreamedTextOptions extends Omit<StreamReaderOptions, 'streamId' | 'durableText' | 'durable'> {
  /** The subscribe endpoint. */
  endpoint: string | URL;
  /** The stream to follow; the rendered text is keyed to it. */
  streamId: string;
  /** The durable text now. Its length when the subscription starts is the join offset; later
   *  values re-render but never restart the subscription. */
  durableText?: string;
  /** Subscribe only while true (e.g. while the row's status is `streaming`). Default true. */
  enabled?: boolean;
}

export interface StreamedTextState {
  /** `spliceStreamText(durableText, produced)` for this stream. */
  text: string;
  /** null while live (or before subscribing), else why the reader stopped. */
  stopped: StreamStopReason | null;
  connections: number;
}

/** The text to render: the durable text spliced with the live tail of `streamId`. */
export declare function useStreamedText(options: UseStreamedTextOptions): string;
/** The same, with the reader's status. */
export declare function useStreamedTextState(options: UseStreamedTextOptions): StreamedTextState;

export interface UseStreamedMessageOptions extends Omit<StreamReaderOptions, 'streamId' | 'durableText' | 'durable'> {
  /** The subscribe endpoint. */
  endpoint: string | URL;
  /** The stream to follow; the rendered message is keyed to it. */
  streamId: string;
  /** The durable message now (`assembleDurableMessage`; none: the empty message). Its `len` when
   *  the subscription starts is the join offset; later values re-render but never restart it. */
  durable?: DurableMessage | null;
  /** Subscribe only while true (e.g. while the row's status is `streaming`). Default true. */
  enabled?: boolean;
}

export interface StreamedMessageState {
  /** The longer of the durable message and the reader's (by `len`), for this stream. */
  message: StoredMessage;
  /** null while live (or before subscribing), else why the reader stopped. */
  stopped: StreamStopReason | null;
  connections: number;
}

/** The message to render: the durable message or the live one, whichever says more, with the
 *  reader's status. Renders are coalesced to one per animation frame. */
export declare function useStreamedMessage(options: UseStreamedMessageOptions): StreamedMessageState;
