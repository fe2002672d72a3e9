// The model turn every major records: a mock language model (the SDK's own, from `ai/test`)
// that streams, in a first step, reasoning and one tool call whose JSON input arrives in 40
// pieces, and, after the tool ran (two preliminary outputs, then the final one), in a second step
// two text parts. Nothing here depends on time or randomness, so a recording is reproducible.

export const TOOL_INPUT = {
  query: 'resumable streams: naïve retries vs offsets',
  limit: 3,
  filters: { lang: 'en', since: '2024-01-01', tags: ['sse', 'wasm', '🦀'] },
};
export const TOOL_INPUT_JSON = JSON.stringify(TOOL_INPUT);

/** `text` cut into `n` pieces of nearly equal length, never inside a surrogate pair. */
export function cutInto(text, n) {
  const units = [];
  for (const ch of text) units.push(ch); // code points, so a pair stays whole
  const pieces = [];
  for (let i = 0; i < n; i++) {
    const a = Math.floor((i * units.length) / n);
    const b = Math.floor(((i + 1) * units.length) / n);
    pieces.push(units.slice(a, b).join(''));
  }
  if (pieces.join('') !== text || pieces.some((p) => p === '')) throw new Error('bad cut');
  return pieces;
}

export const REASONING = ['The user asks about resuming', ' a stream; ', 'search first, then answer.'];
export const TEXT_A = ['Resuming by offset ', 'means the reader ', 'asks for what it lacks.'];
export const TEXT_B = ['Two planes share one coordinate: ', 'UTF-16 units ', '(so “🦀” counts 2).'];

/** The model's stream parts for step 1 (reasoning, tool call) and step 2 (two texts). */
export function modelSteps(M) {
  const step1 = [
    { type: 'stream-start', warnings: [] },
    { type: 'response-metadata', id: 'resp-1', modelId: 'mock-model', timestamp: new Date(0) },
    { type: 'reasoning-start', id: 'r1' },
    ...REASONING.map((delta) => ({ type: 'reasoning-delta', id: 'r1', delta })),
    { type: 'reasoning-end', id: 'r1', providerMetadata: { mock: { signature: 'sig-r1' } } },
    { type: 'tool-input-start', id: 'call-1', toolName: 'search' },
    ...cutInto(TOOL_INPUT_JSON, 40).map((delta) => ({ type: 'tool-input-delta', id: 'call-1', delta })),
    { type: 'tool-input-end', id: 'call-1' },
    { type: 'tool-call', toolCallId: 'call-1', toolName: 'search', input: TOOL_INPUT_JSON },
    M.finishPart('tool-calls'),
  ];
  const step2 = [
    { type: 'stream-start', warnings: [] },
    { type: 'response-metadata', id: 'resp-2', modelId: 'mock-model', timestamp: new Date(0) },
    { type: 'text-start', id: 't1' },
    ...TEXT_A.map((delta) => ({ type: 'text-delta', id: 't1', delta })),
    { type: 'text-end', id: 't1' },
    { type: 'text-start', id: 't2', providerMetadata: { mock: { block: 2 } } },
    ...TEXT_B.map((delta) => ({ type: 'text-delta', id: 't2', delta })),
    { type: 'text-end', id: 't2' },
    M.finishPart('stop'),
  ];
  return [step1, step2];
}

/** A mock model that answers call `i` with `steps[i]`. */
export function mockModel(M, steps) {
  let call = 0;
  return new M.MockModel({
    modelId: 'mock-model',
    doStream: async () => {
      const chunks = steps[Math.min(call++, steps.length - 1)];
      return { stream: M.test.simulateReadableStream({ chunks, initialDelayInMs: null, chunkDelayInMs: null }) };
    },
  });
}

/** The `search` tool: two preliminary outputs (an async generator), the last one is final. */
export function searchTool(M, z) {
  return M.ai.tool({
    description: 'search the docs',
    inputSchema: z.object({
      query: z.string(),
      limit: z.number(),
      filters: z.object({ lang: z.string(), since: z.string(), tags: z.array(z.string()) }),
    }),
    async *execute({ query }) {
      yield { status: 'searching', query };
      yield { status: 'done', hits: [{ title: 'twoplane contract §8', url: 'https://example.com/contract#8' }] };
    },
  });
}

/** Message metadata the recorder attaches at `start` and `finish`. */
export function messageMetadata({ part }) {
  if (part.type === 'start') return { model: 'mock-model', createdAt: 1700000000000 };
  if (part.type === 'finish') return { totalTokens: 92, finishedAt: 1700000001000 };
  return undefined;
}
