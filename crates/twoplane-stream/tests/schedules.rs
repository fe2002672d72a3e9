//! The plane under generated schedules.
//!
//! Each case builds a plane over the in-memory model of the mapped tables wrapped in the fault
//! injector, on a paused-clock runtime, and runs a generated schedule of pushes (texts with
//! CJK, emoji and other astral characters, split so that pushes end between the halves of a
//! pair, and unpaired high and low surrogates at push boundaries and inside pushes), timer
//! ticks, flushes, joins at offset 0, at the durable length, at the produced length and beyond,
//! slow readers, reconnects (a client drops its connection, possibly with frames still queued,
//! and joins again from its core `TextReader`'s resume point), injected commit failures, lost
//! acknowledgements, failed read-backs, stalls, cancel, close, fail and drain. After EVERY step
//! it asserts:
//!
//! - P on the store: body ++ chunks is a prefix of the produced text, the length column equals
//!   its length, and it never shrinks; the plane never claims more than the store holds;
//! - the frame contract for every connection (checked frame by frame by `common::Reader`);
//! - S across reconnects: each client's `TextReader` only ever extends its text, holds a prefix
//!   of the produced text, and holds exactly the produced text once it stops on `end`; a third
//!   of the connections read SSE batches of a small byte limit, so their join replays arrive as
//!   many pieces (and a reconnect can drop a connection part-way through a replay);
//! - honest answers: `absent` only when the stream was not hosted at the join, `stale` only for
//!   a client that let its queue fill (a slow one), never for one that kept up;
//! - honest waiters: a resolved flush means the store held its prefix; a rejected one is
//!   explained by a failing append or read-back fault consumed while that flush was pending, by
//!   text that ends in half a surrogate pair, or by a seal that did not land;
//! - seal honesty: a rejected close only when injected close faults outnumber the retries;
//! - no written slice starts or ends inside a surrogate pair, and every slice is produced text;
//! - after a seal that landed: the store holds exactly the produced text, compacted;
//! - liveness at the end: every client that kept up and joined while the stream was hosted has
//!   stopped on `end` holding the produced text, and `end` reports the plane's durable length.
//!
//! The schedules also hold sweeps: at any step, the stream's host lease lapses and a sweeper
//! marks the row `interrupted` under the running producer. From then on the store must never
//! change (no checkpoint, chunk or seal lands: the fence), the row must stay consistent (body ++
//! chunks assemble to a prefix of the produced text, the length column matches), the producer
//! must stop with `fenced` (pushes, flushes and the seal), and clients that kept up end with
//! `stale`, whose text, read from the store, is the row's.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{inside_pair, plane_with, Reader};
use proptest::prelude::*;
use tokio::task::JoinHandle;
use twoplane_core::reader::{StopReason, TextReader};
use twoplane_core::text::{is_high_surrogate, is_low_surrogate};
use twoplane_stream::*;
// Every frame the plane hands out is a message frame (docs/contract.md §8).
use twoplane_stream::MessageFrame as Frame;

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
    /// Push `units`; with `split_tail`, a text ending in a low surrogate is pushed without it and
    /// the low half leads the next push.
    Push {
        units: Vec<u16>,
        split_tail: bool,
    },
    Tick(u64),
    Flush,
    Subscribe {
        at: JoinAt,
        slow: bool,
    },
    CatchUp,
    /// The `who`-th client (modulo those whose reader is still live) takes up to `take` queued
    /// frames, drops its connection (whatever is still queued is lost) and joins again from its
    /// resume point.
    Reconnect {
        who: usize,
        take: usize,
    },
    Inject {
        op: FaultOp,
        fault: Fault,
        n: usize,
    },
    /// A reader cancels: the store's flag is set, and with `here` the plane hosting the stream
    /// is told at once too (`Plane::cancel`, as `twoplane serve` does).
    Cancel {
        here: bool,
    },
    Close,
    Fail,
    Drain,
    /// The producer's lease lapsed and a sweeper released the row (`streaming` to
    /// `interrupted`; a no-op once the row is sealed).
    Sweep,
}

#[derive(Clone, Debug)]
struct Cfg {
    chars: u64,
    interval_ms: u64,
    retries: u32,
    max_queued_frames: usize,
    linger_ms: u64,
}

