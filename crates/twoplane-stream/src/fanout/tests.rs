//! The fan-out as the hosted stream drives it: every concern's guarantees, checked through
//! [`FanOut`].

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Waker;

use twoplane_core::message::{encode_message_event_into, MessageFrame};

use super::direct::{Delivery, Due, DIRECT_MAX_OWED};
use super::log::TRIM_EVERY;
use super::shard::FanOut;
use super::wake::{Drained, Wakes};
use crate::sse::{SseEvents, SseSink};

/// The `open` of stream "s" at offset 0, as a writer's first frame.
fn open_s() -> Arc<MessageFrame> {
    Arc::new(MessageFrame::Open { stream_id: "s".into(), from: 0, seq: 0, durable_seq: 0, ended: false, parts: None })
}

fn chunk(i: u64) -> Arc<MessageFrame> {
    Arc::new(MessageFrame::chunk(i, 0, i, "x".into()).unwrap())
}

fn stale() -> MessageFrame {
    MessageFrame::Stale { floor_seq: 0, durable_seq: 0 }
}

fn take(fan: &mut FanOut, key: usize) -> Option<Arc<MessageFrame>> {
    let mut out = None;
    fan.drain(key, 1, &mut |f| out = Some(f), None);
    out
}

/// Publish chunk `i` for each `i` of `range`, the reader `fast` taking each as it comes.
fn publish_taken(fan: &mut FanOut, wake: &mut Wakes, range: std::ops::Range<u64>, fast: usize) {
    for i in range {
        fan.publish(chunk(i), stale, wake);
        assert_eq!(take(fan, fast).as_deref(), Some(&*chunk(i)));
    }
}

fn drain_all(
    fan: &mut FanOut,
    key: usize,
    max: usize,
    out: &mut Vec<Arc<MessageFrame>>,
    park: Option<&Waker>,
) -> Drained {
    fan.drain(key, max, &mut |f| out.push(f), park)
}

fn sse(frames: &[Arc<MessageFrame>]) -> Vec<u8> {
    let mut s = String::new();
    for f in frames {
        encode_message_event_into(&mut s, f);
    }
    s.into_bytes()
}

fn noop_waker() -> Waker {
    futures::task::noop_waker()
}

#[test]
fn slow_reader_is_dropped_with_stale_and_the_log_stays_bounded() {
    let mut fan = FanOut::new(8, 0);
    let mut wake = Wakes::default();
    let slow = fan.attach(VecDeque::new());
    let fast = fan.attach(VecDeque::new());
    for i in 0..100 {
        publish_taken(&mut fan, &mut wake, i..i + 1, fast);
        assert!(fan.log_len() <= 8);
    }
    // The slow reader got as far as the cap allowed, then its own stale.
    let mut got = Vec::new();
    while let Some(f) = take(&mut fan, slow) {
        got.push(f);
    }
    assert_eq!(got.len(), 1);
    assert!(matches!(*got[0], MessageFrame::Stale { .. }));
    assert!(fan.is_done(slow));
    assert!(!fan.is_done(fast));
}

#[test]
fn read_frames_are_released_without_waiting_for_the_cap() {
    let mut fan = FanOut::new(4096, 0);
    let mut wake = Wakes::default();
    let fast = fan.attach(VecDeque::new());
    let slow = fan.attach(VecDeque::new());
    publish_taken(&mut fan, &mut wake, 0..1000, fast);
    assert_eq!(fan.log_len(), 1000, "the slow reader has read nothing: everything is kept for it");
    for _ in 0..600 {
        take(&mut fan, slow);
    }
    // The next multiple of TRIM_EVERY (1,024 frames) releases what both have read.
    for i in 1000..1024 {
        fan.publish(chunk(i), stale, &mut wake);
        take(&mut fan, fast);
    }
    assert_eq!(fan.log_len(), 1024 - 600, "everything below the slow reader is released");
    // The slow reader still gets every frame after the trim, in order.
    for i in 600..1024 {
        assert_eq!(take(&mut fan, slow).as_deref(), Some(&*chunk(i)));
    }
    let _ = fan.detach(slow);
    for i in 1024..1200 {
        fan.publish(chunk(i), stale, &mut wake);
        take(&mut fan, fast);
    }
    assert!(fan.log_len() <= TRIM_EVERY as usize, "one reader that keeps up: kept {}", fan.log_len());
}

