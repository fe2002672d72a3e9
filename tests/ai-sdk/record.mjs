// Records what the AI SDK itself sends, for every installed major of `ai`: the raw body of the
// response (`fixtures/<major>/<name>.sse`), its status and headers (`<name>.headers.json`), the
// chunks as the SDK's transport parses them (`<name>.chunks.json`, for reading), and the message
// `readUIMessageStream` builds from them (`<name>.message.json`, its last yield, as JSON).
//
//   node record.mjs            # every major
//   node record.mjs 7          # one major
//
// Every stream comes from the SDK's own code: `streamText(...).toUIMessageStreamResponse()` over
// the mock model of `ai/test`, or `createUIMessageStream` + `createUIMessageStreamResponse` with
// `writer.write` for the chunk types a model cannot produce. Nothing depends on time or chance;
// recording twice gives the same files.
import { mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { MAJORS, loadMajor, declaredChunkTypes, coverageKey } from './lib/majors.mjs';
import { modelSteps, mockModel, searchTool, messageMetadata, cutInto } from './lib/scenario.mjs';
import { chunksFromSse, lastMessage, asJson } from './lib/read.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const FIXTURES = join(HERE, 'fixtures');

/** The body of a response as text; a body that errors midway keeps what came before. */
export async function bodyText(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
}

// ---------------------------------------------------------------------------------------------
// The streams. Each returns a Response made by the SDK.

/** `streamText(...).toUIMessageStreamResponse()`: the turn of lib/scenario.mjs, as is. */
function streamTextTurn(M) {
  const result = M.ai.streamText({
    model: mockModel(M, modelSteps(M)),
    prompt: 'How does resuming a stream work?',
    tools: { search: searchTool(M, z) },
    stopWhen: M.ai.stepCountIs(2),
  });
  return result.toUIMessageStreamResponse({ messageMetadata, generateMessageId: () => 'msg-stream-text' });
}

/**
 * The same turn inside `createUIMessageStream`, as a route that adds its own parts: a data part
 * written after `start` and replaced once (same id) when the tool's final output arrives, a
 * transient data part, and message metadata before `finish`. The model's chunks are forwarded
 * one by one, so the order is fixed.
 */
function chatTurn(M) {
  const stream = M.ai.createUIMessageStream({
    async execute({ writer }) {
      const result = M.ai.streamText({
        model: mockModel(M, modelSteps(M)),
        prompt: 'How does resuming a stream work?',
        tools: { search: searchTool(M, z) },
        stopWhen: M.ai.stepCountIs(2),
      });
      for await (const chunk of result.toUIMessageStream({ messageMetadata, generateMessageId: () => 'msg-chat-turn' })) {
        if (chunk.type === 'finish') {
          writer.write({ type: 'message-metadata', messageMetadata: { sources: 1 } });
        }
        writer.write(chunk);
        if (chunk.type === 'start') {
          writer.write({ type: 'data-status', id: 'status-1', data: { phase: 'searching' } });
        }
        if (chunk.type === 'tool-output-available' && !chunk.preliminary) {
          writer.write({ type: 'data-status', id: 'status-1', data: { phase: 'answering', hits: 1 } });
          writer.write({ type: 'data-progress', data: { percent: 50 }, transient: true });
        }
      }
    },
  });
  return M.ai.createUIMessageStreamResponse({ stream });
}

/** Every chunk type a model cannot produce, written by hand, as far as the major declares it. */
function writerParts(M) {
  const has = new Set(declaredChunkTypes(M.alias));
  const v6 = has.has('tool-approval-request');
  const chunks = [
    { type: 'start', messageId: 'msg-writer-parts', messageMetadata: { thread: 'th-9' } },
    { type: 'start-step' },
    { type: 'source-url', sourceId: 'src-1', url: 'https://example.com/a', title: 'Page A', providerMetadata: { mock: { rank: 1 } } },
    { type: 'source-document', sourceId: 'src-2', mediaType: 'application/pdf', title: 'Spec', filename: 'spec.pdf' },
    { type: 'file', url: 'data:text/plain;base64,aGk=', mediaType: 'text/plain' },
    { type: 'data-weather', id: 'w1', data: { city: 'Oslo', status: 'loading' } },
    { type: 'data-notice', data: { text: 'rate limited, retrying' }, transient: true },
    { type: 'data-log', data: { line: 1 } },
    { type: 'data-weather', id: 'w1', data: { city: 'Oslo', status: 'done', celsius: -3 } },
    { type: 'data-log', data: { line: 2 } },
    // a dynamic tool (a tool the server learned at run time), with a preliminary output
    { type: 'tool-input-start', toolCallId: 'dyn-1', toolName: 'mcp_lookup', dynamic: true, ...(v6 ? { title: 'Lookup' } : {}) },
    ...cutInto('{"key":"abc"}', 3).map((inputTextDelta) => ({ type: 'tool-input-delta', toolCallId: 'dyn-1', inputTextDelta })),
    { type: 'tool-input-available', toolCallId: 'dyn-1', toolName: 'mcp_lookup', input: { key: 'abc' }, dynamic: true, providerMetadata: { mock: { trace: 'tr-1' } } },
    { type: 'tool-output-available', toolCallId: 'dyn-1', output: { partial: true }, dynamic: true, preliminary: true },
    { type: 'tool-output-available', toolCallId: 'dyn-1', output: { value: 42 }, dynamic: true },
    // an input the model got wrong, with no tool-input-start before it
    { type: 'tool-input-error', toolCallId: 'bad-1', toolName: 'search', input: '{"query": 3', errorText: 'Invalid input for tool search' },
    // a provider-executed tool that failed
    { type: 'tool-input-start', toolCallId: 'call-2', toolName: 'fetchPage', providerExecuted: true },
    { type: 'tool-input-delta', toolCallId: 'call-2', inputTextDelta: '{"url":"https://example.com"}' },
    { type: 'tool-input-available', toolCallId: 'call-2', toolName: 'fetchPage', input: { url: 'https://example.com' }, providerExecuted: true },
    { type: 'tool-output-error', toolCallId: 'call-2', errorText: 'fetch failed: 503', providerExecuted: true },
  ];
  if (v6) {
    // an approval asked for and denied
    chunks.push(
      { type: 'tool-input-start', toolCallId: 'call-3', toolName: 'deleteFile' },
      { type: 'tool-input-delta', toolCallId: 'call-3', inputTextDelta: '{"path":"/tmp/x"}' },
      { type: 'tool-input-available', toolCallId: 'call-3', toolName: 'deleteFile', input: { path: '/tmp/x' } },
      { type: 'tool-approval-request', approvalId: 'appr-1', toolCallId: 'call-3' },
      { type: 'tool-output-denied', toolCallId: 'call-3' },
    );
  }
  if (has.has('tool-approval-response')) {
    // an approval asked for, answered on the server, then the output
    chunks.push(
      { type: 'tool-input-available', toolCallId: 'call-4', toolName: 'sendEmail', input: { to: 'a@example.com' } },
      { type: 'tool-approval-request', approvalId: 'appr-2', toolCallId: 'call-4', reason: 'sends mail' },
      { type: 'tool-approval-response', approvalId: 'appr-2', approved: true, reason: 'user said yes' },
      { type: 'tool-output-available', toolCallId: 'call-4', output: { sent: true } },
    );
  }
  chunks.push({ type: 'finish-step' }, { type: 'start-step' });
  if (has.has('reset-step')) {
    // a draft the step throws away
    chunks.push(
      { type: 'text-start', id: 'draft' },
      { type: 'text-delta', id: 'draft', delta: 'a draft that is dropped' },
      { type: 'reset-step' },
    );
  }
  if (has.has('reasoning-file')) {
    chunks.push({ type: 'reasoning-file', url: 'data:image/png;base64,iVBORw0KGgo=', mediaType: 'image/png' });
  }
  if (has.has('custom')) {
    chunks.push({ type: 'custom', kind: 'acme.banner', providerMetadata: { acme: { color: 'red' } } });
  }
  if (has.has('steering-message')) {
    chunks.push({ type: 'steering-message', id: 'steer-1', parts: [{ type: 'text', text: 'also cover wasm' }] });
  }
  chunks.push(
    { type: 'reasoning-start', id: 'r9', providerMetadata: { mock: { effort: 'low' } } },
    { type: 'reasoning-delta', id: 'r9', delta: 'short' },
    { type: 'reasoning-end', id: 'r9' },
    { type: 'text-start', id: 'x1' },
    { type: 'text-delta', id: 'x1', delta: 'See ', providerMetadata: { mock: { d: 1 } } },
    { type: 'text-delta', id: 'x1', delta: 'page A.' },
    has.has('custom') // 7 has citations on text-end
      ? { type: 'text-end', id: 'x1', citations: [{ source: { type: 'source', sourceType: 'url', id: 'src-1', url: 'https://example.com/a' }, startIndex: 4, endIndex: 10 }] }
      : { type: 'text-end', id: 'x1' },
    { type: 'finish-step' },
    { type: 'message-metadata', messageMetadata: { tokens: 12 } },
    { type: 'finish', finishReason: 'stop', messageMetadata: { done: true } },
  );
  const stream = M.ai.createUIMessageStream({
    execute({ writer }) {
      for (const chunk of chunks) writer.write(chunk);
    },
  });
  return M.ai.createUIMessageStreamResponse({ stream });
}

/** A turn the caller aborts in the middle of its text: the SDK sends `abort` and stops. */
function aborted(M) {
  const controller = new AbortController();
  let deltas = 0;
  const chunks = [
    { type: 'stream-start', warnings: [] },
    { type: 'reasoning-start', id: 'r1' },
    { type: 'reasoning-delta', id: 'r1', delta: 'thinking' },
    { type: 'reasoning-end', id: 'r1' },
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'one ' },
    { type: 'text-delta', id: 't1', delta: 'two ' },
    { type: 'text-delta', id: 't1', delta: 'three ' },
    { type: 'text-end', id: 't1' },
    M.finishPart('stop'),
  ];
  const model = new M.MockModel({
    doStream: async () => ({ stream: M.test.simulateReadableStream({ chunks, initialDelayInMs: 0, chunkDelayInMs: 5 }) }),
  });
  const result = M.ai.streamText({
    model,
    prompt: 'count',
    abortSignal: controller.signal,
    onChunk({ chunk }) {
      if (chunk.type === 'text-delta' && ++deltas === 2) controller.abort();
    },
  });
  return result.toUIMessageStreamResponse({ generateMessageId: () => 'msg-abort' });
}

