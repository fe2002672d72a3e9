//! The plane under generated schedules.
//!
//! Each case builds a plane over the in-memory model of the mapped tables wrapped in the fault
//! injector, on a paused-clock runtime, and runs a generated schedule of pushes (texts with
//! CJK, emoji and other astral characters, split so that pushes end between the halves of a
//! pair), timer ticks, flushes, joins at offset 0, at the durable length, at the produced length
//! and beyond, slow readers, injected commit failures, lost acknowledgements, failed read-backs,
//! stalls, cancel, close, fail and drain. After EVERY step it asserts:
//!
//! - P on the store: body ++ chunks is a prefix of the produced text, the length column equals
//!   its length, and it never shrinks; the plane never claims more than the store holds;
//! - the frame contract for every subscriber (checked frame by frame by `common::Reader`);
//! - S: every subscriber that got `end` holds exactly the produced text, and a subscriber that
//!   has not ended holds a prefix of it;
//! - honest waiters: a resolved flush means the store held its prefix; a rejected one is
//!   explained by an injected fault or by text that ends in half a surrogate pair;
//! - seal honesty: a rejected close only when injected close faults outnumber the retries;
//! - no written slice starts or ends inside a surrogate pair, and every slice is produced text;
//! - after a seal that landed: the store holds exactly the produced text, compacted.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{inside_pair, plane_with, Reader};
use proptest::prelude::*;
use tokio::task::JoinHandle;
use twoplane_core::text::{is_high_surrogate, is_low_surrogate};
use twoplane_stream::*;

const ID: &str = "msg";

#[derive(Clone, Debug)]
enum JoinAt {
    Zero,
    Durable,
    Produced,
    Beyond(u64),
}

#[derive(Clone, Debug)]
enum Op {
    /// Push `text`; with `split_tail`, an astral last character is pushed only up to its high
    /// half and the low half leads the next push.
    Push {
        text: String,
        split_tail: bool,
    },
    Tick(u64),
    Flush,
    Subscribe {
        at: JoinAt,
        slow: bool,
    },
    CatchUp,
    Inject {
        op: FaultOp,
        fault: Fault,
        n: usize,
    },
    Cancel,
    Close,
    Fail,
    Drain,
}

#[derive(Clone, Debug)]
struct Cfg {
    chars: u64,
    interval_ms: u64,
    retries: u32,
    max_queued_frames: usize,
    linger_ms: u64,
}

fn text_strategy() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec!["a", "b", " ", "é", "漢", "字", "😀", "🎉", "𝄞", "\u{10FFFF}", "\n"]);
    prop::collection::vec(pieces, 1..6).prop_map(|v| v.concat())
}

fn fault_strategy() -> impl Strategy<Value = (FaultOp, Fault, usize)> {
    let op = prop::sample::select(vec![FaultOp::Append, FaultOp::Append, FaultOp::Close, FaultOp::Probe]);
    let fault = prop_oneof![
        3 => Just(Fault::FailCommit),
        3 => Just(Fault::LoseAck),
        2 => Just(Fault::FailReadBack),
        1 => (50u64..3_000).prop_map(|ms| Fault::Delay(Duration::from_millis(ms))),
    ];
    (op, fault, 1usize..6)
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let join = prop_oneof![
        Just(JoinAt::Zero),
        Just(JoinAt::Durable),
        Just(JoinAt::Produced),
        (1u64..20).prop_map(JoinAt::Beyond),
    ];
    prop_oneof![
        12 => (text_strategy(), any::<bool>()).prop_map(|(text, split_tail)| Op::Push { text, split_tail }),
        5 => (1u64..1_200).prop_map(Op::Tick),
        2 => Just(Op::Flush),
        3 => (join, prop::bool::weighted(0.3)).prop_map(|(at, slow)| Op::Subscribe { at, slow }),
        1 => Just(Op::CatchUp),
        2 => fault_strategy().prop_map(|(op, fault, n)| Op::Inject { op, fault, n }),
        1 => Just(Op::Cancel),
        1 => prop_oneof![Just(Op::Close), Just(Op::Fail), Just(Op::Drain)],
    ]
}

fn cfg_strategy() -> impl Strategy<Value = Cfg> {
    (1u64..48, 10u64..500, 0u32..4, 4usize..24, 200u64..4_000).prop_map(
        |(chars, interval_ms, retries, max_queued_frames, linger_ms)| Cfg {
            chars,
            interval_ms,
            retries,
            max_queued_frames,
            linger_ms,
        },
    )
}

