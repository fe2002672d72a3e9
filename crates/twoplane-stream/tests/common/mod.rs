//! Test helpers shared by the integration tests: a subscriber that checks the frame contract
//! on every frame it receives, and small constructors.
#![allow(dead_code)]

pub mod pg;
pub mod sql;
pub mod sqlite_file;

use std::sync::Arc;

use twoplane_core::text::{is_high_surrogate, is_low_surrogate};
use twoplane_stream::{AllowAll, DurableTarget, MessageFrame as Frame, Plane, PlaneOptions, Subscription};

/// A plane over `target` with an allow-all authorizer and the given tweaks.
pub fn plane_with(target: Arc<dyn DurableTarget>, tweak: impl FnOnce(&mut PlaneOptions)) -> Plane {
    let mut options = PlaneOptions::default().with_authorizer(Arc::new(AllowAll));
    tweak(&mut options);
    Plane::new(options, target).expect("valid options")
}

pub fn units(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// Whether offset `at` falls between the two halves of a surrogate pair in `text`.
pub fn inside_pair(text: &[u16], at: usize) -> bool {
    at > 0 && at < text.len() && is_high_surrogate(text[at - 1]) && is_low_surrogate(text[at])
}

/// A subscriber that checks the frame contract (docs/contract.md §1) frame by frame and keeps the
/// reader's accumulator (chunks spliced at their own offsets, docs/contract.md §4 rule 5).
pub struct Reader {
    pub sub: Subscription,
    pub frames: Vec<Arc<Frame>>,
    /// The text the subscriber joined with, then every chunk spliced in.
    pub acc: Vec<u16>,
    /// What the subscriber claims to hold when it joins (its `from`).
    pub claimed: u64,
    /// The produced text at join time (to seed the accumulator at the open's offset).
    seed: Vec<u16>,
    last_durable: u64,
    /// Read as SSE batches of at most this many bytes (decoded back into frames), not frame by
    /// frame: a join's replay then comes in pieces cut for this limit.
    sse_max: Option<usize>,
    /// Frames of a batch taken but not yet checked (lost with the connection, as a batch a
    /// client had not parsed yet would be).
    batch: std::collections::VecDeque<Arc<Frame>>,
}

impl Reader {
    pub fn new(sub: Subscription, claimed: u64, produced_at_join: &[u16]) -> Reader {
        Reader {
            sub,
            frames: Vec::new(),
            acc: Vec::new(),
            claimed,
            seed: produced_at_join.to_vec(),
            last_durable: 0,
            sse_max: None,
            batch: Default::default(),
        }
    }

    /// This reader, reading SSE batches of at most `max` bytes (see [`Reader::drain_at_most`]).
    pub fn with_sse_batches(mut self, max: usize) -> Reader {
        self.sse_max = Some(max.max(1));
        self
    }

    /// The next frame queued now: frame by frame, or out of the SSE batch being read.
    fn take_one(&mut self) -> Option<Arc<Frame>> {
        let Some(max) = self.sse_max else { return self.sub.try_next() };
        if self.batch.is_empty() {
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            let std::task::Poll::Ready(Some(batch)) = self.sub.poll_sse(&mut cx, max) else { return None };
            let mut events = Vec::new();
            twoplane_core::SseDecoder::new().feed(&batch.bytes, &mut events);
            assert_eq!(events.len() as u64, batch.frames, "whole events only");
            for e in events {
                let frame =
                    twoplane_core::message::decode_message_frame(&e.data).expect("an event the codec reads back");
                self.batch.push_back(Arc::new(frame));
            }
        }
        self.batch.pop_front()
    }

    pub fn terminal(&self) -> Option<&Frame> {
        self.frames.last().map(|f| &**f).filter(|f| f.is_terminal())
    }

    pub fn is_done(&self) -> bool {
        self.terminal().is_some()
    }

    /// Take every frame queued now, checking each. Returns how many were taken.
    pub fn drain(&mut self) -> usize {
        self.drain_at_most(usize::MAX)
    }

    /// Take at most `limit` of the frames queued now, checking each (a connection that drops
    /// part-way through its queue). Returns how many were taken.
    pub fn drain_at_most(&mut self, limit: usize) -> usize {
        let mut n = 0;
        while n < limit {
            let Some(frame) = self.take_one() else { break };
            self.check(frame);
            n += 1;
        }
        n
    }

    /// Wait for the next frame (tests with a live runtime).
    pub async fn next(&mut self) -> Option<Arc<Frame>> {
        let frame = self.sub.next().await?;
        self.check(frame.clone());
        Some(frame)
    }

    /// Read until the terminal (or until the subscription ends).
    pub async fn read_to_end(&mut self) {
        while !self.is_done() {
            if self.next().await.is_none() {
                break;
            }
        }
    }

    fn check(&mut self, frame: Arc<Frame>) {
        assert!(!self.is_done(), "a frame after the terminal: {frame:?} (earlier: {:?})", self.frames);
        frame.validate().expect("every frame satisfies the codec's invariants");
        let first = self.frames.is_empty();
        match &*frame {
            Frame::Open { from, seq, durable_seq, .. } => {
                assert!(first, "open must be the first frame, and only once: {:?}", self.frames);
                assert!(from <= seq, "open from {from} past seq {seq}");
                assert!(durable_seq <= seq, "open durableSeq {durable_seq} past seq {seq}");
                assert_eq!(
                    *from,
                    self.claimed.min(self.seed.len() as u64),
                    "the join offset is clamped to the produced length"
                );
                self.acc = self.seed[..*from as usize].to_vec();
                self.last_durable = *durable_seq;
            }
            Frame::Stale { .. } | Frame::Absent => {
                // Legal bare (the only frame) or as the terminal after an open.
            }
            other => {
                assert!(!first, "a subscription must start with open, got {other:?}");
                match other {
                    Frame::Chunk { from, seq, text, .. } => {
                        assert!(
                            *from as usize <= self.acc.len(),
                            "chunk at {from} leaves a gap after {} (contract S)",
                            self.acc.len()
                        );
                        assert_eq!(*seq - *from, text.len() as u64);
                        self.acc.truncate(*from as usize);
                        self.acc.extend_from_slice(text.units());
                    }
                    Frame::Durable { seq } => {
                        assert!(*seq >= self.last_durable, "durable went backwards: {seq} < {}", self.last_durable);
                        assert!(
                            *seq as usize <= self.acc.len(),
                            "durable {seq} past the delivered text {}",
                            self.acc.len()
                        );
                        self.last_durable = *seq;
                    }
                    Frame::End { seq, .. } => {
                        assert!(
                            *seq as usize <= self.acc.len(),
                            "end {seq} past the delivered text {}",
                            self.acc.len()
                        );
                    }
                    _ => unreachable!(),
                }
            }
        }
        self.frames.push(frame);
    }
}