/** A model that reports an error midway and stops: `error`, then the step's and turn's finish. */
function modelError(M) {
  const chunks = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'one ' },
    { type: 'text-delta', id: 't1', delta: 'two ' },
    { type: 'error', error: new Error('upstream overloaded') },
  ];
  const model = new M.MockModel({
    doStream: async () => ({ stream: M.test.simulateReadableStream({ chunks, initialDelayInMs: null, chunkDelayInMs: null }) }),
  });
  const result = M.ai.streamText({ model, prompt: 'count', onError() {} });
  return result.toUIMessageStreamResponse({ generateMessageId: () => 'msg-model-error' });
}

/** A route whose own code throws after some text: the stream ends in `error` (masked text). */
function executeError(M) {
  const stream = M.ai.createUIMessageStream({
    async execute({ writer }) {
      writer.write({ type: 'start', messageId: 'msg-execute-error' });
      writer.write({ type: 'text-start', id: 'e1' });
      writer.write({ type: 'text-delta', id: 'e1', delta: 'partial answer' });
      throw new Error('database unreachable');
    },
  });
  return M.ai.createUIMessageStreamResponse({ stream });
}

/** A tool that needs approval (6 and later): the turn stops at `tool-approval-request`. */
function toolApproval(M) {
  const steps = [[
    { type: 'stream-start', warnings: [] },
    { type: 'tool-input-start', id: 'call-9', toolName: 'deleteFile' },
    ...cutInto('{"path":"/tmp/report.txt"}', 4).map((delta) => ({ type: 'tool-input-delta', id: 'call-9', delta })),
    { type: 'tool-input-end', id: 'call-9' },
    { type: 'tool-call', toolCallId: 'call-9', toolName: 'deleteFile', input: '{"path":"/tmp/report.txt"}' },
    M.finishPart('tool-calls'),
  ]];
  const result = M.ai.streamText({
    model: mockModel(M, steps),
    prompt: 'delete the report',
    // the approval id is the SDK's own generateId: a fixed one keeps the recording reproducible
    _internal: { generateId: () => 'approval-1' },
    tools: {
      deleteFile: M.ai.tool({
        description: 'delete a file',
        inputSchema: z.object({ path: z.string() }),
        needsApproval: true,
        execute: async () => ({ deleted: true }),
      }),
    },
  });
  return result.toUIMessageStreamResponse({ generateMessageId: () => 'msg-approval' });
}

