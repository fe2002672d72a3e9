// The page of browser-continue.test.mjs: `useChat({ resume: true })` of @ai-sdk/react in one of
// two modes (`?mode=`): `twoplane`, with the `twoplane/ai-sdk` transport reading twoplane through
// the app's own origin (`/tp`, a proxy) and its held record in sessionStorage (`webStorageHeld`),
// or `plain`, with the SDK's own `DefaultChatTransport` against the app's route without twoplane.
// `?flow=client`: the model calls `confirm`, which `onToolCall` answers (`addToolOutput`, ai 5
// `addToolResult`) and `lastAssistantMessageIsCompleteWithToolCalls` sends on; `?flow=approval`
// (ai 6 and 7): the model calls `deploy`, the #approve button gives the approval
// (`addToolApprovalResponse`) and `lastAssistantMessageIsCompleteWithApprovalResponses` sends on.
//
// The page starts from the messages the app's server saved for the chat (`GET
// /chats/<chat>/messages`), as an app that persists on the server does. `onToolCall` and the
// approval report themselves to the app (`POST /tool-ran`, `POST /approved`), so the test counts
// them over reloads. The page shows its messages as JSON in #messages and its status in #status.
import React from 'react';
import { createRoot } from 'react-dom/client';
import { useChat } from '@ai-sdk/react';
import * as ai from 'ai';
import { TwoplaneChatTransport, webStorageHeld } from 'twoplane/ai-sdk';

const query = new URLSearchParams(location.search);
const mode = query.get('mode') ?? 'twoplane';
const flow = query.get('flow') ?? 'client';
const chatId = query.get('chat') ?? 'chat-1';
const api = `/${mode}/${flow}`;
const transport =
  mode === 'twoplane'
    ? new TwoplaneChatTransport({ api, endpoint: '/tp', held: webStorageHeld(sessionStorage) })
    : new ai.DefaultChatTransport({ api });
const stored = await (await fetch(`/chats/${encodeURIComponent(chatId)}/messages`)).json();
window.__loads = Number(sessionStorage.getItem('loads') ?? 0) + 1;
sessionStorage.setItem('loads', String(window.__loads));

const report = (path, body) => fetch(path, { method: 'POST', body: JSON.stringify({ chatId, ...body }), keepalive: true });

function App() {
  const helpers = React.useRef(null);
  const onToolCall = ({ toolCall }) => {
    report('/tool-ran', { toolCallId: toolCall.toolCallId });
    if (flow === 'client') {
      const h = helpers.current;
      (h.addToolOutput ?? h.addToolResult)({ tool: 'confirm', toolCallId: toolCall.toolCallId, output: { answer: 'yes' } });
    }
  };
  const chat = useChat({
    id: chatId,
    resume: true,
    transport,
    messages: stored,
    // ai 5 has no approvals (nor their predicate): a namespace import keeps its bundle whole.
    sendAutomaticallyWhen: flow === 'client' ? ai.lastAssistantMessageIsCompleteWithToolCalls : ai.lastAssistantMessageIsCompleteWithApprovalResponses,
    onToolCall: mode === 'twoplane' ? transport.fresh(onToolCall) : onToolCall,
  });
  helpers.current = chat;
  const { messages, sendMessage, status, error } = chat;
  const approve = () => {
    const asked = messages.at(-1)?.parts.find((p) => p.state === 'approval-requested');
    if (!asked) return;
    report('/approved', { approvalId: asked.approval.id });
    chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
  };
  return React.createElement(
    'main',
    null,
    React.createElement('button', { id: 'send', onClick: () => sendMessage({ text: 'Go ahead.' }) }, 'send'),
    React.createElement('button', { id: 'approve', onClick: approve }, 'approve'),
    React.createElement('p', { id: 'status' }, `${status}${error ? ` ${error.message}` : ''}`),
    React.createElement('pre', { id: 'messages' }, JSON.stringify(messages)),
  );
}

createRoot(document.getElementById('root')).render(React.createElement(App));
