//! One stream's frame log and its subscribers' cursors.
//!
//! Each produced frame is stored once, as an `Arc<Frame>`, in a log shared by every subscriber;
//! a subscriber is a small slot holding a cursor into that log, the few frames of its own join
//! replay, and a waker. Delivering a frame to a subscriber is an `Arc` clone.
//!
//! Guarantees:
//! - Bounded: a subscriber whose queue (replay frames plus log frames behind its cursor) has
//!   reached the cap when a new frame arrives is dropped with one `stale` frame, its queue is
//!   released at once, and the log never holds more than the cap (plus the replay allowance)
//!   frames behind the slowest live subscriber. The producer never waits for a reader.
//! - Ordered and gap-free: a subscriber sees its replay, then every log frame from the moment it
//!   attached, in order, then nothing after its terminal frame.
//! - Terminal frames (`end`) bypass the cap: they are the last thing a subscriber gets.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use twoplane_core::Frame;

/// At most this many replay frames precede the log for a live stream (open, chunk, durable).
const REPLAY_ALLOWANCE: usize = 3;

struct Slot {
    /// Absolute index of the next log frame to deliver.
    cursor: u64,
    /// The join replay, delivered before the log.
    replay: VecDeque<Arc<Frame>>,
    /// A terminal of this subscriber's own (the overflow `stale`).
    terminal: Option<Arc<Frame>>,
    /// Reads no more log frames (saw a terminal, or overflowed).
    finished: bool,
    waker: Option<Waker>,
    /// Its key is in `parked` (so it is listed once).
    parked: bool,
}

pub(crate) struct FanOut {
    log: VecDeque<Arc<Frame>>,
    /// Absolute index of `log[0]`.
    base: u64,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Slots still reading the log.
    active: usize,
    /// Keys of slots waiting for a frame.
    parked: Vec<usize>,
    cap: usize,
}

impl FanOut {
    pub fn new(cap: usize) -> Self {
        FanOut {
            log: VecDeque::new(),
            base: 0,
            slots: Vec::new(),
            free: Vec::new(),
            active: 0,
            parked: Vec::new(),
            cap,
        }
    }

    fn head(&self) -> u64 {
        self.base + self.log.len() as u64
    }

    /// Whether any subscriber would receive a new frame (producers skip building frames
    /// nobody reads).
    pub fn has_readers(&self) -> bool {
        self.active > 0
    }

    /// Register a live subscriber after its replay; it reads every frame published from now on.
    pub fn attach(&mut self, replay: VecDeque<Arc<Frame>>) -> usize {
        let slot = Slot { cursor: self.head(), replay, terminal: None, finished: false, waker: None, parked: false };
        self.active += 1;
        match self.free.pop() {
            Some(key) => {
                self.slots[key] = Some(slot);
                key
            }
            None => {
                self.slots.push(Some(slot));
                self.slots.len() - 1
            }
        }
    }

    pub fn detach(&mut self, key: usize) {
        let Some(entry) = self.slots.get_mut(key) else { return };
        if let Some(slot) = entry.take() {
            if !slot.finished {
                self.active -= 1;
            }
            self.free.push(key);
        }
        if self.active == 0 {
            // Nobody reads the log any more: release it now rather than at the next overflow scan.
            self.base = self.head();
            self.log.clear();
        }
    }

    /// Append a frame for every live subscriber. Subscribers at the cap are dropped with the
    /// frame `stale()` builds. Wakers to call (after the caller releases its lock) are pushed
    /// onto `wake`.
    pub fn publish(&mut self, frame: Arc<Frame>, stale: impl Fn() -> Frame, wake: &mut Vec<Waker>) {
        if self.active == 0 {
            return;
        }
        if self.log.len() + REPLAY_ALLOWANCE >= self.cap {
            self.reclaim(&stale, wake);
            if self.active == 0 {
                return;
            }
        }
        self.log.push_back(frame);
        self.wake_parked(wake);
    }

    /// Append the terminal frame, bypassing the cap.
    pub fn finish(&mut self, end: Arc<Frame>, wake: &mut Vec<Waker>) {
        if self.active == 0 {
            return;
        }
        self.log.push_back(end);
        self.wake_parked(wake);
    }

    fn wake_parked(&mut self, wake: &mut Vec<Waker>) {
        for key in self.parked.drain(..) {
            if let Some(Some(slot)) = self.slots.get_mut(key) {
                slot.parked = false;
                if let Some(w) = slot.waker.take() {
                    wake.push(w);
                }
            }
        }
    }