struct FlushRecord {
    at: u64,
    pending_high: bool,
    result: Result<u64, PlaneError>,
    store_seq: u64,
    faults_seen: usize,
}

struct SealRecord {
    close_faults_before: usize,
    task: Option<JoinHandle<Result<(), PlaneError>>>,
    result: Option<Result<(), PlaneError>>,
    kind: &'static str,
}

struct World {
    cfg: Cfg,
    plane: Plane,
    mem: Arc<MemoryTarget>,
    faulty: Arc<FaultyTarget>,
    handle: Arc<StreamHandle>,
    produced: Vec<u16>,
    carry: Option<u16>,
    readers: Vec<(Reader, bool)>,
    flushes: Vec<JoinHandle<FlushRecord>>,
    flushed: Vec<FlushRecord>,
    seal: Option<SealRecord>,
    /// Later seal requests through the handle (a drain of an evicted stream seals nothing).
    extra_closes: Vec<JoinHandle<Result<(), PlaneError>>>,
    last_store_seq: u64,
    cancel_requested: bool,
}

async fn settle() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}

fn failing_faults(faulty: &FaultyTarget, op: FaultOp) -> usize {
    faulty.consumed().iter().filter(|(o, f)| *o == op && !matches!(f, Fault::Delay(_))).count()
}

impl World {
    async fn new(cfg: Cfg) -> World {
        let mem = Arc::new(MemoryTarget::new());
        mem.insert_message(ID);
        let faulty = Arc::new(FaultyTarget::new(mem.clone()));
        let c = cfg.clone();
        let plane = plane_with(faulty.clone(), move |o| {
            o.chars = c.chars;
            o.interval_ms = c.interval_ms;
            o.retries = c.retries;
            o.max_queued_frames = c.max_queued_frames;
            o.linger_ms = c.linger_ms;
            o.on_checkpoint_error = Some(Arc::new(|_, _| {}));
        });
        let handle = Arc::new(plane.open(ID).await.expect("open"));
        World {
            cfg,
            plane,
            mem,
            faulty,
            handle,
            produced: Vec::new(),
            carry: None,
            readers: Vec::new(),
            flushes: Vec::new(),
            flushed: Vec::new(),
            seal: None,
            extra_closes: Vec::new(),
            last_store_seq: 0,
            cancel_requested: false,
        }
    }

    fn request_seal(&mut self, kind: &'static str) {
        let h = self.handle.clone();
        let task = match kind {
            "close" => tokio::spawn(async move { h.close().await }),
            "fail" => tokio::spawn(async move { h.fail("boom").await }),
            _ => {
                let plane = self.plane.clone();
                tokio::spawn(async move {
                    let report = plane.drain().await;
                    match report.failed.into_iter().next() {
                        Some((_, e)) => Err(e),
                        None => Ok(()),
                    }
                })
            }
        };
        if self.seal.is_none() {
            self.seal = Some(SealRecord {
                close_faults_before: failing_faults(&self.faulty, FaultOp::Close),
                task: Some(task),
                result: None,
                kind,
            });
        } else if kind != "drain" {
            self.extra_closes.push(task);
        }
    }