#[test]
fn replay_comes_first_and_terminal_ends_it() {
    let mut fan = FanOut::new(16, 0);
    let mut wake = Wakes::default();
    let open = open_s();
    let key = fan.attach(VecDeque::from(vec![open.clone()]));
    fan.publish(chunk(0), stale, &mut wake);
    let end = Arc::new(MessageFrame::End { seq: 1, status: twoplane_core::StreamStatus::Complete, error: None });
    fan.finish(end.clone(), &mut wake);
    assert_eq!(take(&mut fan, key), Some(open));
    assert_eq!(take(&mut fan, key), Some(chunk(0)));
    assert_eq!(take(&mut fan, key), Some(end));
    assert_eq!(take(&mut fan, key), None);
    assert!(fan.is_done(key));
}

#[test]
fn detach_of_the_last_reader_releases_the_log() {
    let mut fan = FanOut::new(16, 0);
    let mut wake = Wakes::default();
    let key = fan.attach(VecDeque::new());
    fan.publish(chunk(0), stale, &mut wake);
    assert!(fan.detach(key).is_none(), "no writer to wake");
    assert_eq!(fan.log_len(), 0);
    let again = fan.attach(VecDeque::new());
    assert_eq!(again, key, "slots are reused");
    assert_eq!(take(&mut fan, again), None);
}

#[test]
fn a_burst_wakes_a_parked_reader_once_and_one_drain_takes_it_all() {
    let mut fan = FanOut::new(64, 0);
    let key = fan.attach(VecDeque::new());
    let mut out = Vec::new();
    let parked = drain_all(&mut fan, key, 64, &mut out, Some(&noop_waker()));
    assert!(out.is_empty() && parked.parked && !parked.done);
    let before = parked.caught_up_at.expect("nothing was left behind");
    let mut wake = Wakes::default();
    for i in 0..10 {
        fan.publish(chunk(i), stale, &mut wake);
    }
    assert_eq!(wake.tasks.len(), 1, "ten pushes, one wake-up");
    assert_ne!(fan.changes().load(Ordering::Relaxed), before, "the counter moved");
    let d = drain_all(&mut fan, key, 64, &mut out, Some(&noop_waker()));
    assert_eq!(out.len(), 10);
    assert!(d.parked, "parked again after taking everything");
    assert_eq!(d.caught_up_at, Some(fan.changes().load(Ordering::Relaxed)));
    // A batch limit below what is owed says so: the counter alone cannot be trusted then.
    for i in 10..15 {
        fan.publish(chunk(i), stale, &mut wake);
    }
    out.clear();
    let d = drain_all(&mut fan, key, 2, &mut out, None);
    assert_eq!(out.len(), 2);
    assert_eq!(d.caught_up_at, None);
}

#[test]
fn sse_bytes_are_encoded_once_and_shared_and_a_span_is_one_write() {
    let mut fan = FanOut::new(64, 0);
    let open = open_s();
    let a = fan.attach(VecDeque::from(vec![open.clone()]));
    let b = fan.attach(VecDeque::new());
    let mut wake = Wakes::default();
    // Published before any SSE reader: encoded lazily by the first one, then kept.
    fan.publish(chunk(0), stale, &mut wake);
    let first = fan.drain_sse(a, 1 << 20, None);
    assert_eq!(first.frames, 2);
    assert_eq!(first.bytes.as_deref(), Some(&sse(&[open, chunk(0)])[..]));
    // `a` is an SSE reader now: later frames are encoded as they enter.
    fan.publish(chunk(1), stale, &mut wake);
    assert!(fan.log_sse().last().unwrap().is_some());
    let one = fan.drain_sse(a, 1 << 20, None);
    assert_eq!(one.frames, 1);
    let shared = fan.log_sse().last().unwrap().clone().unwrap();
    assert_eq!(one.bytes.as_ref().unwrap().as_ptr(), shared.as_ptr(), "one owed frame: the log's own bytes");
    // `b` owes both: one buffer holding both events, byte for byte.
    let span = fan.drain_sse(b, 1 << 20, None);
    assert_eq!(span.frames, 2);
    assert_eq!(span.bytes.as_deref(), Some(&sse(&[chunk(0), chunk(1)])[..]));
    // The byte limit splits a span, and says more is owed.
    for i in 2..6 {
        fan.publish(chunk(i), stale, &mut wake);
    }
    let part = fan.drain_sse(b, 1, None);
    assert_eq!(part.frames, 1);
    assert_eq!(part.state.caught_up_at, None);
    let rest = fan.drain_sse(b, 1 << 20, None);
    assert_eq!(rest.frames, 3);
    assert!(rest.state.caught_up_at.is_some());
}

