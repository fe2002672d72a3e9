// `useStreamedMessage` (twoplane/react) rendered with React in Node (react-test-renderer), over a
// fake fetch whose SSE bodies the test writes. Checks the hook's contract for messages made of
// parts (docs/contract.md §8): the join offset is the durable message's length at subscribe time,
// durable updates re-render but never restart the subscription, the rendered message is the
// longer of the durable one and the reader's, keyed to the stream id, renders are coalesced, and a
// terminal or an unmount closes the connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import React from 'react';
import TestRenderer from 'react-test-renderer';
import { assembleDurableMessage } from 'twoplane';
import { useStreamedMessage } from 'twoplane/react';
import { act, fakeFetch, settle } from './lib/react-fixture.mjs';
import { checkpointRows, replayFrom, scenarioLog, EXPECTED, STREAM_ID } from './lib/message-scenario.mjs';

const h = React.createElement;
const { log, total, at } = scenarioLog();

function Probe(props) {
  const state = useStreamedMessage(props);
  props.seen.push(state);
  return h('span', null, state.message.parts.map((p) => p.type).join(','));
}

const durableAt = (offset) => assembleDurableMessage({ seq: 0 }, checkpointRows(log, [offset]));

test('useStreamedMessage: join at the durable length, the longer message rendered, one render per frame, close on the seal', async () => {
  const { fetch, calls } = fakeFetch();
  const seen = [];
  const first = durableAt(at.midReasoning);
  const props = { endpoint: '/sse', streamId: STREAM_ID, durable: first, fetch, seen, backoff: { initialMs: 5 } };
  let root;
  await act(async () => {
    root = TestRenderer.create(h(Probe, props));
  });
  await settle();
  assert.equal(calls.length, 1);
  assert.equal(calls[0].url, `/sse?streamId=${STREAM_ID}&from=${at.midReasoning}`, 'rule 1: joined at the durable length');
  assert.equal(seen.at(-1).message, first.message, 'the durable message until the reader says more');

  // Every frame up to mid tool input in one network read: rendered once, not once per frame.
  const renders = seen.length;
  const batch = replayFrom(log, at.midReasoning).filter((f) => f.seq <= at.midToolInput);
  assert.ok(batch.length > 20);
  await settle(() => calls[0].sendAll(batch));
  assert.ok(seen.length - renders <= 2, `${seen.length - renders} renders for ${batch.length} frames`);
  assert.deepEqual(seen.at(-1).message, durableAt(at.midToolInput).message);
  assert.equal(root.toJSON().children[0], 'reasoning,tool-getWeather');

  // A newer durable message: re-rendered, never resubscribed; the longer one wins.
  const newer = durableAt(at.afterData);
  await settle(() => root.update(h(Probe, { ...props, durable: newer })));
  assert.equal(calls.length, 1);
  assert.equal(seen.at(-1).message, newer.message, 'the store says more');
  const older = durableAt(10);
  await settle(() => root.update(h(Probe, { ...props, durable: older })));
  assert.deepEqual(seen.at(-1).message, durableAt(at.midToolInput).message, 'the reader says more');

  // A drop: one reconnect, from the reader's length, naming it in Last-Event-ID.
  await settle(() => calls[0].drop());
  await settle();
  assert.equal(calls.length, 2);
  assert.equal(calls[1].url, `/sse?streamId=${STREAM_ID}&from=${at.midToolInput}`);
  assert.equal(calls[1].lastEventId, String(at.midToolInput));

  // The rest, and the seal: the whole message, the stop reported, the connection closed.
  await settle(() => calls[1].sendAll(replayFrom(log, at.midToolInput)));
  assert.deepEqual(seen.at(-1).message, EXPECTED);
  assert.equal(seen.at(-1).stopped, 'end');
  assert.equal(seen.at(-1).connections, 2);
  assert.ok(calls[1].aborted || calls[1].cancelled, 'the connection is closed by the reader');
  await settle();
  assert.equal(calls.length, 2);

  // Another stream: a new subscription, and the old stream's message is never shown for it.
  await settle(() => root.update(h(Probe, { ...props, streamId: 'other', durable: null })));
  assert.deepEqual(seen.at(-1).message, { parts: [] });
  assert.equal(calls.length, 3);
  assert.equal(calls[2].url, '/sse?streamId=other&from=0');
  await settle(() => calls[2].send({ type: 'part', from: 0, seq: 1, part: 1, kind: 'reasoning' }));
  assert.deepEqual(seen.at(-1).message, { parts: [{ type: 'reasoning', text: '' }] });

  // Unmounting closes the subscription.
  await settle(() => root.unmount());
  assert.ok(calls[2].aborted || calls[2].cancelled);
});

test('useStreamedMessage: disabled subscribes to nothing and renders the durable message', async () => {
  const { fetch, calls } = fakeFetch();
  const sealed = assembleDurableMessage({ document: JSON.stringify(EXPECTED), seq: total }, []);
  let state;
  function Plain() {
    state = useStreamedMessage({ endpoint: '/sse', streamId: STREAM_ID, durable: sealed, enabled: false, fetch });
    return null;
  }
  await act(async () => {
    TestRenderer.create(h(Plain));
  });
  await settle();
  assert.equal(calls.length, 0);
  assert.equal(state.message, sealed.message);
  assert.deepEqual(state, { message: sealed.message, stopped: null, connections: 0 });
});