/// Lone surrogates a JavaScript producer can emit: the first and last high halves, the first
/// and last low halves.
const LONE: [u16; 4] = [0xD800, 0xDBFF, 0xDC00, 0xDFFF];

/// A delta as UTF-16: ASCII, BMP, astral characters, and unpaired surrogates, which land at the
/// start, inside and at the end of pushes (and pair up when a high one meets a low one).
fn text_strategy() -> impl Strategy<Value = Vec<u16>> {
    let chars: Vec<Vec<u16>> = ["a", "b", " ", "é", "漢", "字", "😀", "🎉", "𝄞", "\u{10FFFF}", "\n"]
        .iter()
        .map(|s| s.encode_utf16().collect())
        .collect();
    let piece = prop_oneof![
        5 => prop::sample::select(chars),
        1 => prop::sample::select(LONE.to_vec()).prop_map(|u| vec![u]),
    ];
    prop::collection::vec(piece, 1..6).prop_map(|v| v.concat())
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
        12 => (text_strategy(), any::<bool>()).prop_map(|(units, split_tail)| Op::Push { units, split_tail }),
        5 => (1u64..1_200).prop_map(Op::Tick),
        2 => Just(Op::Flush),
        3 => (join, prop::bool::weighted(0.3)).prop_map(|(at, slow)| Op::Subscribe { at, slow }),
        1 => Just(Op::CatchUp),
        2 => (0usize..16, 0usize..4).prop_map(|(who, take)| Op::Reconnect { who, take }),
        2 => fault_strategy().prop_map(|(op, fault, n)| Op::Inject { op, fault, n }),
        1 => any::<bool>().prop_map(|here| Op::Cancel { here }),
        1 => prop_oneof![Just(Op::Close), Just(Op::Fail), Just(Op::Drain)],
        1 => Just(Op::Sweep),
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
    /// The fault log's length when the flush was asked and when it was answered: the faults
    /// consumed in between are the only ones that can explain a rejection.
    faults: std::ops::Range<usize>,
    /// A seal had been requested by the time the flush was answered.
    sealed: bool,
}

struct SealRecord {
    close_faults_before: usize,
    task: Option<JoinHandle<Result<(), PlaneError>>>,
    result: Option<Result<(), PlaneError>>,
    kind: &'static str,
}

/// One client: a `TextReader` that lives across connections, and its current connection
/// (checked against the frame contract on its own).
struct Client {
    conn: Reader,
    /// Frames of `conn` already fed to `text`.
    fed: usize,
    text: TextReader,
    /// What `text` held after the last frame: every later text must extend it.
    last: Vec<u16>,
    /// A slow client is drained only by `CatchUp`; the others after every step.
    slow: bool,
    /// The stream was hosted on the plane when the current connection joined.
    hosted_at_join: bool,
    connections: usize,
}

impl Client {
    /// Take what the connection has queued (all of it, or at most `limit` frames) and feed it
    /// to the client's reader.
    fn pump(&mut self, produced: &[u16], limit: Option<usize>) {
        match limit {
            None => {
                self.conn.drain();
            }
            Some(n) => {
                self.conn.drain_at_most(n);
            }
        }
        for frame in &self.conn.frames[self.fed..] {
            // A single-text stream's frames are all today's six frames (docs/contract.md §8).
            self.text.feed(&frame.to_frame().expect("a text stream sent a frame of the parts wire"));
            let now = self.text.text().units();
            assert!(now.starts_with(&self.last), "P: a client's text shrank or changed under it");
            assert!(produced.starts_with(now), "a client holds text that was never produced");
            self.last = now.to_vec();
        }
        self.fed = self.conn.frames.len();
    }
}

struct World {
    cfg: Cfg,
    plane: Plane,
    mem: Arc<MemoryTarget>,
    faulty: Arc<FaultyTarget>,
    handle: Arc<StreamHandle>,
    produced: Vec<u16>,
    carry: Option<u16>,
    clients: Vec<Client>,
    flushes: Vec<JoinHandle<FlushRecord>>,
    flushed: Vec<FlushRecord>,
    seal: Option<SealRecord>,
    /// Later seal requests through the handle (a drain of an evicted stream seals nothing).
    extra_closes: Vec<JoinHandle<Result<(), PlaneError>>>,
    last_store_seq: u64,
    cancel_requested: bool,
    /// `Plane::cancel` reached the live stream before any seal was requested.
    cancelled_here: bool,
    /// The row as the sweep left it, when a sweep released it: the store must stay exactly so.
    swept: Option<MemoryRow>,
}

