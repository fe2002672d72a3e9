// What the page itself keeps in sessionStorage, per chat, standing in for an application's
// database: the messages as the page last showed them, the answers the page gave to client-side
// tools, and how many times it ran one (shown, so that a reload that ran a tool again is visible).
export function pageStore(chatId) {
  const key = (what) => `example:${what}:${chatId}`;
  const read = (what, fallback) => {
    try {
      return JSON.parse(sessionStorage.getItem(key(what))) ?? fallback;
    } catch {
      return fallback;
    }
  };
  const write = (what, value) => {
    try {
      sessionStorage.setItem(key(what), JSON.stringify(value));
    } catch {
      // a full storage: a reload shows less, the answer itself is safe in twoplane
    }
  };
  return {
    messages: () => read('messages', []),
    saveMessages: (messages) => write('messages', messages),
    answer: (toolCallId) => read('answers', {})[toolCallId],
    saveAnswer: (toolCallId, output) => write('answers', { ...read('answers', {}), [toolCallId]: output }),
    runs: () => read('runs', 0),
    countRun: () => {
      const n = read('runs', 0) + 1;
      write('runs', n);
      return n;
    },
  };
}
