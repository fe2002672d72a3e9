// `useStreamedText` (twoplane/react) rendered with React in Node (react-test-renderer), over a
// fake fetch whose SSE bodies the test writes frame by frame. Checks the hook's contract: the join
// offset is the durable length at subscribe time, durable updates never restart the subscription,
// the rendered text is the splice keyed to the stream id, and a terminal or an unmount closes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import React from 'react';
import TestRenderer from 'react-test-renderer';
import { useStreamedText, useStreamedTextState } from 'twoplane/react';
import { act, fakeFetch, settle } from './lib/react-fixture.mjs';

const h = React.createElement;

function Probe(props) {
  const state = useStreamedTextState(props);
  props.seen.push(state);
  return h('span', null, state.text);
}

test('useStreamedText: join at the durable length, splice keyed to the stream, close on the seal', async () => {
  const { fetch, calls } = fakeFetch();
  const seen = [];
  const props = { endpoint: '/sse', streamId: 'a', durableText: 'Hel', fetch, seen, backoff: { initialMs: 5 } };
  let root;
  await act(async () => {
    root = TestRenderer.create(h(Probe, props));
  });
  await settle();
  assert.equal(calls.length, 1);
  assert.equal(calls[0].url, '/sse?streamId=a&from=3', 'rule 1: joined at the durable length');
  assert.equal(root.toJSON().children[0], 'Hel');

  await settle(() => {
    calls[0].send({ type: 'open', streamId: 'a', from: 3, seq: 3, durableSeq: 3, ended: false });
    calls[0].send({ type: 'chunk', from: 3, seq: 6, text: 'lo ' });
  });
  assert.equal(root.toJSON().children[0], 'Hello ');

  // The durable text advancing re-renders but never restarts the subscription.
  await settle(() => root.update(h(Probe, { ...props, durableText: 'Hello' })));
  assert.equal(calls.length, 1);
  assert.equal(root.toJSON().children[0], 'Hello ');
  await settle(() => calls[0].send({ type: 'chunk', from: 4, seq: 8, text: 'o wo' }));
  assert.equal(root.toJSON().children[0], 'Hello wo');
  // Durable text longer than the live tail wins whole.
  await settle(() => root.update(h(Probe, { ...props, durableText: 'Hello world!' })));
  assert.equal(root.toJSON().children[0], 'Hello world!');

  // A drop: one reconnect, from the accumulator's length, naming it in Last-Event-ID.
  await settle(() => calls[0].drop());
  await settle();
  assert.equal(calls.length, 2);
  assert.equal(calls[1].url, '/sse?streamId=a&from=8');
  assert.equal(calls[1].lastEventId, '8');

  // The seal: the hook reports it, the reader hangs up and never reconnects.
  await settle(() => {
    calls[1].send({ type: 'chunk', from: 8, seq: 12, text: 'rld!' });
    calls[1].send({ type: 'end', seq: 12, status: 'complete' });
  });
  assert.equal(seen.at(-1).stopped, 'end');
  assert.ok(calls[1].aborted || calls[1].cancelled, 'the connection is closed by the reader');
  await settle();
  assert.equal(calls.length, 2);

  // Another stream: a new subscription, and the old tail is never spliced onto its text.
  await settle(() => root.update(h(Probe, { ...props, streamId: 'b', durableText: 'B' })));
  assert.equal(root.toJSON().children[0], 'B');
  assert.equal(calls.length, 3);
  assert.equal(calls[2].url, '/sse?streamId=b&from=1');
  await settle(() => calls[2].send({ type: 'chunk', from: 1, seq: 3, text: '+b' }));
  assert.equal(root.toJSON().children[0], 'B+b');

  // Unmounting closes the subscription.
  await settle(() => root.unmount());
  assert.ok(calls[2].aborted || calls[2].cancelled);
});

test('useStreamedText: disabled subscribes to nothing and renders the durable text', async () => {
  const { fetch, calls } = fakeFetch();
  let text;
  function Plain() {
    text = useStreamedText({ endpoint: '/sse', streamId: 'a', durableText: 'done', enabled: false, fetch });
    return null;
  }
  await act(async () => {
    TestRenderer.create(h(Plain));
  });
  await settle();
  assert.equal(calls.length, 0);
  assert.equal(text, 'done');
});
