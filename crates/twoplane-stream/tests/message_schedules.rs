//! Messages with parts (docs/contract.md §8) through the plane, under generated schedules.
//!
//! Each case runs a plane over the in-memory model of the mapped tables (wrapped in the fault
//! injector) on a paused-clock runtime, and a generated schedule of producer calls: parts
//! started (text, reasoning, tool calls, data parts), deltas into any open part (bodies with
//! astral characters whose pairs are split between deltas, and lone surrogates), parts ended,
//! attributes set (a tool's output replaced, a data part replaced), metadata, the finish reason,
//! transient parts; interleaved with clock ticks, flushes, failing checkpoints, joins (at 0, at
//! the store's durable message, at the produced length, at any offset of the produced message),
//! readers that read SSE batches of a small byte limit (a replay then comes in many pieces) and
//! reconnects from the reader's own resume point, possibly dropping queued frames. A model
//! producer log (the core's `MessageLog`, the same rules) says what was produced.
//!
//! After EVERY step it asserts:
//! - P over the whole message: the store's durable message (the row and its chunk rows, text and
//!   parts alike, assembled by the core) is exactly the produced message at the store's length,
//!   every part and attribute and each body, and that length never shrinks;
//! - S over the whole message, for every reader at all times: the message it holds (the message
//!   it joined with, followed by every frame delivered since) is exactly the produced message at
//!   its resume point; no reader ever stops other than on `end` (a delta for a part it was not
//!   told about, a body gap or anything malformed would stop it);
//! - at the end, after the seal: every reader stopped on `end` holding the produced message, and
//!   the store holds it as a document with its spans, exactly what the producer's log seals (and
//!   nothing else: no chunk row left).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::plane_with;
use proptest::prelude::*;
use twoplane_core::json::JsonValue;
use twoplane_core::message::{Attrs, Event, Message, MessageAction, MessageLog, MessageReader};
use twoplane_core::reader::StopReason;
use twoplane_core::SseDecoder;
use twoplane_stream::*;

const ID: &str = "m";

#[derive(Clone, Debug)]
enum JoinAt {
    Zero,
    /// The store's durable message: what an application reading its own tables holds.
    Durable,
    Produced,
    /// The produced message at this fraction (per mille) of its length.
    Inside(u16),
}

#[derive(Clone, Debug)]
enum Op {
    Start(u8),
    /// Units into the `pick`-th open part (part 0 included while it is open).
    Delta {
        pick: u8,
        units: Vec<u16>,
    },
    End(u8),
    Set(u8, u8),
    Meta(u8),
    Finish,
    Transient(u8),
    Tick(u64),
    Flush,
    FailNextAppend,
    Join {
        at: JoinAt,
        sse: Option<usize>,
    },
    CatchUp,
    /// The `who`-th live reader takes up to `take` queued frames, drops its connection and
    /// joins again from what it holds.
    Reconnect {
        who: u8,
        take: u8,
    },
}

const KINDS: [&str; 5] = ["reasoning", "tool-search", "text", "data-weather", "dynamic-tool"];

fn units_strategy() -> impl Strategy<Value = Vec<u16>> {
    // ASCII, a BMP character, a pair, and lone halves, so that deltas split pairs.
    let unit = prop_oneof![
        4 => 0x61u16..0x7b,
        1 => Just(0x00e9u16),
        1 => Just(0xd83du16),
        1 => Just(0xde00u16),
        1 => Just(0x0022u16),
    ];
    proptest::collection::vec(unit, 1..12)
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<u8>().prop_map(Op::Start),
        8 => (any::<u8>(), units_strategy()).prop_map(|(pick, units)| Op::Delta { pick, units }),
        2 => any::<u8>().prop_map(Op::End),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(p, v)| Op::Set(p, v)),
        1 => any::<u8>().prop_map(Op::Meta),
        1 => Just(Op::Finish),
        1 => any::<u8>().prop_map(Op::Transient),
        3 => (1u64..900).prop_map(Op::Tick),
        1 => Just(Op::Flush),
        1 => Just(Op::FailNextAppend),
        3 => (
            prop_oneof![Just(JoinAt::Zero), Just(JoinAt::Durable), Just(JoinAt::Produced), (0u16..=1000).prop_map(JoinAt::Inside)],
            prop_oneof![Just(None), (60usize..200).prop_map(Some)]
        )
            .prop_map(|(at, sse)| Op::Join { at, sse }),
        2 => Just(Op::CatchUp),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(who, take)| Op::Reconnect { who, take }),
    ]
}

