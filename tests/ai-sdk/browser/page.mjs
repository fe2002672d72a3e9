// The page of browser.test.mjs: `useChat({ resume: true })` of @ai-sdk/react with the
// `twoplane/ai-sdk` transport, reading twoplane through the app's own origin (`/tp`, a proxy). The
// user's messages are kept in sessionStorage (what an app stores), the transport's held offset too
// (`webStorageHeld`). `onToolCall` reports every call it runs to the app (`POST /tool-ran`, with the
// page's load number), so the test counts how often and where a client-side tool ran across reloads. The page shows the assistant message
// as JSON in #message and its status in #status.
import React from 'react';
import { createRoot } from 'react-dom/client';
import { useChat } from '@ai-sdk/react';
import { TwoplaneChatTransport, webStorageHeld } from 'twoplane/ai-sdk';

const transport = new TwoplaneChatTransport({ api: '/api/chat', endpoint: '/tp', held: webStorageHeld(sessionStorage) });
const chatId = new URLSearchParams(location.search).get('chat') ?? 'chat-1';
const stored = JSON.parse(sessionStorage.getItem(`${chatId}:messages`) ?? '[]');
window.__loads = Number(sessionStorage.getItem('loads') ?? 0) + 1;
sessionStorage.setItem('loads', String(window.__loads));

function App() {
  const { messages, sendMessage, status, error } = useChat({
    id: chatId,
    resume: true,
    transport,
    messages: stored,
    onToolCall: transport.fresh(async ({ toolCall }) => {
      await fetch('/tool-ran', { method: 'POST', body: `${toolCall.toolCallId} ${window.__loads}`, keepalive: true });
    }),
    onData: transport.fresh(() => {
      window.__data = (window.__data ?? 0) + 1;
    }),
  });
  React.useEffect(() => {
    sessionStorage.setItem(`${chatId}:messages`, JSON.stringify(messages.filter((m) => m.role === 'user')));
  }, [messages]);
  const answer = messages.find((m) => m.role === 'assistant');
  return React.createElement(
    'main',
    null,
    React.createElement('button', { id: 'send', onClick: () => sendMessage({ text: 'How does resuming a stream work?' }) }, 'send'),
    React.createElement('p', { id: 'status' }, `${status}${error ? ` ${error.message}` : ''}`),
    React.createElement('p', { id: 'text' }, answer ? answer.parts.filter((p) => p.type === 'text').map((p) => p.text).join('\n') : ''),
    React.createElement('pre', { id: 'message' }, answer ? JSON.stringify(answer) : ''),
    React.createElement('p', { id: 'count' }, String(messages.length)),
  );
}

createRoot(document.getElementById('root')).render(React.createElement(App));
