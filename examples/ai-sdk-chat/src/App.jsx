import { useEffect, useMemo, useState } from 'react';
import { useChat } from '@ai-sdk/react';
import { Message } from './Message.jsx';
import { pageStore } from './store.js';

/** The page's answer to the `readerLocale` tool: only the browser knows it. */
function readerLocale() {
  return { language: navigator.language, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone };
}

export function App({ chatId, transport, held }) {
  const store = useMemo(() => pageStore(chatId), [chatId]);
  const [initialMessages] = useState(() => store.messages());
  const [runs, setRuns] = useState(() => store.runs());
  const [input, setInput] = useState('How does this page survive a reload?');

  const { messages, status, error, sendMessage, stop, addToolOutput } = useChat({
    id: chatId,
    messages: initialMessages,
    transport,
    // On load, ask the transport for the chat's answer in flight (or just finished): it resumes
    // from the offset in `held`, so an answer cut by a reload goes on where it was.
    resume: true,
    // `fresh` calls the handler only for a tool call that is new to this page: after a reload the
    // chunks that rebuild what the page had are replayed to the SDK, and a tool the page already
    // ran must not run again.
    onToolCall: transport.fresh(({ toolCall }) => {
      if (toolCall.toolName !== 'readerLocale') return;
      // A page reloaded before the answer went on has this call offered once more (docs/ai-sdk.md,
      // "A client tool whose page went away"); this page kept its output, which the effect below
      // puts back, so the tool does not run again.
      if (store.answer(toolCall.toolCallId) !== undefined) return;
      const output = readerLocale();
      store.saveAnswer(toolCall.toolCallId, output);
      setRuns(store.countRun());
      addToolOutput({ tool: 'readerLocale', toolCallId: toolCall.toolCallId, output });
    }),
  });

  useEffect(() => store.saveMessages(messages), [store, messages]);

  // A resume rebuilds the answer from twoplane, which holds what the server produced; the output
  // the page gave a client-side tool is the page's own, so it is put back from the page's store.
  useEffect(() => {
    for (const message of messages) {
      for (const part of message.parts) {
        if (part.type !== 'tool-readerLocale' || part.state !== 'input-available') continue;
        const output = store.answer(part.toolCallId);
        if (output !== undefined) addToolOutput({ tool: 'readerLocale', toolCallId: part.toolCallId, output });
      }
    }
  }, [store, messages, addToolOutput]);

  const busy = status === 'submitted' || status === 'streaming';
  const holding = held.get(chatId);

  function submit(event) {
    event.preventDefault();
    const text = input.trim();
    if (!text || busy) return;
    sendMessage({ text });
  }

  return (
    <main data-status={status}>
      <header>
        <h1>useChat, resumed by offset</h1>
        <p className="hint">
          Send a question, then reload the page while the answer streams: the reasoning, the tool call and the text go on
          where they were, each once.
        </p>
        <dl className="facts">
          <dt>status</dt>
          <dd className="status">{status}</dd>
          <dt>held</dt>
          <dd className="held" data-offset={holding?.offset ?? ''}>
            {holding ? `${holding.offset} units of ${holding.streamId}` : 'nothing yet'}
          </dd>
          <dt>readerLocale ran</dt>
          <dd className="runs" data-tool-runs={runs}>
            {runs} {runs === 1 ? 'time' : 'times'} in this tab
          </dd>
        </dl>
      </header>

      <section className="messages">
        {messages.map((message) => (
          <Message key={message.id} message={message} />
        ))}
      </section>

      {error && <p className="error">{String(error.message ?? error)}</p>}

      <form onSubmit={submit}>
        <input value={input} onChange={(e) => setInput(e.target.value)} aria-label="Your question" />
        {/* Keys keep these two separate elements: were one <button> turned from Stop into Send
            while its click is handled, the click's default action would then submit the form. */}
        {busy ? (
          <button key="stop" type="button" onClick={() => stop()}>
            Stop
          </button>
        ) : (
          <button key="send" type="submit">
            Send
          </button>
        )}
        <a className="new" href="?">
          New chat
        </a>
      </form>
    </main>
  );
}
