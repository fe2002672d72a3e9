// The `held` stores of twoplane/ai-sdk's transport: where a page keeps, per chat, what it holds
// of the chat's current stream (`{ streamId, token?, offset, toolCalls }`, transport.js). A
// store answers `undefined` for a chat it holds nothing of, never throws on a record it cannot
// read back (a Web Storage entry that is not JSON is nothing held), and keeps what it is given
// as it is: the transport hands it a copy.

/** The default `held` store: in memory, so it lasts as long as the page. */
export function memoryHeld() {
  const map = new Map();
  return {
    get: (chatId) => map.get(chatId),
    set: (chatId, held) => void map.set(chatId, held),
    delete: (chatId) => void map.delete(chatId),
  };
}

/** A `held` store in a Web Storage (`sessionStorage`, `localStorage`): survives a reload. */
export function webStorageHeld(storage, prefix = 'twoplane:held:') {
  return {
    get(chatId) {
      const raw = storage.getItem(prefix + chatId);
      if (raw === null) return undefined;
      try {
        return JSON.parse(raw);
      } catch {
        return undefined;
      }
    },
    set: (chatId, held) => storage.setItem(prefix + chatId, JSON.stringify(held)),
    delete: (chatId) => storage.removeItem(prefix + chatId),
  };
}
