// The `Chat` a Node test drives for one release of `ai` (lib/majors.mjs): `@ai-sdk/react`'s
// `Chat` where the release has its React package installed here, else the SDK's own
// `AbstractChat` (which `useChat`'s `Chat` extends) over a plain state holder. The holder only
// keeps what the SDK writes into it; every decision (what a resume starts from, what a chunk
// changes, when a continuation is sent) is `AbstractChat`'s.

/** A `ChatState` that keeps the messages in an array, replaced on every change as React's is. */
class PlainState {
  constructor(messages = []) {
    this.messages = messages;
    this.status = 'ready';
    this.error = undefined;
  }

  pushMessage(message) {
    this.messages = [...this.messages, message];
  }

  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }

  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  }

  snapshot(value) {
    return structuredClone(value);
  }
}

/** The `Chat` class for `M` (loadMajor's answer): `new Chat({ id, messages, transport, ... })`. */
export async function chatClass(M) {
  if (M.reactAlias) return (await import(M.reactAlias)).Chat;
  return class Chat extends M.ai.AbstractChat {
    constructor({ messages, ...init }) {
      super({ ...init, state: new PlainState(messages) });
    }
  };
}
