import { createRoot } from 'react-dom/client';
import { TwoplaneChatTransport, webStorageHeld } from 'twoplane/ai-sdk';
import { App } from './App.jsx';
import './style.css';

// The chat id lives in the address, so a reload reopens the same chat (and "New chat" is a new
// address).
const params = new URLSearchParams(location.search);
let chatId = params.get('chat');
if (!chatId) {
  chatId = `chat-${crypto.randomUUID().slice(0, 8)}`;
  params.set('chat', chatId);
  history.replaceState(null, '', `${location.pathname}?${params}`);
}

const { twoplaneUrl } = await (await fetch('/api/config')).json();

// What the page holds of its current answer (the stream, its read token and how far this page
// processed it) goes to sessionStorage: that number is what a reload resumes from. With the
// default in-memory store a reload would forget it, and the page could not pick the answer up.
const held = webStorageHeld(sessionStorage);

// One transport for the page's life: useChat sends through it (POST /api/chat), and it reads and
// resumes every answer from `twoplane serve` at `twoplaneUrl`.
const transport = new TwoplaneChatTransport({ api: '/api/chat', endpoint: twoplaneUrl, held });

// No <StrictMode>: its rehearsal unmount would call the chat's stop(), which the transport turns
// into a cancel of the answer being resumed.
createRoot(document.getElementById('root')).render(<App chatId={chatId} transport={transport} held={held} />);
