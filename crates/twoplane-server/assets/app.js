// The demo page: a chat list rendered from the durable view, with live answers joined through
// the browser package's StreamReader.
//
// The two-plane rule this page follows: what the store holds (GET /api/messages) is the truth,
// and the live stream only ever extends it. A message that is still streaming is joined at its
// durable length with its durable text as the seed, so a reload in the middle of an answer
// shows every character once: the stored prefix, then the live tail from exactly that offset.

import { StreamReader } from '/pkg/twoplane/src/index.browser.js';

const list = document.getElementById('messages');
const form = document.getElementById('ask');
const input = document.getElementById('prompt');
const send = document.getElementById('send');
const status = document.getElementById('status');

// How often a message whose live stream was lost (stale/absent) re-reads the store.
const STORE_POLL_MS = 400;

async function getJson(url, init) {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function durableMessage(id) {
  const { messages } = await getJson('/api/messages');
  return messages.find((m) => m.id === id);
}

function render(message) {
  const el = document.createElement('article');
  el.className = `msg ${message.role}`;
  el.dataset.id = message.id;
  el.dataset.status = message.status ?? '';
  const body = document.createElement('div');
  body.className = 'body';
  body.textContent = message.body;
  const meta = document.createElement('div');
  meta.className = 'meta';
  el.append(body, meta);
  list.append(el);
  describe(el, message.status);
  return { el, body, meta };
}

function describe(el, state, extra = '') {
  el.dataset.status = state ?? '';
  const meta = el.querySelector('.meta');
  if (el.classList.contains('user')) {
    meta.textContent = '';
    return;
  }
  meta.textContent = state === 'streaming' ? `streaming${extra}` : (state ?? '') + extra;
}

function scrollDown() {
  window.scrollTo({ top: document.body.scrollHeight });
}

// Follow a streaming assistant message from its durable prefix to its sealed body.
function follow(message, view) {
  const reader = new StreamReader({
    endpoint: '/api/stream',
    streamId: message.id,
    durableText: message.body,
    onUpdate({ text }) {
      view.body.textContent = text;
      view.el.dataset.live = 'true';
      scrollDown();
    },
    onStop(reason) {
      settle(message.id, reader, view, reason).catch((err) => {
        describe(view.el, 'error', ` (${err.message})`);
      });
    },
  });
  describe(view.el, 'streaming', ' · live');
  reader.start();
}

// After any terminal frame the store is the whole truth: read it until the message is sealed,
// showing the splice of the stored text and whatever the live plane already delivered.
async function settle(id, reader, view, reason) {
  for (;;) {
    const message = await durableMessage(id);
    if (!message) return;
    view.body.textContent = reader.rendered(message.body);
    if (message.status !== 'streaming') {
      reader.close();
      view.body.textContent = message.body;
      describe(view.el, message.status);
      scrollDown();
      return;
    }
    describe(view.el, 'streaming', ` · from the store (${reason})`);
    await new Promise((resolve) => setTimeout(resolve, STORE_POLL_MS));
  }
}

async function load() {
  const { messages } = await getJson('/api/messages');
  for (const message of messages) {
    const view = render(message);
    if (message.role === 'assistant' && message.status === 'streaming') follow(message, view);
  }
  scrollDown();
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const prompt = input.value.trim();
  if (!prompt) return;
  send.disabled = true;
  try {
    const { user, assistant } = await getJson('/api/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt }),
    });
    input.value = '';
    render(user);
    follow(assistant, render(assistant));
    scrollDown();
  } catch (err) {
    status.textContent = err.message;
  } finally {
    send.disabled = false;
    input.focus();
  }
});

load().then(
  () => {
    status.textContent = 'ready';
    status.dataset.ready = 'true';
  },
  (err) => {
    status.textContent = `could not load messages: ${err.message}`;
  },
);