    /// Drop every subscriber at the cap, then release the log below the slowest survivor.
    fn reclaim(&mut self, stale: &impl Fn() -> Frame, wake: &mut Vec<Waker>) {
        let head = self.head();
        let mut min = head;
        let mut stale_frame: Option<Arc<Frame>> = None;
        for slot in self.slots.iter_mut().flatten() {
            if slot.finished {
                continue;
            }
            let queued = slot.replay.len() as u64 + (head - slot.cursor);
            if queued >= self.cap as u64 {
                slot.replay = VecDeque::new();
                slot.terminal = Some(stale_frame.get_or_insert_with(|| Arc::new(stale())).clone());
                slot.finished = true;
                self.active -= 1;
                if let Some(w) = slot.waker.take() {
                    wake.push(w);
                }
            } else {
                min = min.min(slot.cursor);
            }
        }
        let drop_n = (min - self.base) as usize;
        self.log.drain(..drop_n);
        self.base = min;
    }

    /// The next frame for `key` without waiting.
    pub fn take(&mut self, key: usize) -> Option<Arc<Frame>> {
        let head = self.head();
        let base = self.base;
        let slot = self.slots.get_mut(key)?.as_mut()?;
        if let Some(f) = slot.replay.pop_front() {
            return Some(f);
        }
        if let Some(t) = slot.terminal.take() {
            return Some(t);
        }
        if slot.finished || slot.cursor >= head {
            return None;
        }
        let frame = self.log[(slot.cursor - base) as usize].clone();
        slot.cursor += 1;
        if frame.is_terminal() {
            slot.finished = true;
            self.active -= 1;
        }
        Some(frame)
    }

    /// Whether `key` will never yield another frame.
    pub fn is_done(&self, key: usize) -> bool {
        match self.slots.get(key).and_then(|s| s.as_ref()) {
            None => true,
            Some(slot) => slot.finished && slot.replay.is_empty() && slot.terminal.is_none(),
        }
    }

    pub fn poll(&mut self, key: usize, cx: &mut Context<'_>) -> Poll<Option<Arc<Frame>>> {
        if let Some(f) = self.take(key) {
            return Poll::Ready(Some(f));
        }
        if self.is_done(key) {
            return Poll::Ready(None);
        }
        let Some(Some(slot)) = self.slots.get_mut(key) else { return Poll::Ready(None) };
        match &slot.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => slot.waker = Some(cx.waker().clone()),
        }
        if !slot.parked {
            slot.parked = true;
            self.parked.push(key);
        }
        Poll::Pending
    }

    #[cfg(test)]
    pub fn log_len(&self) -> usize {
        self.log.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(i: u64) -> Arc<Frame> {
        Arc::new(Frame::chunk(i, "x".into()).unwrap())
    }

    fn stale() -> Frame {
        Frame::Stale { floor_seq: 0, durable_seq: 0 }
    }

    #[test]
    fn slow_reader_is_dropped_with_stale_and_the_log_stays_bounded() {
        let mut fan = FanOut::new(8);
        let mut wake = Vec::new();
        let slow = fan.attach(VecDeque::new());
        let fast = fan.attach(VecDeque::new());
        for i in 0..100 {
            fan.publish(chunk(i), stale, &mut wake);
            assert_eq!(fan.take(fast).as_deref(), Some(&*chunk(i)));
            assert!(fan.log_len() <= 8);
        }
        // The slow reader got as far as the cap allowed, then its own stale.
        let mut got = Vec::new();
        while let Some(f) = fan.take(slow) {
            got.push(f);
        }
        assert_eq!(got.len(), 1);
        assert!(matches!(*got[0], Frame::Stale { .. }));
        assert!(fan.is_done(slow));
        assert!(!fan.is_done(fast));
    }

    #[test]
    fn replay_comes_first_and_terminal_ends_it() {
        let mut fan = FanOut::new(16);
        let mut wake = Vec::new();
        let open = Arc::new(Frame::Open { stream_id: "s".into(), from: 0, seq: 0, durable_seq: 0, ended: false });
        let key = fan.attach(VecDeque::from(vec![open.clone()]));
        fan.publish(chunk(0), stale, &mut wake);
        let end = Arc::new(Frame::End { seq: 1, status: twoplane_core::StreamStatus::Complete, error: None });
        fan.finish(end.clone(), &mut wake);
        assert_eq!(fan.take(key), Some(open));
        assert_eq!(fan.take(key), Some(chunk(0)));
        assert_eq!(fan.take(key), Some(end));
        assert_eq!(fan.take(key), None);
        assert!(fan.is_done(key));
    }

    #[test]
    fn detach_of_the_last_reader_releases_the_log() {
        let mut fan = FanOut::new(16);
        let mut wake = Vec::new();
        let key = fan.attach(VecDeque::new());
        fan.publish(chunk(0), stale, &mut wake);
        fan.detach(key);
        assert_eq!(fan.log_len(), 0);
        let again = fan.attach(VecDeque::new());
        assert_eq!(again, key, "slots are reused");
        assert_eq!(fan.take(again), None);
    }
}
