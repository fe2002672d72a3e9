// A tiny chat view built with Vite: the React hook from `twoplane/react` renders the stream, and
// the framework-free StreamReader from `twoplane` follows the same stream into a text node. Both
// must end with the produced text; the page reports to window.__result.
import React from 'react';
import { createRoot } from 'react-dom/client';
import { StreamReader, spliceStreamText, STREAM_STATUS_STREAMING } from 'twoplane';
import { useStreamedTextState } from 'twoplane/react';

const expected = await (await fetch('/expected.json')).json();
const durable = expected.text.slice(0, expected.join);
const done = {};
const report = () => {
  if (done.hook !== undefined && done.plain !== undefined) {
    window.__result = { ...done, status: STREAM_STATUS_STREAMING, splice: spliceStreamText('ab', 'xyz') };
  }
};

function Message() {
  const { text, stopped } = useStreamedTextState({
    endpoint: '/sse',
    streamId: expected.streamId,
    durableText: durable,
    backoff: { initialMs: 10, maxMs: 50 },
  });
  React.useEffect(() => {
    if (stopped !== null && done.hook === undefined) {
      done.hook = { stopped, text };
      report();
    }
  }, [stopped, text]);
  return React.createElement('p', { id: 'message' }, text);
}

createRoot(document.getElementById('root')).render(React.createElement(Message));

const node = document.createTextNode(durable);
document.getElementById('plain').append(node);
new StreamReader({
  endpoint: '/sse',
  streamId: expected.streamId,
  durableText: durable,
  backoff: { initialMs: 10, maxMs: 50 },
  onUpdate({ cut, appended }) {
    node.deleteData(cut, node.length - cut);
    node.appendData(appended);
  },
  onStop(reason) {
    done.plain = { stopped: reason, text: node.data };
    report();
  },
}).start();
