// The end-to-end page: follows the fixture's stream with the package's StreamReader, rendering it
// into a DOM text node incrementally from `onUpdate` (cut, appended), and checks every state the
// node ever holds: each mutation record's old value and the final value must be prefixes of the
// produced text. Reports to `window.__result` once the reader stops.
import { StreamReader } from 'twoplane';

const params = new URLSearchParams(location.search);
const transport = params.get('transport') ?? 'fetch';
const expected = await (await fetch('/expected.json')).json();
const produced = expected.text;
const durable = produced.slice(0, expected.join);

const node = document.createTextNode(durable);
document.getElementById('out').append(node);
let states = 0;
let notPrefix = 0;
const check = (text) => {
  states++;
  if (!produced.startsWith(text)) notPrefix++;
};
const observer = new MutationObserver((records) => {
  for (const r of records) check(r.oldValue);
});
observer.observe(node, { characterData: true, characterDataOldValue: true });

let updates = 0;
const reader = new StreamReader({
  endpoint: '/sse',
  streamId: expected.streamId,
  durableText: durable,
  transport,
  backoff: { initialMs: 10, maxMs: 50 },
  onUpdate({ cut, appended }) {
    updates++;
    if (cut < node.length) node.deleteData(cut, node.length - cut);
    if (appended.length > 0) node.appendData(appended);
  },
  onStop(reason) {
    // Let the observer deliver the last records before reporting.
    setTimeout(() => {
      for (const r of observer.takeRecords()) check(r.oldValue);
      check(node.data);
      window.__result = {
        reason,
        text: node.data,
        readerText: reader.text,
        rendered: reader.rendered(durable),
        connections: reader.connections,
        updates,
        states,
        notPrefix,
      };
    }, 0);
  },
});
reader.start();
