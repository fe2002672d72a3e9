// The answer the twoplane tests produce, paced so that readers can be cut while it streams: the
// SDK's own `streamText` over its mock model (`ai/test`, `simulateReadableStream` with a delay per
// chunk) inside `createUIMessageStream`. Step 1: reasoning, the `search` tool (input streamed in 40
// pieces, run on the server: two preliminary outputs and the final one). Step 2: a text, a data
// part (replaced once by id), another text, and the `confirm` tool, which has no `execute`: a
// client-side tool, run by the page's `onToolCall`. Nothing depends on chance.
import { z } from 'zod';
import { REASONING, TEXT_A, TEXT_B, TOOL_INPUT_JSON, cutInto, searchTool } from './scenario.mjs';

export const CONFIRM_INPUT_JSON = JSON.stringify({ question: 'Resume from the offset?', options: ['yes', 'no'] });

/** The model's stream parts, per step. */
export function pacedSteps(M) {
  const step1 = [
    { type: 'stream-start', warnings: [] },
    { type: 'response-metadata', id: 'resp-1', modelId: 'mock-model', timestamp: new Date(0) },
    { type: 'reasoning-start', id: 'r1' },
    ...REASONING.map((delta) => ({ type: 'reasoning-delta', id: 'r1', delta })),
    { type: 'reasoning-end', id: 'r1' },
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
    { type: 'text-start', id: 't2' },
    ...TEXT_B.map((delta) => ({ type: 'text-delta', id: 't2', delta })),
    { type: 'text-end', id: 't2' },
    { type: 'tool-input-start', id: 'call-2', toolName: 'confirm' },
    ...cutInto(CONFIRM_INPUT_JSON, 5).map((delta) => ({ type: 'tool-input-delta', id: 'call-2', delta })),
    { type: 'tool-input-end', id: 'call-2' },
    { type: 'tool-call', toolCallId: 'call-2', toolName: 'confirm', input: CONFIRM_INPUT_JSON },
    M.finishPart('tool-calls'),
  ];
  return [step1, step2];
}

/** A mock model answering call `i` with `steps[i]`, one chunk every `delayMs`; `pulled` counts chunks. */
export function pacedModel(M, steps, delayMs, pulled = { n: 0 }) {
  let call = 0;
  return new M.MockModel({
    modelId: 'mock-model',
    // Like a provider's HTTP request, the model's stream stops when the call's signal aborts.
    doStream: async ({ abortSignal } = {}) => {
      const chunks = steps[Math.min(call++, steps.length - 1)];
      const inner = M.test.simulateReadableStream({ chunks, initialDelayInMs: delayMs, chunkDelayInMs: delayMs });
      const reader = inner.getReader();
      const stream = new ReadableStream({
        async pull(c) {
          if (abortSignal?.aborted) {
            reader.cancel().catch(() => {});
            c.error(abortSignal.reason ?? new Error('aborted'));
            return;
          }
          const { value, done } = await reader.read();
          if (done) c.close();
          else {
            pulled.n += 1;
            c.enqueue(value);
          }
        },
        cancel: (r) => reader.cancel(r),
      });
      return { stream };
    },
  });
}

/**
 * The UI message stream of the turn (chunk objects), the message id `streamId`; `pulled.n` counts
 * the model chunks read so far.
 */
export function pacedTurn(M, { streamId, delayMs = 5, pulled = { n: 0 }, abortSignal }) {
  return M.ai.createUIMessageStream({
    execute: async ({ writer }) => {
      const result = M.ai.streamText({
        model: pacedModel(M, pacedSteps(M), delayMs, pulled),
        prompt: 'How does resuming a stream work?',
        tools: {
          search: searchTool(M, z),
          confirm: M.ai.tool({ description: 'ask the user', inputSchema: z.object({ question: z.string(), options: z.array(z.string()) }) }),
        },
        stopWhen: M.ai.stepCountIs(3),
        abortSignal,
      });
      for await (const chunk of result.toUIMessageStream({ generateMessageId: () => streamId })) {
        writer.write(chunk);
        if (chunk.type === 'text-end' && chunk.id === 't1') {
          writer.write({ type: 'data-status', id: 'status-1', data: { phase: 'answering' } });
        }
        if (chunk.type === 'text-start' && chunk.id === 't2') {
          writer.write({ type: 'data-status', id: 'status-1', data: { phase: 'answering', hits: 1 } });
        }
      }
    },
  });
}

/**
 * A turn whose parts stream side by side, written straight into `createUIMessageStream` (as an
 * app whose model or tools stream several parts at once would): a reasoning and two texts open
 * together, their deltas (the scenario's texts cut into 12 pieces each) taking turns in runs of
 * one to three, one chunk every `delayMs`. Runs of one part are what a display-rate write merges;
 * the switches between parts are where a merge must not reach across. Nothing depends on chance.
 */
export function interleavedTurn(M, { streamId, delayMs = 4 }) {
  const parts = [
    { type: 'reasoning', id: 'r1', pieces: cutInto(REASONING.join(''), 12) },
    { type: 'text', id: 'ta', pieces: cutInto(TEXT_A.join(''), 12) },
    { type: 'text', id: 'tb', pieces: cutInto(TEXT_B.join(''), 12) },
  ];
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  return M.ai.createUIMessageStream({
    execute: async ({ writer }) => {
      writer.write({ type: 'start', messageId: streamId });
      for (const p of parts) writer.write({ type: `${p.type}-start`, id: p.id });
      for (let turn = 0; parts.some((p) => p.pieces.length > 0); turn += 1) {
        const p = parts[turn % parts.length];
        for (let k = 0; k < 1 + (turn % 3) && p.pieces.length > 0; k += 1) {
          await sleep(delayMs);
          writer.write({ type: `${p.type}-delta`, id: p.id, delta: p.pieces.shift() });
        }
      }
      for (const p of parts) writer.write({ type: `${p.type}-end`, id: p.id });
      writer.write({ type: 'finish' });
    },
  });
}
