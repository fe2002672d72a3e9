//! The ways of reading a hosted stream's subscription (`next`, `try_next`, `poll_sse`, and
//! direct delivery to a sink through `deliver_to`), mixed in any order, against a reference
//! subscriber of the same stream that reads with `next` only.
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
//! - Direct delivery: a hand-over is accepted only when nothing is owed; the sink's batches obey
//!   the same batch rules; a sink that keeps a batch gets no other and is resumed, and its owner
//!   writes what it kept before reading on; a terminal batch ends the hand-over; and the bytes delivered, kept and
//!   read join up to the reference's.
//! - Replays cut into pieces (joins at every offset of a text with lone surrogates and pairs
//!   split across pushes, read frame by frame, as SSE with a small batch limit, or mixed, on a
//!   live and on an ended stream): the chunks join up exactly from the join offset (no gap, no
//!   doubling: contract S) to the whole text, none of the replay's cuts falls inside a pair,
//!   each replay piece's event is at most the batch limit unless it is one character, and a
//!   replay that fits in one batch is exactly one chunk.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use proptest::prelude::*;
use twoplane_core::message::encode_message_event_into as encode_event_into;
use twoplane_stream::*;
// Every frame the plane hands out is a message frame (docs/contract.md §8).
use twoplane_stream::MessageFrame as Frame;

mod common;

const ID: &str = "m1";