#[test]
fn an_sse_reader_gets_its_stale_terminal_and_is_done() {
    let mut fan = FanOut::new(8, 0);
    let mut wake = Wakes::default();
    let slow = fan.attach(VecDeque::new());
    let fast = fan.attach(VecDeque::new());
    fan.drain_sse(slow, 1 << 20, None);
    for i in 0..20 {
        fan.publish(chunk(i), stale, &mut wake);
        fan.drain_sse(fast, 1 << 20, None);
    }
    let got = fan.drain_sse(slow, 1 << 20, None);
    assert_eq!(got.bytes.as_deref(), Some(&sse(&[Arc::new(stale())])[..]));
    assert!(got.state.done && !got.state.parked);
    let _ = fan.detach(slow);
    assert_eq!(fan.readers().1, 1, "the fast reader still reads SSE");
    let _ = fan.detach(fast);
    assert_eq!(fan.readers().1, 0);
}

/// A sink that records what it was handed and answers as told.
#[derive(Default)]
struct Recorder {
    got: std::sync::Mutex<Vec<SseEvents>>,
    hold: std::sync::atomic::AtomicBool,
}

impl SseSink for Recorder {
    fn deliver(&self, batch: &SseEvents) -> crate::Delivered {
        self.got.lock().unwrap().push(batch.clone());
        if self.hold.load(Ordering::Relaxed) {
            crate::Delivered::Held
        } else {
            crate::Delivered::Written
        }
    }
    fn resume(&self) {}
}

fn sink() -> (Arc<Recorder>, Arc<dyn SseSink>) {
    let rec = Arc::new(Recorder::default());
    let dynamic: Arc<dyn SseSink> = rec.clone();
    (rec, dynamic)
}

fn take_all(fan: &mut FanOut) -> (Vec<Delivery>, Due) {
    take_from(fan, 0, usize::MAX)
}

fn take_from(fan: &mut FanOut, writer: usize, group: usize) -> (Vec<Delivery>, Due) {
    let mut out = Vec::new();
    let due = fan.take_due(writer, group, &mut out);
    (out, due)
}

#[test]
fn a_direct_slot_is_handed_over_only_when_it_owes_nothing() {
    let mut fan = FanOut::new(64, 0);
    let open = open_s();
    let key = fan.attach(VecDeque::from(vec![open]));
    let (_, s) = sink();
    assert_eq!(fan.attach_sink(key, s.clone(), 1024, 1), None, "its replay is owed");
    fan.drain_sse(key, 1 << 20, None);
    let mut wake = Wakes::default();
    fan.publish(chunk(0), stale, &mut wake);
    assert_eq!(fan.attach_sink(key, s.clone(), 1024, 1), None, "a log frame is owed");
    fan.drain_sse(key, 1 << 20, None);
    assert_eq!(fan.attach_sink(key, s.clone(), 1024, 1), Some(0), "caught up: handed to its writer");
    assert_eq!(fan.attach_sink(key, s.clone(), 1024, 1), None, "already handed over");
    let other = fan.attach(VecDeque::new());
    assert_eq!(fan.attach_sink(other, s, 1024, 1), Some(0));
}