async fn settle() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}

fn failing_faults(faulty: &FaultyTarget, op: FaultOp) -> usize {
    faulty.consumed().iter().filter(|(o, f)| *o == op && !matches!(f, Fault::Delay(_))).count()
}

/// Whether the consumed faults in `window` hold one that fails a checkpoint round: an append
/// that did not answer, or a read-back that did not.
fn checkpoint_fault_in(consumed: &[(FaultOp, Fault)], window: &std::ops::Range<usize>) -> bool {
    consumed[window.clone()]
        .iter()
        .any(|(op, f)| matches!(op, FaultOp::Append | FaultOp::Probe) && !matches!(f, Fault::Delay(_)))
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
            clients: Vec::new(),
            flushes: Vec::new(),
            flushed: Vec::new(),
            seal: None,
            extra_closes: Vec::new(),
            last_store_seq: 0,
            cancel_requested: false,
            cancelled_here: false,
            swept: None,
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

    /// Open a connection at `from`, noting whether the stream was hosted when it joined.
    async fn connect(&self, from: u64) -> (Reader, bool) {
        let hosted = self.plane.is_hosted(ID);
        let sub = self.plane.subscribe(&(), ID, from).await.expect("allowed");
        let reader = Reader::new(sub, from, &self.produced);
        // A third of the connections read SSE batches with a small limit, so their replays come
        // in pieces (cut between any units but the halves of a pair) that must still join up.
        let n = self.clients.len() + self.produced.len();
        let reader = if n % 3 == 1 { reader.with_sse_batches(1 + (n * 37) % 150) } else { reader };
        (reader, hosted)
    }

    async fn step(&mut self, op: &Op) {
        match op {
            Op::Push { units, split_tail } => {
                let mut units: Vec<u16> = self.carry.take().into_iter().chain(units.iter().copied()).collect();
                if *split_tail && units.len() >= 2 && is_low_surrogate(units[units.len() - 1]) {
                    self.carry = units.pop();
                }
                match self.handle.push_units(&units) {
                    Ok(()) => self.produced.extend_from_slice(&units),
                    Err(e) if e.kind() == PlaneErrorKind::Fenced => {
                        assert!(self.swept.is_some(), "fenced without a sweep: {e}");
                    }
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
                    let start = faulty.consumed().len();
                    let result = h.flush().await;
                    FlushRecord {
                        at,
                        pending_high,
                        result,
                        store_seq: mem.row(ID).unwrap().seq,
                        faults: start..faulty.consumed().len(),
                        sealed: h.is_sealed(),
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
                let (conn, hosted_at_join) = self.connect(from).await;
                // The client holds what it claims, as far as the text goes (a claim past the
                // produced length is clamped by the plane).
                let held = &self.produced[..(from as usize).min(self.produced.len())];
                self.clients.push(Client {
                    conn,
                    fed: 0,
                    text: TextReader::new(ID.into(), Text::from_slice(held)),
                    last: held.to_vec(),
                    slow: *slow,
                    hosted_at_join,
                    connections: 1,
                });
            }
            Op::CatchUp => {
                for c in &mut self.clients {
                    c.pump(&self.produced, None);
                }
            }
            Op::Reconnect { who, take } => {
                let live: Vec<usize> =
                    (0..self.clients.len()).filter(|&i| self.clients[i].text.core().is_live()).collect();
                if !live.is_empty() {
                    let i = live[who % live.len()];
                    self.clients[i].pump(&self.produced, Some(*take));
                    if self.clients[i].text.core().is_live() {
                        // The old connection goes away first (dropping it detaches it from the
                        // plane), with whatever it still had queued.
                        let Client { text, last, slow, connections, .. } = self.clients.remove(i);
                        let (conn, hosted_at_join) = self.connect(text.core().resume_from()).await;
                        let client =
                            Client { conn, fed: 0, text, last, slow, hosted_at_join, connections: connections + 1 };
                        self.clients.insert(i, client);
                    }
                }
            }
            Op::Inject { op, fault, n } => self.faulty.inject_n(*op, *fault, *n),
            Op::Cancel { here } => {
                self.mem.request_cancel(ID);
                self.cancel_requested = true;
                if *here {
                    if self.plane.cancel(ID) {
                        assert!(self.handle.cancelled(), "a cancel delivered to the host is seen at once");
                        self.cancelled_here = true;
                    } else {
                        assert!(
                            self.handle.is_sealed() || !self.plane.is_hosted(ID),
                            "a cancel was refused by a live stream"
                        );
                    }
                }
            }
            Op::Close => self.request_seal("close"),
            Op::Fail => self.request_seal("fail"),
            Op::Drain => self.request_seal("drain"),
            Op::Sweep => {
                if self.mem.sweep(ID) {
                    self.swept = Some(self.mem.row(ID).unwrap());
                }
            }
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

    /// Feed every client that keeps up everything its connection has queued.
    fn keep_up(&mut self) {
        for c in self.clients.iter_mut().filter(|c| !c.slow) {
            c.pump(&self.produced, None);
        }
    }

    async fn check(&mut self) {
        self.collect_finished().await;
        self.keep_up();
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
        // The fence: after the sweep nothing the producer does reaches the store.
        // (The cancel column is the readers' to set, not the producer's.)
        if let Some(swept) = &self.swept {
            assert_eq!(&MemoryRow { cancel: swept.cancel, ..row.clone() }, swept, "the store changed after the sweep");
            assert_eq!(row.status.as_deref(), Some("interrupted"));
        }

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

        // Frame contract (inside Reader), S per connection and per client, honest answers.
        for c in &self.clients {
            let conn = &c.conn;
            assert!(produced.starts_with(&conn.acc), "a connection holds text that was never produced");
            match conn.terminal() {
                Some(Frame::End { seq, .. }) => {
                    assert_eq!(&conn.acc, produced, "S: an ended connection holds exactly the produced text");
                    assert!(*seq <= row.seq, "end claims more than the store holds");
                }
                Some(Frame::Absent) => {
                    assert!(!c.hosted_at_join, "absent from the plane that hosts the stream");
                }
                Some(Frame::Stale { .. }) => {
                    assert!(
                        c.slow || self.swept.is_some(),
                        "stale for a client that kept up, with no sweep (connection {})",
                        c.connections
                    );
                }
                _ => {}
            }
            if c.hosted_at_join && !c.slow {
                assert!(
                    matches!(conn.frames.first().map(|f| &**f), None | Some(Frame::Open { .. })),
                    "a join on the hosting plane starts with open: {:?}",
                    conn.frames
                );
            }
            for f in &conn.frames {
                if let Frame::Durable { seq } = &**f {
                    assert!(*seq <= row.seq, "a durable frame claimed more than the store holds");
                }
            }
            if c.text.core().stopped() == Some(StopReason::End) {
                assert_eq!(
                    c.text.text().units(),
                    &produced[..],
                    "S: a client that stopped on end holds the produced text"
                );
            }
        }

        // Honest waiters.
        let consumed = self.faulty.consumed();
        let seal_failed = self.seal.as_ref().and_then(|s| s.result.as_ref()).map(Result::is_err);
        for f in &self.flushed {
            match &f.result {
                Ok(d) => {
                    assert!(*d >= f.at && f.store_seq >= f.at, "a flush resolved before its text landed");
                }
                Err(e) if e.kind() == PlaneErrorKind::Fenced => {
                    assert!(self.swept.is_some(), "a flush was fenced without a sweep: {e}");
                }
                // Rejected by the seal's outcome: decided once the seal's result is in.
                Err(_) if f.sealed && seal_failed.is_none() => {}
                Err(e) => assert!(
                    f.pending_high
                        || checkpoint_fault_in(&consumed, &f.faults)
                        || (f.sealed && seal_failed == Some(true)),
                    "a flush was rejected with no fault consumed while it waited ({:?} consumed at {:?}): {e}",
                    consumed,
                    f.faults
                ),
            }
        }

        // Seal honesty and compaction.
        if let Some(SealRecord { result: Some(result), close_faults_before, kind, .. }) = &self.seal {
            match result {
                // A drain after the fence stopped the stream finds nothing hosted to seal.
                Ok(()) if *kind == "drain" && self.swept.is_some() && !self.plane.is_hosted(ID) => {}
                Ok(()) => {
                    assert_eq!(&row.body, produced, "compaction writes exactly the produced text");
                    assert_eq!(row.seq, produced.len() as u64);
                    assert!(row.chunks.is_empty(), "compaction drops the chunk rows");
                    let status = row.status.as_deref().unwrap_or_default();
                    match *kind {
                        "close" if self.cancelled_here => assert_eq!(status, "cancelled"),
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
                Err(e) if e.kind() == PlaneErrorKind::Fenced => {
                    assert!(self.swept.is_some(), "a seal was fenced without a sweep: {e}");
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
            self.keep_up();
        }
        self.collect_finished().await;
        assert!(self.seal.as_ref().is_some_and(|s| s.result.is_some()), "the seal never finished");
        assert!(self.flushes.is_empty(), "a flush never settled");
        self.check().await;
        let durable = self.handle.durable_seq();
        for c in &mut self.clients {
            c.pump(&self.produced, None);
            assert!(c.conn.is_done(), "a connection never got its terminal: {:?}", c.conn.frames);
            if let Some(Frame::End { seq, .. }) = c.conn.terminal() {
                assert_eq!(*seq, durable, "end reports the plane's durable length");
            }
            // After a sweep, a client that kept up was sent to the store (`stale`, or the end
            // of a seal that landed before the sweep), and the store's text is consistent.
            if let (Some(swept), Some(Frame::Stale { .. })) = (&self.swept, c.conn.terminal()) {
                let store_text = swept.durable_text();
                assert!(self.produced.starts_with(&store_text), "the swept row is not a prefix of the produced text");
                assert_eq!(swept.seq, store_text.len() as u64, "the swept row's length column disagrees with its text");
                continue;
            }
            // Liveness: the plane answered a client that kept up with the whole stream.
            if !c.slow && c.hosted_at_join {
                assert_eq!(
                    c.text.core().stopped(),
                    Some(StopReason::End),
                    "a client that kept up did not stop on end (connection {}): {:?}",
                    c.connections,
                    c.conn.frames
                );
            }
        }
        self.check().await;
        if self.swept.is_some() {
            // The sweep found the row streaming, so no seal had landed, and none can land after
            // it: the seal was fenced (or failed on its injected faults first), and a fenced
            // producer answers `fenced` from then on.
            let seal = self.seal.as_ref().expect("a seal was requested");
            let expected = match seal.result.clone().expect("the seal finished") {
                // Nothing was produced: the swept row is exactly what the `interrupted` seal
                // writes, so the seal takes it for its own.
                Ok(()) if self.produced.is_empty() => PlaneErrorKind::StreamClosed,
                Ok(()) => {
                    assert_eq!(seal.kind, "drain", "a seal landed after the sweep");
                    PlaneErrorKind::Fenced
                }
                Err(e) if e.kind() == PlaneErrorKind::Fenced => PlaneErrorKind::Fenced,
                Err(_) => PlaneErrorKind::StreamClosed,
            };
            let e = self.handle.push("more").expect_err("a push after the seal");
            assert_eq!(e.kind(), expected);
        }
        // Every later close reports the same outcome as the first seal.
        // (A drain that came after the fence found nothing to seal; the stream's own outcome
        // is the fence.)
        let drained_after_fence = self.swept.is_some()
            && !self.produced.is_empty()
            && self.seal.as_ref().is_some_and(|s| s.kind == "drain" && matches!(s.result, Some(Ok(()))));
        let first = self.seal.as_ref().and_then(|s| s.result.as_ref()).map(|r| r.is_ok());
        for task in self.extra_closes.drain(..) {
            let again = task.await.expect("close task");
            if drained_after_fence {
                assert_eq!(again.map_err(|e| e.kind()), Err(PlaneErrorKind::Fenced));
            } else {
                assert_eq!(Some(again.is_ok()), first, "a second seal disagreed with the first");
            }
        }
        assert!(self.plane.is_hosted(ID) || self.cfg.linger_ms > 0);
    }
}

/// Run a schedule, checking every invariant after every step; returns whether each flush
/// resolved, in the order they settled.
fn run(cfg: Cfg, ops: Vec<Op>) -> Vec<bool> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    rt.block_on(async move {
        let mut world = World::new(cfg).await;
        for op in &ops {
            world.step(op).await;
            world.check().await;
        }
        world.finish().await;
        world.flushed.iter().map(|f| f.result.is_ok()).collect()
    })
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

fn push(s: &str, split_tail: bool) -> Op {
    Op::Push { units: s.encode_utf16().collect(), split_tail }
}

fn push_units(units: &[u16]) -> Op {
    Op::Push { units: units.to_vec(), split_tail: false }
}

/// A fixed schedule exercising every fault kind, so a regression shows without luck.
#[test]
fn a_hand_written_schedule_with_every_fault() {
    let cfg = Cfg { chars: 4, interval_ms: 100, retries: 1, max_queued_frames: 6, linger_ms: 1_000 };
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
        Op::Reconnect { who: 1, take: 1 },
        Op::Subscribe { at: JoinAt::Produced, slow: false },
        Op::Subscribe { at: JoinAt::Beyond(7), slow: false },
        Op::Inject { op: FaultOp::Append, fault: Fault::Delay(Duration::from_secs(5)), n: 1 },
        push("tail text that is long", false),
        Op::Cancel { here: false },
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

/// Unpaired surrogates at push boundaries and inside pushes, with slow readers that drop their
/// connections mid-queue and resume from their own resume points, and flushes on a healthy store.
#[test]
fn lone_surrogates_and_reconnects_on_a_healthy_store() {
    let cfg = Cfg { chars: 3, interval_ms: 50, retries: 0, max_queued_frames: 12, linger_ms: 500 };
    let ops = vec![
        Op::Subscribe { at: JoinAt::Zero, slow: true },
        Op::Subscribe { at: JoinAt::Zero, slow: false },
        // A lone low half opens the text; a lone high half ends a push and meets plain text.
        push_units(&[0xDC00, 0x61, 0xD800]),
        Op::Flush,
        push_units(&[0x62, 0xDBFF, 0x63]),
        Op::Flush,
        Op::Tick(60),
        Op::Reconnect { who: 0, take: 2 },
        // Lone halves inside a push, next to a real pair that must stay whole.
        push_units(&[0x78, 0xDFFF, 0xD83D, 0xDE00, 0xD800, 0x79]),
        Op::Subscribe { at: JoinAt::Durable, slow: true },
        Op::Flush,
        Op::Reconnect { who: 2, take: 1 },
        push_units(&[0xDC00]),
        Op::Tick(60),
        Op::Reconnect { who: 0, take: 0 },
        Op::Reconnect { who: 1, take: 3 },
        Op::Flush,
        Op::Close,
        Op::Reconnect { who: 0, take: 1 },
        Op::Tick(1_000),
        Op::Reconnect { who: 1, take: 0 },
    ];
    run(cfg, ops);
}

/// Two flushes that arrive after a failure, on a store that answers every request they wait
/// for: each gets an attempt of its own and resolves. One follows a lost acknowledgement whose
/// read-back failed (the store is ahead of the plane, so the next append is skipped by the
/// guard and confirms only part of its slice); the other arrives while a failed round is
/// still reading the store back.
#[test]
fn flushes_after_a_failure_get_an_attempt_of_their_own() {
    let cfg = Cfg { chars: 1, interval_ms: 10, retries: 0, max_queued_frames: 8, linger_ms: 200 };
    let ops = vec![
        Op::Inject { op: FaultOp::Append, fault: Fault::LoseAck, n: 1 },
        Op::Inject { op: FaultOp::Probe, fault: Fault::FailCommit, n: 1 },
        push("a", false),
        push("bcd", false),
        Op::Flush,
        Op::Inject { op: FaultOp::Append, fault: Fault::FailCommit, n: 1 },
        Op::Inject { op: FaultOp::Probe, fault: Fault::Delay(Duration::from_millis(50)), n: 1 },
        push("e", false),
        Op::Flush,
        Op::Tick(60),
    ];
    assert_eq!(run(cfg, ops), vec![true, true], "both flushes resolve");
}