#[derive(Clone, Debug)]
enum Op {
    Push(String),
    /// Many deltas at once (more than a handed-over subscriber is delivered directly).
    Burst(usize),
    Next,
    TryNext,
    Sse(usize),
    Yield,
    /// Hand over to a sink with this batch limit that keeps every `n`th batch (0: never).
    Hand(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => "[a-zé😀\n\"]{1,6}".prop_map(Op::Push),
        1 => (20usize..80).prop_map(Op::Burst),
        2 => Just(Op::Next),
        2 => Just(Op::TryNext),
        2 => (1usize..400).prop_map(Op::Sse),
        1 => Just(Op::Yield),
        2 => ((1usize..400), (0usize..4)).prop_map(|(max, hold)| Op::Hand(max, hold)),
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

/// Check a batch's shape: whole events only, at least one, and only the last may cross `max`.
fn check_batch(batch: &SseBatch, max: usize) {
    let events = batch.bytes.windows(2).filter(|w| w == b"\n\n").count() as u64;
    assert_eq!(events, batch.frames, "whole events only");
    assert!(batch.frames > 0 && batch.bytes.ends_with(b"\n\n"));
    if batch.frames > 1 {
        let last = batch.bytes[..batch.bytes.len() - 2].windows(2).rposition(|w| w == b"\n\n");
        let before_last = last.map_or(0, |i| i + 2);
        assert!(before_last < max, "the batch kept growing past the limit");
    }
}

/// A sink standing in for a connection: it records what it wrote and what it kept.
struct Recorder {
    max: usize,
    hold_every: usize,
    calls: AtomicUsize,
    written: Mutex<Vec<u8>>,
    kept: Mutex<Vec<u8>>,
    terminal: AtomicBool,
    resumed: AtomicBool,
}

impl Recorder {
    /// A sink with batch limit `max` that keeps every `hold_every`th batch (0: never).
    fn new(max: usize, hold_every: usize) -> Arc<Recorder> {
        Arc::new(Recorder {
            max,
            hold_every,
            calls: AtomicUsize::new(0),
            written: Mutex::new(Vec::new()),
            kept: Mutex::new(Vec::new()),
            terminal: AtomicBool::new(false),
            resumed: AtomicBool::new(false),
        })
    }
}

impl SseSink for Recorder {
    fn deliver(&self, events: &SseEvents) -> Delivered {
        assert!(!self.resumed.load(Ordering::SeqCst), "a delivery after resume");
        assert!(!self.terminal.load(Ordering::SeqCst), "a delivery after the terminal");
        let batch = SseBatch { bytes: events.to_bytes(), frames: events.frames(), terminal: events.terminal };
        assert_eq!(batch.bytes.len(), events.len());
        for event in events.events() {
            assert_eq!(event.windows(2).filter(|w| w == b"\n\n").count(), 1, "one whole event per part");
        }
        let batch = &batch;
        check_batch(batch, self.max);
        self.terminal.store(batch.terminal, Ordering::SeqCst);
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let mut kept = self.kept.lock().unwrap();
        // A sink that kept bytes is taken back at once: the writer would otherwise pile the
        // stream onto it, past the subscriber queue's bound.
        assert!(kept.is_empty(), "a delivery after the sink kept a batch");
        if self.hold_every > 0 && n.is_multiple_of(self.hold_every) {
            kept.extend_from_slice(&batch.bytes);
            Delivered::Held
        } else {
            self.written.lock().unwrap().extend_from_slice(&batch.bytes);
            Delivered::Written
        }
    }

    fn resume(&self) {
        assert!(!self.resumed.swap(true, Ordering::SeqCst), "resumed twice");
    }
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
    /// The sink it is handed to, until that sink is resumed.
    handed: Option<Arc<Recorder>>,
}

impl Mixed {
    fn took(&mut self, frame: Option<Arc<Frame>>) {
        if let Some(f) = frame {
            assert!(!self.ended, "a frame after the terminal: {f:?}");
            encode(&mut self.bytes, &f);
            self.ended = f.is_terminal();
        }
    }

    /// Whether the subscription is still handed over; after a resume, what the sink wrote and
    /// kept joins the reader's bytes, in that order.
    fn still_handed(&mut self) -> bool {
        let Some(sink) = &self.handed else { return false };
        if !sink.resumed.load(Ordering::SeqCst) {
            return true;
        }
        self.bytes.extend_from_slice(&sink.written.lock().unwrap());
        self.bytes.extend_from_slice(&sink.kept.lock().unwrap());
        self.ended |= sink.terminal.load(Ordering::SeqCst);
        self.handed = None;
        false
    }

    fn hand(&mut self, max: usize, hold_every: usize) {
        if self.still_handed() {
            return;
        }
        let sink = Recorder::new(max, hold_every);
        if self.sub.deliver_to(sink.clone(), max) {
            assert!(!self.ended, "a hand-over after the terminal");
            self.waiting_since = None;
            self.handed = Some(sink);
        } else if !self.ended {
            // Refused: only because something is owed.
            let owed = self.sub.try_next();
            assert!(owed.is_some(), "a hand-over refused while nothing was owed");
            self.took(owed);
        }
    }

    fn read(&mut self, op: &Op) {
        if self.still_handed() {
            return;
        }
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
                    check_batch(&batch, *max);
                    self.bytes.extend_from_slice(&batch.bytes);
                    self.ended = batch.terminal;
                }
                Poll::Ready(None) => assert!(self.ended, "None before the terminal"),
                Poll::Pending => self.waiting_since = Some(self.count.0.load(Ordering::SeqCst)),
            },
            Op::Push(_) | Op::Burst(_) | Op::Yield | Op::Hand(..) => unreachable!(),
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
        handed: None,
    };
    for op in &ops {
        match op {
            Op::Push(text) => {
                handle.push(text).unwrap();
                if let Some(since) = mixed.waiting_since.take() {
                    assert!(mixed.count.0.load(Ordering::SeqCst) > since, "a waiting read was not woken by a push");
                }
            }
            Op::Burst(n) => {
                for i in 0..*n {
                    handle.push(&format!("b{i}")).unwrap();
                }
                mixed.waiting_since = None;
            }
            Op::Yield => {
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                }
            }
            Op::Hand(max, hold_every) => mixed.hand(*max, *hold_every),
            read => mixed.read(read),
        }
    }
    handle.close().await.unwrap();
    // Drain both to the end.
    let mut expected = Vec::new();
    while let Some(f) = reference.next().await {
        encode(&mut expected, &f);
    }
    // A deadline, not a count of yields: on a loaded machine the writer's worker thread may not
    // run for many yields of this one (a count of 10,000 failed that way under load).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !mixed.ended {
        if mixed.still_handed() {
            // The writer task delivers the rest (the terminal ends the hand-over).
            tokio::task::yield_now().await;
        } else {
            mixed.read(&Op::Sse(1 << 16));
        }
        assert!(std::time::Instant::now() < deadline, "the mixed reader never reached the terminal");
    }
    for read in [Op::Next, Op::TryNext, Op::Sse(1)] {
        mixed.read(&read);
    }
    assert_eq!(String::from_utf8_lossy(&mixed.bytes), String::from_utf8_lossy(&expected));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_way_of_reading_sees_the_same_events(ops in proptest::collection::vec(op(), 0..120), threads in 0usize..3) {
        // On two workers the stream has two writer tasks, running beside the test.
        let rt = match threads {
            0 => tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
            n => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build().unwrap(),
        };
        rt.block_on(run(ops));
    }
}