#[test]
fn pushes_wake_the_writer_once_and_it_delivers_each_span_in_order() {
    let mut fan = FanOut::new(64, 0);
    let (rec_a, a_sink) = sink();
    let (rec_b, b_sink) = sink();
    let a = fan.attach(VecDeque::new());
    let b = fan.attach(VecDeque::new());
    let task = fan.attach(VecDeque::new());
    fan.attach_sink(a, a_sink, 1 << 20, 1).unwrap();
    fan.attach_sink(b, b_sink, 1 << 20, 1).unwrap();
    fan.drain(task, 64, &mut |_| {}, Some(&noop_waker()));
    assert_eq!(take_all(&mut fan).1, Due::Idle, "nothing due: the writer waits");
    let mut wake = Wakes::default();
    for i in 0..3 {
        fan.publish(chunk(i), stale, &mut wake);
    }
    assert_eq!((wake.tasks.len(), wake.writers), (1, 0b1), "the writer and the one task-driven subscriber, once each");
    let (out, due) = take_all(&mut fan);
    assert_eq!(due, Due::Work);
    assert_eq!(out.len(), 2);
    for d in &out {
        let batch = d.batch.as_ref().unwrap();
        assert_eq!(batch.to_bytes(), sse(&[chunk(0), chunk(1), chunk(2)]));
        assert_eq!((batch.frames(), batch.terminal), (3, false));
        let shared: Vec<_> = fan.log_sse().iter().map(|sse| sse.as_ref().unwrap().as_ptr()).collect();
        let handed: Vec<_> = batch.events().map(|e| e.as_ptr()).collect();
        assert_eq!(handed, shared, "the log's own bytes, uncopied");
        d.sink.deliver(batch);
    }
    assert_eq!(rec_a.got.lock().unwrap().len(), 1);
    assert_eq!(rec_b.got.lock().unwrap().len(), 1);
    // Parked again: once the writer waits, the next push wakes it (alone: the task-driven
    // subscriber did not park again) and makes both due again.
    assert_eq!(take_all(&mut fan).1, Due::Idle);
    let mut wake = Wakes::default();
    fan.publish(chunk(3), stale, &mut wake);
    assert_eq!((wake.tasks.len(), wake.writers), (0, 0b1), "only the writer");
    let (out, _) = take_all(&mut fan);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].batch.as_ref().unwrap().to_bytes(), sse(&[chunk(3)]));
    // The end: delivered as a terminal batch.
    let end = Arc::new(MessageFrame::End { seq: 4, status: twoplane_core::StreamStatus::Complete, error: None });
    fan.finish(end.clone(), &mut Wakes::default());
    let (out, _) = take_all(&mut fan);
    assert_eq!(out.len(), 2);
    for d in &out {
        let batch = d.batch.as_ref().unwrap();
        assert!(batch.terminal);
        assert_eq!(batch.to_bytes(), sse(std::slice::from_ref(&end)));
        fan.detach_sink(d.key, &d.sink);
    }
    assert!(fan.is_done(a) && fan.is_done(b));
    let _ = fan.detach(a);
    let _ = fan.detach(b);
    assert_eq!(take_all(&mut fan).1, Due::Empty, "no sink left: the writer may stop");
    assert!(!fan.has_sinks(0));
}

#[test]
fn a_batch_limit_keeps_a_slot_due_and_overflow_delivers_its_stale() {
    let mut fan = FanOut::new(8, 0);
    let (_, s) = sink();
    let key = fan.attach(VecDeque::new());
    fan.attach_sink(key, s, 1, 1).unwrap();
    let mut wake = Wakes::default();
    fan.publish(chunk(0), stale, &mut wake);
    fan.publish(chunk(1), stale, &mut wake);
    let (out, due) = take_all(&mut fan);
    assert_eq!((out.len(), due), (1, Due::Work));
    assert_eq!(out[0].batch.as_ref().unwrap().frames(), 1, "one event per delivery at this limit");
    let (out, _) = take_all(&mut fan);
    assert_eq!(out[0].batch.as_ref().unwrap().to_bytes(), sse(&[chunk(1)]));
    assert_eq!(take_all(&mut fan).1, Due::Idle);
    // Never taken: the writer is busy elsewhere while the queue overflows.
    for i in 2..20 {
        fan.publish(chunk(i), stale, &mut wake);
    }
    let (out, _) = take_all(&mut fan);
    let batch = out[0].batch.as_ref().unwrap();
    assert!(batch.terminal, "the subscriber fell a whole queue behind");
    assert_eq!(batch.to_bytes(), sse(&[Arc::new(stale())]));
}

