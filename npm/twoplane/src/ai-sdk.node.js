// `twoplane/ai-sdk` in Node: everything of ai-sdk.js, and a producer that mints read tokens with
// `signStreamToken` (node:crypto) when it is given the read-token secret. Browsers and other
// runtimes get ai-sdk.js, whose producer mints only with a `signToken` option.
import { signStreamToken } from './token.js';
import { createTwoplaneProducer as createProducer } from './ai-sdk.js';

export * from './ai-sdk.js';

/** `createTwoplaneProducer` of ai-sdk.js, minting read tokens with `signStreamToken`. */
export function createTwoplaneProducer(options = {}) {
  return createProducer({ signToken: signStreamToken, ...options });
}