/// Subscribe, take the replay as SSE, and hand the subscription to a new writing sink.
async fn handed_over(plane: &Plane) -> (Subscription, Arc<Recorder>) {
    let mut sub = plane.subscribe(&(), ID, 0).await.unwrap();
    let waker = Waker::from(Arc::new(Count::default()));
    let mut cx = Context::from_waker(&waker);
    while let Poll::Ready(Some(_)) = sub.poll_sse(&mut cx, 1 << 16) {}
    // Writes everything, never keeps a batch.
    let sink = Recorder::new(1 << 16, 0);
    assert!(sub.deliver_to(sink.clone(), 1 << 16), "caught up: handed over");
    (sub, sink)
}

/// Wait (bounded) until every sink has written `events` events.
async fn written(sinks: &[Arc<Recorder>], events: usize) {
    for _ in 0..10_000 {
        let done =
            sinks.iter().all(|s| s.written.lock().unwrap().windows(2).filter(|w| w == b"\n\n").count() >= events);
        if done {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("a handed-over subscriber did not get its {events} events");
}

/// Alive tasks of the runtime, waited for (bounded) to come down to `want`.
async fn tasks_settle_at(want: usize) -> usize {
    let metrics = tokio::runtime::Handle::current().metrics();
    for _ in 0..10_000 {
        if metrics.num_alive_tasks() == want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    metrics.num_alive_tasks()
}

/// Direct delivery over a stream's fan-out shards: subscribers handed over in every shard, one
/// at a time while the writers run, each get every event, also when a writer's share is more
/// than one group; once the last of them leaves, the writer tasks end (none lingers, holding the
/// stream); a later hand-over starts them again.
#[test]
fn writers_serve_every_shard_stop_when_the_last_sink_leaves_and_start_again() {
    for threads in [0usize, 2] {
        let rt = match threads {
            0 => tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
            n => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build().unwrap(),
        };
        rt.block_on(async {
            let store = Arc::new(MemoryTarget::new());
            store.insert_message(ID);
            let plane = Plane::new(PlaneOptions::default().with_authorizer(Arc::new(AllowAll)), store).unwrap();
            let handle = plane.open(ID).await.unwrap();
            let before = tokio::runtime::Handle::current().metrics().num_alive_tasks();
            // 150 subscribers: every shard gets 18 or 19, and each writer more than one group
            // (64 subscribers) per push, so a pass ends part-way through a shard.
            let mut subs = Vec::new();
            for _ in 0..150 {
                subs.push(handed_over(&plane).await);
            }
            handle.push("a").unwrap();
            let sinks: Vec<_> = subs.iter().map(|(_, s)| s.clone()).collect();
            written(&sinks, 1).await;
            // Half leave; the others still get everything.
            subs.truncate(75);
            handle.push("b").unwrap();
            let sinks: Vec<_> = subs.iter().map(|(_, s)| s.clone()).collect();
            written(&sinks, 2).await;
            // Everyone leaves: the writers end.
            drop(subs);
            drop(sinks);
            assert_eq!(tasks_settle_at(before).await, before, "threads {threads}: a writer task outlived its sinks");
            // A new hand-over (in the next shard round robin) starts a writer again.
            let (sub, sink) = handed_over(&plane).await;
            handle.push("c").unwrap();
            written(std::slice::from_ref(&sink), 1).await;
            assert!(String::from_utf8_lossy(&sink.written.lock().unwrap()).contains("\"c\""));
            drop(sub);
            assert_eq!(
                tasks_settle_at(before).await,
                before,
                "threads {threads}: the restarted writer outlived its sink"
            );
            handle.close().await.unwrap();
        });
    }
}

/// How a replay reader reads: frame by frame, SSE batches of at most `max` bytes, or both.
#[derive(Clone, Copy, Debug)]
enum ReadBy {
    Frames,
    Sse(usize),
    Mixed(usize),
}

/// A delta as UTF-16 with the units that make cuts hard: astral pairs, lone surrogates of both
/// halves, escapes and multi-byte characters.
fn hard_units() -> impl Strategy<Value = Vec<u16>> {
    let piece = prop_oneof![
        4 => "[a-z \"\\\\\n]{1,8}".prop_map(|s| s.encode_utf16().collect::<Vec<u16>>()),
        2 => prop::sample::select(vec!["😀", "é", "漢", "\u{10FFFF}", "\u{1}"]).prop_map(|s| s.encode_utf16().collect()),
        1 => prop::sample::select(vec![0xD800u16, 0xDBFF, 0xDC00, 0xDFFF]).prop_map(|u| vec![u]),
    ];
    prop::collection::vec(piece, 1..8).prop_map(|v| v.concat())
}

/// Split a text into pushes, some of them between the halves of a pair.
fn pushes_of(text: &[u16], cuts: &[usize]) -> Vec<Vec<u16>> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
    at.push(text.len());
    at.sort_unstable();
    at.dedup();
    let mut out = Vec::new();
    let mut from = 0;
    for to in at {
        if to > from {
            out.push(text[from..to].to_vec());
            from = to;
        }
    }
    out
}

fn event_len(frame: &Frame) -> usize {
    let mut s = String::new();
    encode_event_into(&mut s, frame);
    s.len()
}

/// Every frame a subscription gives until its terminal, read `by`.
fn read_all(sub: &mut Subscription, by: ReadBy) -> Vec<(Arc<Frame>, Option<usize>)> {
    let waker = Waker::from(Arc::new(Count::default()));
    let mut cx = Context::from_waker(&waker);
    let mut out = Vec::new();
    let mut decoder = twoplane_core::SseDecoder::new();
    for turn in 0..100_000usize {
        let sse = match by {
            ReadBy::Frames => None,
            ReadBy::Sse(max) => Some(max),
            ReadBy::Mixed(max) => (turn % 2 == 0).then_some(max),
        };
        match sse {
            None => match sub.poll_frame(&mut cx) {
                Poll::Ready(Some(f)) => out.push((f, None)),
                Poll::Ready(None) => break,
                Poll::Pending => panic!("a closed stream's subscription waits"),
            },
            Some(max) => match sub.poll_sse(&mut cx, max) {
                Poll::Ready(Some(batch)) => {
                    check_batch(&batch, max);
                    let mut events = Vec::new();
                    decoder.feed(&batch.bytes, &mut events);
                    assert_eq!(events.len() as u64, batch.frames);
                    for e in events {
                        let f = twoplane_core::message::decode_message_frame(&e.data)
                            .expect("a frame the codec reads back");
                        out.push((Arc::new(f), Some(max)));
                    }
                }
                Poll::Ready(None) => break,
                Poll::Pending => panic!("a closed stream's subscription waits"),
            },
        }
        if out.last().is_some_and(|(f, _)| f.is_terminal()) {
            // Nothing after the terminal, whichever way it is asked.
            assert!(sub.try_next().is_none());
            break;
        }
    }
    out
}

/// Check one join at `at` of a stream whose text was `joined` when it joined and `produced` in
/// the end (see the module header).
fn check_replay(frames: &[(Arc<Frame>, Option<usize>)], by: ReadBy, at: usize, joined: &[u16], produced: &[u16]) {
    let Some((first, _)) = frames.first() else { panic!("no frame at all") };
    let Frame::Open { from, seq, .. } = **first else { panic!("not an open: {first:?}") };
    let start = at.min(joined.len());
    assert_eq!((from, seq), (start as u64, joined.len() as u64));
    let mut acc = produced[..start].to_vec();
    let mut replay_chunks = 0;
    for (f, max) in &frames[1..] {
        let Frame::Chunk { from, seq, text, .. } = &**f else { continue };
        assert_eq!(*from as usize, acc.len(), "contract S: a chunk from {from} after {} units", acc.len());
        acc.extend_from_slice(text.units());
        assert_eq!(&acc[..], &produced[..acc.len()], "a chunk's text is not the produced text");
        if (*seq as usize) <= joined.len() {
            replay_chunks += 1;
            if (*seq as usize) < joined.len() {
                assert!(!common::inside_pair(joined, *seq as usize), "a replay cut inside a pair at {seq}");
            }
            let limit = max.unwrap_or(32 * 1024);
            let one_char =
                text.len() == 1 || (text.len() == 2 && twoplane_core::text::is_high_surrogate(text.units()[0]));
            assert!(event_len(f) <= limit || one_char, "a replay piece of {} bytes over {limit}", event_len(f));
        }
    }
    assert_eq!(acc, produced, "the reader ends with the whole text");
    let whole = Frame::chunk(start as u64, 0, start as u64, twoplane_core::Text::from_slice(&joined[start..])).unwrap();
    let limit = match by {
        ReadBy::Frames => Some(32 * 1024),
        ReadBy::Sse(max) => Some(max),
        ReadBy::Mixed(_) => None,
    };
    if let Some(limit) = limit.filter(|&l| start < joined.len() && event_len(&whole) <= l) {
        assert_eq!(replay_chunks, 1, "a replay that fits in one batch ({} <= {limit}) is one chunk", event_len(&whole));
    }
}

async fn replays(text: Vec<u16>, cuts: Vec<usize>, later: Vec<u16>, max: usize, ended: bool) {
    let store = Arc::new(MemoryTarget::new());
    store.insert_message(ID);
    let plane = Plane::new(PlaneOptions::default().with_authorizer(Arc::new(AllowAll)), store).unwrap();
    let handle = plane.open(ID).await.unwrap();
    for push in pushes_of(&text, &cuts) {
        handle.push_units(&push).unwrap();
    }
    if ended {
        handle.close().await.unwrap();
    }
    let ways = [ReadBy::Frames, ReadBy::Sse(max), ReadBy::Mixed(max)];
    let mut subs = Vec::new();
    for at in 0..=text.len() + 1 {
        subs.push((at, plane.subscribe(&(), ID, at as u64).await.unwrap(), ways[at % ways.len()]));
    }
    let mut produced = text.clone();
    if !ended {
        if !later.is_empty() {
            handle.push_units(&later).unwrap();
            produced.extend_from_slice(&later);
        }
        handle.close().await.unwrap();
    }
    for (at, mut sub, by) in subs {
        let frames = read_all(&mut sub, by);
        check_replay(&frames, by, at, &text, &produced);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    #[test]
    fn a_replay_in_pieces_joins_up_at_every_offset(
        text in prop::collection::vec(hard_units(), 1..10).prop_map(|v| v.concat()),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        later in prop::collection::vec(hard_units(), 0..2).prop_map(|v| v.concat()),
        max in prop_oneof![1usize..120, 120usize..400, Just(1 << 16)],
        ended in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(replays(text, cuts, later, max, ended));
    }
}

/// A long text (more than one block of the stream's text, with a pair across every kind of
/// boundary) joined at offset 0 and read with the default batch: pieces of at most the batch,
/// joining up to the whole text.
#[test]
fn a_long_replay_is_pieces_of_at_most_the_batch() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut text: Vec<u16> = Vec::new();
        while text.len() < 100_000 {
            text.extend("abc😀é\n".encode_utf16());
            text.push(0xD800);
        }
        let store = Arc::new(MemoryTarget::new());
        store.insert_message(ID);
        let plane = Plane::new(PlaneOptions::default().with_authorizer(Arc::new(AllowAll)), store).unwrap();
        let handle = plane.open(ID).await.unwrap();
        handle.push_units(&text).unwrap();
        let mut sub = plane.subscribe(&(), ID, 0).await.unwrap();
        handle.close().await.unwrap();
        let frames = read_all(&mut sub, ReadBy::Sse(32 * 1024));
        let chunks = frames.iter().filter(|(f, _)| matches!(**f, Frame::Chunk { .. })).count();
        assert!(chunks >= 4, "{chunks} pieces for {} units", text.len());
        check_replay(&frames, ReadBy::Sse(32 * 1024), 0, &text, &text);
    });
}