fn attrs(pairs: &[(&str, JsonValue)]) -> Attrs {
    pairs.iter().map(|(k, v)| ((*k).into(), v.clone())).collect()
}

/// One reader: its subscription and the core's message reader over everything it was given.
struct Client {
    sub: Subscription,
    reader: MessageReader,
    sse: Option<usize>,
    decoder: SseDecoder,
    batch: std::collections::VecDeque<Arc<MessageFrame>>,
}

impl Client {
    fn new(sub: Subscription, durable: Message, sse: Option<usize>) -> Client {
        Client {
            sub,
            reader: MessageReader::new(ID.into(), durable),
            sse,
            decoder: SseDecoder::new(),
            batch: Default::default(),
        }
    }

    /// The next frame queued now (frame by frame, or decoded out of an SSE batch).
    fn take_one(&mut self) -> Option<Arc<MessageFrame>> {
        let Some(max) = self.sse else { return self.sub.try_next() };
        if self.batch.is_empty() {
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            let std::task::Poll::Ready(Some(batch)) = self.sub.poll_sse(&mut cx, max) else { return None };
            let mut events = Vec::new();
            self.decoder.feed(&batch.bytes, &mut events);
            assert_eq!(events.len() as u64, batch.frames, "whole events only");
            for e in events {
                let frame = twoplane_core::message::decode_message_frame(&e.data).expect("an event the codec reads");
                self.batch.push_back(Arc::new(frame));
            }
        }
        self.batch.pop_front()
    }

    /// Feed up to `limit` queued frames to the reader, checking S after each.
    fn pump(&mut self, log: &MessageLog, limit: usize) {
        for _ in 0..limit {
            if self.reader.core().stopped().is_some() {
                return;
            }
            let Some(frame) = self.take_one() else { return };
            frame.validate().expect("every frame satisfies the codec");
            let action = self.reader.feed(&frame);
            if let MessageAction::Stop(reason) = action {
                assert_eq!(reason, StopReason::End, "a reader stopped on {reason:?} at {frame:?}");
            }
            let at = self.reader.core().resume_from();
            assert_eq!(
                self.reader.message().document(),
                log.message_at(at).document(),
                "S: the reader's message at {at} is not the produced one"
            );
        }
    }
}

struct World {
    plane: Plane,
    mem: Arc<MemoryTarget>,
    faulty: Arc<FaultyTarget>,
    handle: StreamHandle,
    log: MessageLog,
    clients: Vec<Client>,
    durable_len: u64,
    value: u8,
}

impl World {
    fn open_parts(&self) -> Vec<u32> {
        let parts = self.log.message().parts();
        (0..parts.len() as u32).filter(|&p| !parts[p as usize].ended).collect()
    }

    fn pick(&self, pick: u8, of: &[u32]) -> Option<u32> {
        (!of.is_empty()).then(|| of[pick as usize % of.len()])
    }

    fn next_value(&mut self) -> JsonValue {
        self.value = self.value.wrapping_add(1);
        JsonValue::Number(f64::from(self.value))
    }

    /// The store's durable message (P).
    fn store_message(&self) -> Message {
        self.mem.row(ID).expect("the row").durable_message().expect("the store's rows assemble")
    }