    async fn step(&mut self, op: &Op) {
        match op {
            Op::Push { text, split_tail } => {
                let mut units: Vec<u16> = self.carry.take().into_iter().collect();
                units.extend(text.encode_utf16());
                if *split_tail && units.len() >= 2 && is_low_surrogate(units[units.len() - 1]) {
                    self.carry = units.pop();
                }
                match self.handle.push_units(&units) {
                    Ok(()) => self.produced.extend_from_slice(&units),
                    Err(e) => {
                        assert!(self.seal.is_some(), "a push failed on a live stream: {e}");
                        assert_eq!(e.kind(), PlaneErrorKind::StreamClosed);
                    }
                }
            }
            Op::Tick(ms) => tokio::time::advance(Duration::from_millis(*ms)).await,
            Op::Flush => {
                let (h, mem, faulty) = (self.handle.clone(), self.mem.clone(), self.faulty.clone());
                let at = self.produced.len() as u64;
                let pending_high = self.produced.last().is_some_and(|u| is_high_surrogate(*u));
                self.flushes.push(tokio::spawn(async move {
                    let result = h.flush().await;
                    FlushRecord {
                        at,
                        pending_high,
                        result,
                        store_seq: mem.row(ID).unwrap().seq,
                        faults_seen: faulty.consumed().len(),
                    }
                }));
            }
            Op::Subscribe { at, slow } => {
                let produced_len = self.produced.len() as u64;
                let from = match at {
                    JoinAt::Zero => 0,
                    JoinAt::Durable => self.mem.row(ID).unwrap().seq,
                    JoinAt::Produced => produced_len,
                    JoinAt::Beyond(k) => produced_len + k,
                };
                let sub = self.plane.subscribe(&(), ID, from).await.expect("allowed");
                self.readers.push((Reader::new(sub, from, &self.produced), *slow));
            }
            Op::CatchUp => {
                for (r, _) in &mut self.readers {
                    r.drain();
                }
            }
            Op::Inject { op, fault, n } => self.faulty.inject_n(*op, *fault, *n),
            Op::Cancel => {
                self.mem.request_cancel(ID);
                self.cancel_requested = true;
            }
            Op::Close => self.request_seal("close"),
            Op::Fail => self.request_seal("fail"),
            Op::Drain => self.request_seal("drain"),
        }
        settle().await;
    }

    async fn collect_finished(&mut self) {
        let mut still = Vec::new();
        for task in self.flushes.drain(..) {
            if task.is_finished() {
                self.flushed.push(task.await.expect("flush task"));
            } else {
                still.push(task);
            }
        }
        self.flushes = still;
        if let Some(seal) = &mut self.seal {
            if seal.task.as_ref().is_some_and(|t| t.is_finished()) {
                seal.result = Some(seal.task.take().unwrap().await.expect("seal task"));
            }
        }
    }

    async fn check(&mut self) {
        self.collect_finished().await;
        let produced = &self.produced;
        let row = self.mem.row(ID).unwrap();

        // P on the store.
        let text = row.durable_text();
        assert!(produced.starts_with(&text), "P: the store is not a prefix of the produced text");
        assert_eq!(row.seq, text.len() as u64, "the length column matches body ++ chunks");
        assert!(row.seq >= self.last_store_seq, "P: the durable length went backwards");
        self.last_store_seq = row.seq;
        assert!(self.handle.durable_seq() <= row.seq, "the plane claims more than the store holds");
        assert_eq!(self.handle.seq(), produced.len() as u64);

        // Writes: produced text, never cut inside a pair.
        for w in self.mem.writes() {
            match w {
                MemoryWrite::Append { from, seq, text, .. } => {
                    assert!(!inside_pair(produced, from as usize), "a slice starts inside a pair at {from}");
                    assert!(!inside_pair(produced, seq as usize), "a slice ends inside a pair at {seq}");
                    assert_eq!(&produced[from as usize..seq as usize], &text[..], "a slice is produced text");
                }
                MemoryWrite::Close { body, body_from, .. } => {
                    assert_eq!(body_from, 0);
                    assert_eq!(&body, produced, "the seal writes the whole produced text");
                }
            }
        }

        // Frame contract (inside Reader) and S.
        for (reader, slow) in &mut self.readers {
            if !*slow {
                reader.drain();
            }
            assert!(produced.starts_with(&reader.acc), "a reader holds text that was never produced");
            if let Some(Frame::End { seq, .. }) = reader.terminal() {
                assert_eq!(&reader.acc, produced, "S: an ended reader holds exactly the produced text");
                assert!(*seq <= row.seq, "end claims more than the store holds");
            }
            for f in &reader.frames {
                if let Frame::Durable { seq } = &**f {
                    assert!(*seq <= row.seq, "a durable frame claimed more than the store holds");
                }
            }
        }

        // Honest waiters.
        for f in &self.flushed {
            match &f.result {
                Ok(d) => {
                    assert!(*d >= f.at && f.store_seq >= f.at, "a flush resolved before its text landed");
                }
                Err(e) => assert!(
                    f.pending_high || f.faults_seen > 0,
                    "a flush was rejected with no fault to explain it: {e}"
                ),
            }
        }

        // Seal honesty and compaction.
        if let Some(SealRecord { result: Some(result), close_faults_before, kind, .. }) = &self.seal {
            match result {
                Ok(()) => {
                    assert_eq!(&row.body, produced, "compaction writes exactly the produced text");
                    assert_eq!(row.seq, produced.len() as u64);
                    assert!(row.chunks.is_empty(), "compaction drops the chunk rows");
                    let status = row.status.as_deref().unwrap_or_default();
                    match *kind {
                        "close" if self.cancel_requested => assert!(matches!(status, "complete" | "cancelled")),
                        "close" => assert_eq!(status, "complete"),
                        "fail" => assert_eq!((status, row.error.as_deref()), ("error", Some("boom"))),
                        _ => assert_eq!(status, "interrupted"),
                    }
                    if status == "cancelled" {
                        assert!(self.handle.cancelled());
                    }
                    assert_eq!(self.handle.durable_seq(), produced.len() as u64);
                }
                Err(e) => {
                    let faults = failing_faults(&self.faulty, FaultOp::Close) - close_faults_before;
                    assert!(
                        faults > self.cfg.retries as usize,
                        "a close was rejected with only {faults} injected close faults: {e}"
                    );
                }
            }
        }
    }

