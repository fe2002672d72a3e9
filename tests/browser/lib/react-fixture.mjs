// What the hook tests (node-react.test.mjs, node-react-message.test.mjs) share: a fetch whose SSE
// bodies the test writes frame by frame, and a way to let React and the reader settle.
import TestRenderer from 'react-test-renderer';

globalThis.IS_REACT_ACT_ENVIRONMENT = true;
const { act } = TestRenderer;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fetch whose every call returns an SSE body the test writes to: `calls[i].send(frame)`,
 *  `calls[i].sendAll(frames)` (one network read), `calls[i].drop()`. */
export function fakeFetch() {
  const calls = [];
  const encoder = new TextEncoder();
  const event = (frame) => `data: ${JSON.stringify(frame)}\n\n`;
  async function fetch(url, init) {
    const call = { url: String(url), lastEventId: init.headers.get('last-event-id'), aborted: false, cancelled: false };
    const body = new ReadableStream({
      start(controller) {
        call.send = (frame) => controller.enqueue(encoder.encode(event(frame)));
        call.sendAll = (frames) => controller.enqueue(encoder.encode(frames.map(event).join('')));
        call.drop = () => controller.close();
      },
      cancel() {
        call.cancelled = true;
      },
    });
    init.signal.addEventListener('abort', () => {
      call.aborted = true;
    });
    calls.push(call);
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  }
  return { fetch, calls };
}

/** Run `fn` inside act(), then let the reader and the scheduled renders run. */
export async function settle(fn) {
  await act(async () => {
    if (fn) fn();
    await sleep(30);
  });
}

export { act };