    async fn step(&mut self, op: &Op) {
        match op {
            Op::Start(k) => {
                let kind = KINDS[*k as usize % KINDS.len()];
                let value = match kind {
                    "tool-search" => attrs(&[("toolCallId", JsonValue::String("c1".into()))]),
                    "data-weather" => attrs(&[("id", JsonValue::String("w".into())), ("data", self.next_value())]),
                    _ => Vec::new(),
                };
                let (part, _) = self.log.start(kind.into(), value.clone()).expect("the model starts it");
                assert_eq!(self.handle.start_part(kind, value).expect("the plane starts it"), part);
            }
            Op::Delta { pick, units } => {
                let Some(part) = self.pick(*pick, &self.open_parts()) else { return };
                self.log.delta(part, twoplane_core::Text::from_slice(units)).expect("the model takes it");
                self.handle.push_part_units(part, units).expect("the plane takes it");
            }
            Op::End(pick) => {
                let Some(part) = self.pick(*pick, &self.open_parts()) else { return };
                let value = attrs(&[("state", JsonValue::String("done".into()))]);
                self.log.event(Event::End { part, value: value.clone() }).unwrap();
                self.handle.end_part(part, value).unwrap();
            }
            Op::Set(pick, v) => {
                let all: Vec<u32> = (0..self.log.message().parts().len() as u32).collect();
                let Some(part) = self.pick(*pick, &all) else { return };
                // A tool's output (preliminary, then final) or a data part replaced.
                let value = attrs(&[
                    ("output", JsonValue::Number(f64::from(*v))),
                    ("preliminary", JsonValue::Bool(v % 2 == 0)),
                ]);
                self.log.event(Event::Set { part, value: value.clone() }).unwrap();
                self.handle.set_part(part, value).unwrap();
            }
            Op::Meta(v) => {
                let value = attrs(&[("step", JsonValue::Number(f64::from(*v)))]);
                self.log.event(Event::Meta { value: value.clone() }).unwrap();
                self.handle.meta(value).unwrap();
            }
            Op::Finish => {
                self.log.event(Event::Finish { reason: "stop".into() }).unwrap();
                self.handle.finish("stop").unwrap();
            }
            Op::Transient(v) => {
                let value = attrs(&[("data", JsonValue::Number(f64::from(*v)))]);
                self.log.event(Event::Transient { kind: Some("data-status".into()), value: value.clone() }).unwrap();
                self.handle.transient(Some("data-status"), value).unwrap();
            }
            Op::Tick(ms) => tokio::time::advance(Duration::from_millis(*ms)).await,
            Op::Flush => {
                // A flush may fail on an injected fault; its outcome is the text schedules' subject.
                let _ = tokio::time::timeout(Duration::from_secs(30), self.handle.flush()).await;
            }
            Op::FailNextAppend => self.faulty.inject(FaultOp::Append, Fault::FailCommit),
            Op::Join { at, sse } => {
                let (from, durable) = match at {
                    JoinAt::Zero => (0, Message::new()),
                    JoinAt::Durable => {
                        let m = self.store_message();
                        (m.len(), m)
                    }
                    JoinAt::Produced => (self.log.len(), self.log.message_at(self.log.len())),
                    JoinAt::Inside(k) => {
                        let at = self.log.len() * u64::from(*k) / 1000;
                        (at, self.log.message_at(at))
                    }
                };
                let sub = self.plane.subscribe(&(), ID, from).await.expect("allowed");
                self.clients.push(Client::new(sub, durable, *sse));
            }
            Op::CatchUp => {}
            Op::Reconnect { who, take } => {
                let live: Vec<usize> =
                    (0..self.clients.len()).filter(|&i| self.clients[i].reader.core().stopped().is_none()).collect();
                let Some(&i) = live.get(*who as usize % live.len().max(1)) else { return };
                self.clients[i].pump(&self.log, *take as usize);
                let held = self.clients[i].reader.message().clone();
                let sse = self.clients[i].sse;
                let sub = self.plane.subscribe(&(), ID, held.len()).await.expect("allowed");
                self.clients[i] = Client::new(sub, held, sse);
            }
        }
        tokio::task::yield_now().await;
        for c in &mut self.clients {
            c.pump(&self.log, usize::MAX);
        }
        self.check_store();
    }

    /// P: the store's message is the produced message at its length, and only grows.
    fn check_store(&mut self) {
        let m = self.store_message();
        assert!(m.len() >= self.durable_len, "P: the store's message shrank from {} to {}", self.durable_len, m.len());
        assert!(m.len() <= self.log.len(), "the store holds more than was produced");
        assert_eq!(m.document(), self.log.message_at(m.len()).document(), "P: the store's message at {}", m.len());
        self.durable_len = m.len();
    }
}