export const STREAMS = {
  'stream-text': { build: streamTextTurn, about: 'streamText(...).toUIMessageStreamResponse(): reasoning, a tool call with its input in 40 pieces, two preliminary outputs and the final one, two steps, two text parts, metadata at start and finish' },
  'chat-turn': { build: chatTurn, about: 'the same turn through createUIMessageStream, with a data part replaced once by id, a transient data part and a message-metadata chunk' },
  'writer-parts': { build: writerParts, about: 'writer.write of every chunk type a model cannot produce (sources, file, data with and without id, transient data, dynamic tool, tool input/output errors, approvals, custom, reasoning-file, steering-message, reset-step, citations), as the major declares them' },
  abort: { build: aborted, about: 'streamText aborted by its caller mid text: ends in abort' },
  'model-error': { build: modelError, about: 'the model reports an error mid text: error (masked), then finish-step and finish with finishReason error' },
  'execute-error': { build: executeError, about: 'createUIMessageStream whose execute throws: ends in error' },
  'tool-approval': { build: toolApproval, about: 'streamText with a tool that needs approval: ends at tool-approval-request', since: 6 },
};

async function recordMajor(major) {
  const M = await loadMajor(major);
  const dir = join(FIXTURES, major);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const manifest = { ai: M.version, '@ai-sdk/react': M.reactVersion, fixtures: {}, declared: declaredChunkTypes(M.alias), covered: {} };
  for (const [name, { build, about }] of streamsFor(major)) {
    const res = await build(M);
    const sse = await bodyText(res);
    const headers = Object.fromEntries(res.headers);
    const chunks = await chunksFromSse(M, sse, headers);
    const { message, errors } = await lastMessage(M, chunks);
    writeFileSync(join(dir, `${name}.sse`), sse);
    writeFileSync(join(dir, `${name}.headers.json`), JSON.stringify({ status: res.status, headers }, null, 2) + '\n');
    writeFileSync(join(dir, `${name}.chunks.json`), chunks.map((c) => JSON.stringify(c)).join('\n') + '\n');
    writeFileSync(join(dir, `${name}.message.json`), JSON.stringify(asJson(message), null, 2) + '\n');
    const types = [...new Set(chunks.map((c) => coverageKey(c.type)))];
    manifest.fixtures[name] = { about, chunks: chunks.length, types, errors };
    for (const t of types) (manifest.covered[t] ??= []).push(name);
  }
  manifest.missing = manifest.declared.filter((t) => !manifest.covered[t]);
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  console.log(`ai ${M.version}: ${Object.keys(manifest.fixtures).length} fixtures, ${manifest.declared.length} declared chunk types, missing: ${manifest.missing.join(', ') || 'none'}`);
  if (manifest.missing.length) process.exitCode = 1;
}

/** The streams that apply to a major. */
export function streamsFor(major) {
  return Object.entries(STREAMS).filter(([, s]) => !s.since || Number(major) >= s.since);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const which = process.argv.slice(2);
  for (const major of which.length ? which : MAJORS) await recordMajor(major);
}
