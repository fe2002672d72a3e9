// Types of `twoplane/react`.
import type { StreamReaderOptions, StreamStopReason } from './index.js';

export interface UseStreamedTextOptions extends Omit<StreamReaderOptions, 'streamId' | 'durableText'> {
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
