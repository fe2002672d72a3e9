// What the installed AI SDK's `Chat` starts a resume from, found by running its own `AbstractChat`
// (the class `useChat`'s `Chat` extends) on a message held in memory, with a transport that
// answers the resume with `start` and `finish` of that same message: no network, no timer.
//
// Why a feature test and not a version: the peer range (`ai` ^5 || ^6 || ^7) spans three ways a
// resume begins, and they changed at different releases of each major:
// - 'held': the resume builds on the page's last assistant message as it is, whatever it holds,
//   and nothing resets it (5.x before 5.0.233, 6.x before 6.0.250, 7.x before 7.0.62). A replay of
//   what the page already has then adds its parts a second time (a second `step-start` after a
//   reload between a client tool's turns, which hides the tool from `sendAutomaticallyWhen`).
// - 'streaming-tool': the resume starts from nothing, except from a message whose tool input is
//   still streaming, which it goes on with (ai 5 from 5.0.233, which has no `resumeStreamIsReplay`).
// - 'none': the resume starts from nothing, or its first `start` resets it (ai 6 and 7 with
//   `resumeStreamIsReplay`, which this package's transport sets).
// The transport (transport.js) uses the answer to decide what a resume hands the SDK.

import { AbstractChat } from 'ai';

let answer;

/** The installed SDK's resume seed: 'held', 'streaming-tool' or 'none' (see the module header). */
export function resumeSeed() {
  answer ??= probe().catch(() => 'none');
  return answer;
}

async function keeps(parts) {
  const message = { id: 'twoplane-probe-a', role: 'assistant', parts };
  const state = {
    status: 'ready',
    error: undefined,
    messages: [{ id: 'twoplane-probe-u', role: 'user', parts: [{ type: 'text', text: 'probe' }] }, message],
    pushMessage(m) {
      this.messages = [...this.messages, m];
    },
    popMessage() {
      this.messages = this.messages.slice(0, -1);
    },
    replaceMessage(i, m) {
      this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)];
    },
    snapshot: (v) => structuredClone(v),
  };
  const transport = {
    resumeStreamIsReplay: true,
    sendMessages: async () => {
      throw new Error('twoplane: the probe sends nothing');
    },
    reconnectToStream: async () =>
      new ReadableStream({
        start(c) {
          c.enqueue({ type: 'start', messageId: message.id });
          c.enqueue({ type: 'finish' });
          c.close();
        },
      }),
  };
  const chat = new AbstractChat({ id: 'twoplane-probe', state, transport, generateId: () => 'twoplane-probe-g' });
  await chat.resumeStream();
  const last = state.messages.at(-1);
  return last?.id === message.id && Array.isArray(last.parts) && last.parts.length > 0;
}

async function probe() {
  if (typeof AbstractChat !== 'function') return 'none';
  if (await keeps([{ type: 'text', text: 'held', state: 'done' }])) return 'held';
  if (await keeps([{ type: 'tool-probe', toolCallId: 'twoplane-probe-c', state: 'input-streaming', input: undefined }])) return 'streaming-tool';
  return 'none';
}