    async fn finish(&mut self) {
        self.faulty.clear();
        if self.seal.is_none() {
            self.request_seal("close");
        }
        for _ in 0..400 {
            self.collect_finished().await;
            if self.seal.as_ref().is_some_and(|s| s.result.is_some()) && self.flushes.is_empty() {
                break;
            }
            tokio::time::advance(Duration::from_millis(250)).await;
            settle().await;
        }
        self.collect_finished().await;
        assert!(self.seal.as_ref().is_some_and(|s| s.result.is_some()), "the seal never finished");
        assert!(self.flushes.is_empty(), "a flush never settled");
        for (reader, _) in &mut self.readers {
            reader.drain();
            assert!(reader.is_done(), "a subscriber never got its terminal: {:?}", reader.frames);
        }
        self.check().await;
        // Every later close reports the same outcome as the first seal.
        let first = self.seal.as_ref().and_then(|s| s.result.as_ref()).map(|r| r.is_ok());
        for task in self.extra_closes.drain(..) {
            let again = task.await.expect("close task");
            assert_eq!(Some(again.is_ok()), first, "a second seal disagreed with the first");
        }
        assert!(self.plane.is_hosted(ID) || self.cfg.linger_ms > 0);
    }
}

fn run(cfg: Cfg, ops: Vec<Op>) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    rt.block_on(async move {
        let mut world = World::new(cfg).await;
        for op in &ops {
            world.step(op).await;
            world.check().await;
        }
        world.finish().await;
    });
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn schedules_keep_every_invariant(cfg in cfg_strategy(), ops in prop::collection::vec(op_strategy(), 1..80)) {
        run(cfg, ops);
    }
}

/// A fixed schedule exercising every fault kind, so a regression shows without luck.
#[test]
fn a_hand_written_schedule_with_every_fault() {
    let cfg = Cfg { chars: 4, interval_ms: 100, retries: 1, max_queued_frames: 6, linger_ms: 1_000 };
    let push = |s: &str, split| Op::Push { text: s.into(), split_tail: split };
    let ops = vec![
        Op::Subscribe { at: JoinAt::Zero, slow: false },
        push("漢字😀", true),
        Op::Flush,
        Op::Inject { op: FaultOp::Append, fault: Fault::LoseAck, n: 2 },
        push("🎉ab", false),
        Op::Tick(300),
        Op::Subscribe { at: JoinAt::Durable, slow: true },
        Op::Inject { op: FaultOp::Append, fault: Fault::FailCommit, n: 3 },
        Op::Inject { op: FaultOp::Probe, fault: Fault::FailReadBack, n: 1 },
        push("𝄞𝄞𝄞", true),
        Op::Flush,
        Op::Tick(1_000),
        Op::Subscribe { at: JoinAt::Produced, slow: false },
        Op::Subscribe { at: JoinAt::Beyond(7), slow: false },
        Op::Inject { op: FaultOp::Append, fault: Fault::Delay(Duration::from_secs(5)), n: 1 },
        push("tail text that is long", false),
        Op::Cancel,
        Op::Tick(200),
        Op::Inject { op: FaultOp::Close, fault: Fault::LoseAck, n: 1 },
        Op::Close,
        Op::Tick(100),
        Op::Subscribe { at: JoinAt::Zero, slow: false },
        Op::Tick(2_000),
        Op::Subscribe { at: JoinAt::Zero, slow: false },
    ];
    run(cfg, ops);
}
