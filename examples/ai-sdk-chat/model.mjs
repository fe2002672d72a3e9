// The "model" of the example: the AI SDK's own mock language model (`ai/test`), replaying a
// scripted answer through `simulateReadableStream`. No network model is reachable where this
// example is tested, and a script makes every run of the same question render the same message,
// which the example's test compares across reloads. The pace is slow on purpose, so that a person
// has time to reload the page in the middle of each part.
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

/** Milliseconds between two chunks; `EXAMPLE_PACE` scales them (0.5: twice as fast). */
const PACE = Number(process.env.EXAMPLE_PACE ?? 1);
const ms = (base) => Math.max(0, Math.round(base * PACE));

/** `text` in word-sized pieces, each keeping the space that follows it. */
function words(text) {
  return text.match(/\S+\s*/g) ?? [];
}

/** `text` in pieces of `size` code points (a JSON input arrives like this from real providers). */
function slices(text, size) {
  const points = [...text];
  const out = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(''));
  return out;
}

const usage = {
  inputTokens: { total: 40, noCache: 40, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 120, text: 90, reasoning: 30 },
};
const finish = (reason) => ({ type: 'finish', finishReason: { unified: reason, raw: reason }, usage });

/** What the model says, per step, to `question`; tool call ids start with `callPrefix`. */
export function script(question, callPrefix) {
  const searchInput = JSON.stringify({ query: question, sections: ['resuming', 'offsets', 'parts'], limit: 3 });
  const localeInput = JSON.stringify({ why: 'to write dates the way this reader reads them' });
  const thinking = `The reader asks: “${question}”. Before answering I should look in the docs for how a page picks an answer up again after a reload, then explain it in two short paragraphs.`;
  const first =
    'While the answer streams, twoplane keeps every part of it: this text, the reasoning above and the search with its result. ' +
    'The page remembers how far it got, as one number: the length of the message it holds.';
  const second =
    'Reload now and the page asks twoplane for the answer from that number on. What it already had comes back first and is not counted again; ' +
    'what it missed follows, and the answer goes on where it was, each part once.';
  return [
    {
      delay: ms(70),
      chunks: [
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', id: `${callPrefix}-step-1`, modelId: 'mock-model', timestamp: new Date(0) },
        { type: 'reasoning-start', id: 'reasoning-1' },
        ...words(thinking).map((delta) => ({ type: 'reasoning-delta', id: 'reasoning-1', delta })),
        { type: 'reasoning-end', id: 'reasoning-1' },
        { type: 'tool-input-start', id: `${callPrefix}-search`, toolName: 'searchDocs' },
        ...slices(searchInput, 4).map((delta) => ({ type: 'tool-input-delta', id: `${callPrefix}-search`, delta })),
        { type: 'tool-input-end', id: `${callPrefix}-search` },
        { type: 'tool-call', toolCallId: `${callPrefix}-search`, toolName: 'searchDocs', input: searchInput },
        finish('tool-calls'),
      ],
    },
    {
      delay: ms(50),
      chunks: [
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', id: `${callPrefix}-step-2`, modelId: 'mock-model', timestamp: new Date(0) },
        { type: 'text-start', id: 'text-1' },
        ...words(first).map((delta) => ({ type: 'text-delta', id: 'text-1', delta })),
        { type: 'text-end', id: 'text-1' },
        { type: 'text-start', id: 'text-2' },
        ...words(second).map((delta) => ({ type: 'text-delta', id: 'text-2', delta })),
        { type: 'text-end', id: 'text-2' },
        { type: 'tool-input-start', id: `${callPrefix}-locale`, toolName: 'readerLocale' },
        ...slices(localeInput, 6).map((delta) => ({ type: 'tool-input-delta', id: `${callPrefix}-locale`, delta })),
        { type: 'tool-input-end', id: `${callPrefix}-locale` },
        { type: 'tool-call', toolCallId: `${callPrefix}-locale`, toolName: 'readerLocale', input: localeInput },
        finish('tool-calls'),
      ],
    },
  ];
}

/** A mock model that answers its n-th call with step n of `script(question, callPrefix)`. */
export function scriptedModel(question, callPrefix) {
  const steps = script(question, callPrefix);
  let call = 0;
  return new MockLanguageModelV4({
    modelId: 'mock-model',
    doStream: async () => {
      const step = steps[Math.min(call, steps.length - 1)];
      call += 1;
      return {
        stream: simulateReadableStream({ chunks: step.chunks, initialDelayInMs: step.delay, chunkDelayInMs: step.delay }),
      };
    },
  });
}
