// The `./model.js` the route of docs/ai-sdk.md imports, as docs.test.mjs gives it: the SDK's own
// mock model of the release TWOPLANE_AI names, and the tools of lib/continuation.mjs (`confirm`,
// a client-side tool; `deploy`, which needs an approval, in ai 6 and 7). The model answers a
// request that carries a tool's result (a continuation) with the continuation's text, any other
// with a text and a call of `confirm`, a chunk every 30 ms.
import { loadMajor } from './majors.mjs';
import { continuationSteps, continuationTools } from './continuation.mjs';

const M = await loadMajor(process.env.TWOPLANE_AI);

export const tools = continuationTools(M);

export const model = new M.MockModel({
  modelId: 'mock-model',
  doStream: async ({ prompt }) => {
    const continuing = prompt.some((m) => m.role === 'tool');
    const [chunks] = continuationSteps(M, 'client', continuing);
    return { stream: M.test.simulateReadableStream({ chunks, initialDelayInMs: 30, chunkDelayInMs: 30 }) };
  },
});
