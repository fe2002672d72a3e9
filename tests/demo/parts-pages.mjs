// The pages parts.test.mjs serves to Chromium (through request interception on the server's own
// origin), written as an application would write them, without a bundler: an import map names
// `twoplane` (the package's browser build), `twoplane/react` and `react` (a module over React's
// UMD build, loaded by a classic script first).
//
// Each page reads the durable message the way an application reads its own tables, from the
// demo's `GET /api/messages` (the message row and its chunk rows, assembled in the page with
// `assembleDurableMessage`), joins the live stream at it, and keeps what the test checks in
// `window.state`: the join offset, every message it held after each change (`log`: `[len,
// document JSON]`, or the rendered documents for the React page), where it is (`pos`), and how
// it stopped, and what the server said of the rows it assembled (`view`). A reload of the page is a new join at the durable message read then.

const IMPORT_MAP = JSON.stringify({
  imports: {
    twoplane: '/__test/pkg/src/index.browser.js',
    'twoplane/react': '/__test/pkg/src/react.js',
    react: '/__test/react-shim.js',
  },
});

/** The module both pages share: the durable message of an id as the app's view shows it. */
const DURABLE_JS = `
import { assembleDurableMessage } from 'twoplane';

/** { durable, status, view } of message \`id\` now: its rows assembled (a message whose view
 *  has no rows is still one text: its body); \`view\` is what the server says of the same rows
 *  (the row's \`seq\` and its own assembly, \`document\`), for the test to compare. */
export async function readDurable(id) {
  const res = await fetch('/api/messages', { cache: 'no-store' });
  if (!res.ok) throw new Error('GET /api/messages answered ' + res.status);
  const m = (await res.json()).messages.find((x) => x.id === id);
  if (!m) throw new Error('no message ' + id);
  const durable = m.rows ? assembleDurableMessage(m.rows, m.rows.chunks) : assembleDurableMessage({ body: m.body }, []);
  return { durable, status: m.status, view: { seq: m.seq, document: m.document ?? null } };
}
`;

/** The StreamReader page: `?id=<stream id>&transport=fetch|eventsource`. */
const READER_HTML = `<!doctype html><meta charset="utf-8"><title>reader</title>
<script type="importmap">${IMPORT_MAP}</script>
<script type="module">
import { StreamReader } from 'twoplane';
import { readDurable } from '/__test/durable.js';
const q = new URLSearchParams(location.search);
const state = (window.state = { joinAt: null, status: null, view: null, pos: null, log: [], stop: null, message: null, connections: 0, error: null });
try {
  const { durable, status, view } = await readDurable(q.get('id'));
  state.view = view;
  state.joinAt = durable.len;
  state.pos = durable.len;
  state.status = status;
  state.log.push([durable.len, JSON.stringify(durable.message)]);
  const reader = new StreamReader({
    endpoint: '/api/stream',
    streamId: q.get('id'),
    durable,
    transport: q.get('transport'),
    onUpdate() {
      state.pos = reader.resumeFrom;
      state.log.push([reader.resumeFrom, JSON.stringify(reader.message)]);
    },
    onStop(reason) {
      state.pos = reader.resumeFrom;
      state.message = JSON.stringify(reader.message);
      state.connections = reader.connections;
      state.stop = reason;
    },
  });
  reader.start();
} catch (err) {
  state.error = String(err && err.stack ? err.stack : err);
}
window.ready = true;
</script>`;

/** The React page: `useStreamedMessage` renders the message of `?id=`, with the durable message
 *  read when the page loaded (kept as it was, so what renders past it is the reader's). */
const REACT_HTML = `<!doctype html><meta charset="utf-8"><title>react</title>
<script src="/__test/vendor/react.js"></script>
<script src="/__test/vendor/react-dom.js"></script>
<script type="importmap">${IMPORT_MAP}</script>
<div id="root"></div>
<script type="module">
import { createElement as h, useEffect } from 'react';
import { useStreamedMessage } from 'twoplane/react';
import { readDurable } from '/__test/durable.js';
const q = new URLSearchParams(location.search);
const id = q.get('id');
const state = (window.state = { joinAt: null, joined: null, status: null, view: null, pos: null, renders: [], stop: null, message: null, connections: 0, error: null });

function Part({ part }) {
  const body = part.text ?? part.inputText ?? '';
  return h('section', { 'data-type': part.type }, body);
}

function Answer({ durable }) {
  const { message, stopped, connections } = useStreamedMessage({
    endpoint: '/api/stream',
    streamId: id,
    durable,
    onFrame(frame) {
      if (frame && typeof frame.seq === 'number' && !['open', 'durable', 'end'].includes(frame.type)) state.pos = Math.max(state.pos, frame.seq);
    },
  });
  useEffect(() => {
    state.renders.push(JSON.stringify(message));
    state.connections = connections;
    if (stopped !== null) {
      state.message = JSON.stringify(message);
      state.stop = stopped;
    }
  });
  return h('article', { id: 'answer' }, message.parts.map((part, i) => h(Part, { key: i, part })));
}

try {
  const { durable, status, view } = await readDurable(id);
  state.view = view;
  state.joinAt = durable.len;
  state.joined = JSON.stringify(durable.message);
  state.pos = durable.len;
  state.status = status;
  ReactDOM.createRoot(document.getElementById('root')).render(h(Answer, { durable }));
} catch (err) {
  state.error = String(err && err.stack ? err.stack : err);
}
window.ready = true;
</script>`;

/** `react` as a module, over the UMD build the page loaded. */
const REACT_SHIM_JS = `const React = globalThis.React;
export default React;
export const { createElement, useEffect, useRef, useState, useMemo, useCallback, Fragment } = React;
`;

/** path (under /__test/) -> [content type, body] of the pages and modules written here. */
export const PAGES = {
  'reader.html': ['text/html; charset=utf-8', READER_HTML],
  'react.html': ['text/html; charset=utf-8', REACT_HTML],
  'durable.js': ['text/javascript; charset=utf-8', DURABLE_JS],
  'react-shim.js': ['text/javascript; charset=utf-8', REACT_SHIM_JS],
};