fn run(ops: Vec<Op>, chars: u64) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    rt.block_on(async move {
        let mem = Arc::new(MemoryTarget::new());
        mem.insert_message(ID);
        let faulty = Arc::new(FaultyTarget::new(mem.clone()));
        let plane = plane_with(faulty.clone(), |o| {
            o.chars = chars;
            o.interval_ms = 300;
            o.retries = 1;
            o.linger_ms = 60_000;
        });
        let handle = plane.open(ID).await.expect("open");
        let mut w =
            World { plane, mem, faulty, handle, log: MessageLog::new(), clients: Vec::new(), durable_len: 0, value: 0 };
        for op in &ops {
            w.step(op).await;
        }
        // A reader that joins now, and the seal.
        let sub = w.plane.subscribe(&(), ID, 0).await.unwrap();
        w.clients.push(Client::new(sub, Message::new(), Some(90)));
        w.handle.close().await.expect("the seal lands");
        for _ in 0..50 {
            tokio::task::yield_now().await;
            for c in &mut w.clients {
                c.pump(&w.log, usize::MAX);
            }
        }
        let produced = w.log.message().document();
        for (i, c) in w.clients.iter().enumerate() {
            assert_eq!(c.reader.core().stopped(), Some(StopReason::End), "reader {i} did not end");
            assert_eq!(c.reader.message().document(), produced, "reader {i} ended with another message");
        }
        let row = w.mem.row(ID).unwrap();
        assert!(row.chunks.is_empty() && row.parts.is_empty(), "the seal compacts every chunk row");
        assert_eq!(row.seq, w.log.len());
        let stored = w.store_message();
        assert_eq!(stored.document(), produced, "the store holds the produced message");
        if w.log.message().has_structure() {
            // The document with the order it was made in: what the producer's own log seals.
            assert_eq!(row.document.as_deref().map(twoplane_core::Text::from), Some(w.log.sealed_document()));
        } else {
            assert_eq!(row.document, None, "a single text writes no document");
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// S and P over the whole message, per part, at every step (see the module header).
    #[test]
    fn messages_keep_s_and_p_under_generated_schedules(
        ops in proptest::collection::vec(op_strategy(), 1..60),
        chars in prop_oneof![Just(1u64), Just(7), Just(64)],
    ) {
        run(ops, chars);
    }
}

#[test]
fn a_plane_whose_store_keeps_no_parts_refuses_them_and_keeps_the_text() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    rt.block_on(async {
        let mem = Arc::new(MemoryTarget::new().without_parts());
        mem.insert_message(ID);
        let plane = plane_with(mem.clone(), |_| {});
        let h = plane.open(ID).await.unwrap();
        h.push("ab").unwrap();
        let e = h.start_part("reasoning", Vec::new()).unwrap_err();
        assert_eq!(e.kind(), PlaneErrorKind::InvalidArgument);
        assert!(e.message().contains("parts"), "{}", e.message());
        assert_eq!((h.seq(), h.part_count()), (2, 1), "nothing was appended");
        // Part rules: a delta for a part that has not started changes nothing either.
        assert_eq!(h.push_part(1, "x").unwrap_err().kind(), PlaneErrorKind::InvalidArgument);
        h.close().await.unwrap();
        assert_eq!(mem.row(ID).unwrap().body, "ab".encode_utf16().collect::<Vec<_>>());
    });
}

#[test]
fn part_rules_refuse_without_appending() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    rt.block_on(async {
        let mem = Arc::new(MemoryTarget::new());
        mem.insert_message(ID);
        let plane = plane_with(mem.clone(), |_| {});
        let h = plane.open(ID).await.unwrap();
        let p = h.start_part("reasoning", Vec::new()).unwrap();
        h.push_part(p, "hm").unwrap();
        h.end_part(p, Vec::new()).unwrap();
        let seq = h.seq();
        for e in [
            h.push_part(p, "after its end").unwrap_err(),
            h.push_part(7, "unknown").unwrap_err(),
            h.set_part(9, Vec::new()).unwrap_err(),
            h.event(Event::Start { part: 5, kind: "text".into(), value: Vec::new() }).unwrap_err(),
            h.meta(attrs(&[("text", JsonValue::Null)])).unwrap_err(),
        ] {
            assert_eq!(e.kind(), PlaneErrorKind::InvalidArgument, "{e}");
        }
        assert_eq!(h.seq(), seq, "nothing was appended");
        h.close().await.unwrap();
        let row = mem.row(ID).unwrap();
        assert_eq!(
            row.document.as_deref(),
            Some(concat!(
                r#"{"parts":[{"type":"reasoning","text":"hm"}],"spans":[{"type":"part","from":0,"seq":1,"part":1,"#,
                r#""kind":"reasoning"},[1,2],{"type":"part-end","from":3,"seq":4,"part":1}]}"#
            )),
            "the document holds the reasoning"
        );
        assert_eq!(row.seq, 4);
    });
}