#[test]
fn the_last_sink_leaving_wakes_its_idle_writer() {
    let mut fan = FanOut::new(64, 0);
    let keys: Vec<usize> = (0..3).map(|_| fan.attach(VecDeque::new())).collect();
    for &key in &keys {
        let (_, s) = sink();
        fan.attach_sink(key, s, 1 << 20, 2).unwrap();
    }
    // Writer 0 has keys 0 and 2, writer 1 key 1; both wait.
    assert_eq!((take_from(&mut fan, 0, 4).1, take_from(&mut fan, 1, 4).1), (Due::Idle, Due::Idle));
    assert_eq!(fan.detach(keys[0]), None, "writer 0 still has a sink");
    assert_eq!(fan.detach(keys[1]), Some(1), "writer 1's last sink: it is woken to end");
    assert_eq!(fan.detach(keys[2]), Some(0), "writer 0's last sink");
    assert_eq!((take_from(&mut fan, 0, 4).1, take_from(&mut fan, 1, 4).1), (Due::Empty, Due::Empty));
}

#[test]
fn taking_a_sink_back_is_for_that_sink_only() {
    let mut fan = FanOut::new(64, 0);
    let (_, first) = sink();
    let (_, second) = sink();
    let key = fan.attach(VecDeque::new());
    fan.attach_sink(key, first.clone(), 64, 1).unwrap();
    let _ = fan.detach(key);
    let again = fan.attach(VecDeque::new());
    assert_eq!(again, key, "the key is reused");
    fan.attach_sink(again, second.clone(), 64, 1).unwrap();
    fan.detach_sink(again, &first);
    assert!(fan.has_sink(again), "a late hand-back of the old sink leaves the new one");
    fan.detach_sink(again, &second);
    assert!(!fan.has_sink(again));
    assert!(!fan.has_sinks(0));
}

#[test]
fn each_writer_delivers_its_own_share_a_group_at_a_time() {
    let mut fan = FanOut::new(64, 0);
    let keys: Vec<usize> = (0..10).map(|_| fan.attach(VecDeque::new())).collect();
    for &key in &keys {
        let (_, s) = sink();
        assert_eq!(fan.attach_sink(key, s, 1 << 20, 2), Some(key % 2), "the slot's writer");
    }
    assert_eq!((take_from(&mut fan, 0, 4).1, take_from(&mut fan, 1, 4).1), (Due::Idle, Due::Idle));
    let mut wake = Wakes::default();
    fan.publish(chunk(0), stale, &mut wake);
    fan.publish(chunk(1), stale, &mut wake);
    assert_eq!((wake.tasks.len(), wake.writers), (0, 0b11), "one wake-up per writer for two pushes");
    for writer in 0..2 {
        let mut seen = Vec::new();
        loop {
            let (out, due) = take_from(&mut fan, writer, 2);
            assert!(out.len() <= 2, "a group at a time");
            for d in &out {
                assert_eq!(d.key % 2, writer, "only its own share");
                assert_eq!(d.batch.as_ref().unwrap().to_bytes(), sse(&[chunk(0), chunk(1)]));
                seen.push(d.key);
            }
            if due == Due::Idle {
                break;
            }
        }
        seen.sort_unstable();
        let mine: Vec<usize> = keys.iter().copied().filter(|k| k % 2 == writer).collect();
        assert_eq!(seen, mine, "every one of its slots, once");
    }
}

#[test]
fn a_burst_is_handed_back_untaken() {
    let mut fan = FanOut::new(4096, 0);
    let (_, s) = sink();
    let key = fan.attach(VecDeque::new());
    fan.attach_sink(key, s.clone(), 1 << 20, 1).unwrap();
    let mut wake = Wakes::default();
    for i in 0..DIRECT_MAX_OWED {
        fan.publish(chunk(i), stale, &mut wake);
    }
    let (out, _) = take_all(&mut fan);
    assert_eq!(out[0].batch.as_ref().unwrap().frames(), DIRECT_MAX_OWED, "up to the limit: delivered");
    for i in 0..=DIRECT_MAX_OWED {
        fan.publish(chunk(100 + i), stale, &mut wake);
    }
    let (out, _) = take_all(&mut fan);
    assert_eq!(out.len(), 1);
    assert!(out[0].batch.is_none(), "over the limit: handed back with nothing taken");
    fan.detach_sink(key, &s);
    let mut got = Vec::new();
    fan.drain(key, usize::MAX, &mut |f| got.push(f), None);
    assert_eq!(got.len() as u64, DIRECT_MAX_OWED + 1, "its owner takes the whole burst");
    assert_eq!(got[0], chunk(100));
}
