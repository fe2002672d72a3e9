//! The three ways of reading a hosted stream's subscription (`next`, `try_next`, `poll_sse`),
//! mixed in any order, against a reference subscriber of the same stream that reads with `next`
//! only.
//!
//! Properties (proptest over random interleavings of pushes, reads, batch limits and yields that
//! let checkpoints land):
//! - The mixed reader's bytes (frames it took as `Arc<Frame>` encoded with the core's SSE
//!   encoder, SSE batches as they came) equal the reference's frames encoded the same way: no
//!   frame lost, doubled or reordered, whichever way it was read, and the shared bytes a batch
//!   hands over are exactly the encoder's.
//! - A read that answered `Pending` is woken by the next push (the lock-free "nothing changed"
//!   check never loses a wake-up).
//! - A batch never ends in the middle of an event, holds at least one, and stops growing at the
//!   byte limit: only its last event may cross it.
//! - After the terminal frame every read answers `None`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use proptest::prelude::*;
use twoplane_core::sse::encode_event_into;
use twoplane_stream::*;

const ID: &str = "m1";

#[derive(Clone, Debug)]
enum Op {
    Push(String),
    Next,
    TryNext,
    Sse(usize),
    Yield,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => "[a-zé😀\n\"]{1,6}".prop_map(Op::Push),
        2 => Just(Op::Next),
        2 => Just(Op::TryNext),
        2 => (1usize..400).prop_map(Op::Sse),
        1 => Just(Op::Yield),
    ]
}

#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn encode(out: &mut Vec<u8>, frame: &Frame) {
    let mut s = String::new();
    encode_event_into(&mut s, frame);
    out.extend_from_slice(s.as_bytes());
}

/// The mixed reader's state: its bytes so far, and whether its last read was left waiting (and
/// on which wake count).
struct Mixed {
    sub: Subscription,
    bytes: Vec<u8>,
    count: Arc<Count>,
    waker: Waker,
    waiting_since: Option<usize>,
    ended: bool,
}

impl Mixed {
    fn took(&mut self, frame: Option<Arc<Frame>>) {
        if let Some(f) = frame {
            assert!(!self.ended, "a frame after the terminal: {f:?}");
            encode(&mut self.bytes, &f);
            self.ended = f.is_terminal();
        }
    }

    fn read(&mut self, op: &Op) {
        let mut cx = Context::from_waker(&self.waker);
        match op {
            Op::Next => match self.sub.poll_frame(&mut cx) {
                Poll::Ready(f) => {
                    assert!(f.is_some() || self.ended, "None before the terminal");
                    self.took(f);
                }
                Poll::Pending => self.waiting_since = Some(self.count.0.load(Ordering::SeqCst)),
            },
            Op::TryNext => {
                let f = self.sub.try_next();
                self.took(f);
            }
            Op::Sse(max) => match self.sub.poll_sse(&mut cx, *max) {
                Poll::Ready(Some(batch)) => {
                    assert!(!self.ended, "a batch after the terminal");
                    let events = batch.bytes.windows(2).filter(|w| w == b"\n\n").count() as u64;
                    assert_eq!(events, batch.frames, "whole events only");
                    assert!(batch.bytes.ends_with(b"\n\n"));
                    if batch.frames > 1 {
                        let last = batch.bytes[..batch.bytes.len() - 2].windows(2).rposition(|w| w == b"\n\n");
                        let before_last = last.map_or(0, |i| i + 2);
                        assert!(before_last < *max, "the batch kept growing past the limit");
                    }
                    self.bytes.extend_from_slice(&batch.bytes);
                    self.ended = batch.terminal;
                }
                Poll::Ready(None) => assert!(self.ended, "None before the terminal"),
                Poll::Pending => self.waiting_since = Some(self.count.0.load(Ordering::SeqCst)),
            },
            Op::Push(_) | Op::Yield => unreachable!(),
        }
    }
}

async fn run(ops: Vec<Op>) {
    let store = Arc::new(MemoryTarget::new());
    store.insert_message(ID);
    let plane = Plane::new(PlaneOptions::default().with_authorizer(Arc::new(AllowAll)), store).unwrap();
    let handle = plane.open(ID).await.unwrap();
    let mut reference = plane.subscribe(&(), ID, 0).await.unwrap();
    let count = Arc::new(Count::default());
    let mut mixed = Mixed {
        sub: plane.subscribe(&(), ID, 0).await.unwrap(),
        bytes: Vec::new(),
        waker: Waker::from(count.clone()),
        count,
        waiting_since: None,
        ended: false,
    };
    for op in &ops {
        match op {
            Op::Push(text) => {
                handle.push(text).unwrap();
                if let Some(since) = mixed.waiting_since.take() {
                    assert!(mixed.count.0.load(Ordering::SeqCst) > since, "a waiting read was not woken by a push");
                }
            }
            Op::Yield => {
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                }
            }
            read => mixed.read(read),
        }
    }
    handle.close().await.unwrap();
    // Drain both to the end.
    let mut expected = Vec::new();
    while let Some(f) = reference.next().await {
        encode(&mut expected, &f);
    }
    let mut guard = 0;
    while !mixed.ended {
        mixed.read(&Op::Sse(1 << 16));
        guard += 1;
        assert!(guard < 10_000, "the mixed reader never reached the terminal");
    }
    for read in [Op::Next, Op::TryNext, Op::Sse(1)] {
        mixed.read(&read);
    }
    assert_eq!(String::from_utf8_lossy(&mixed.bytes), String::from_utf8_lossy(&expected));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_way_of_reading_sees_the_same_events(ops in proptest::collection::vec(op(), 0..120)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(ops));
    }
}
