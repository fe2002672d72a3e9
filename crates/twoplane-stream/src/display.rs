//! Display-rate delivery: a stream writes to its readers at most once per write interval
//! (`PlaneOptions::write_interval_ms`; docs/server.md, "Display-rate writes").
//!
//! A model that produces 200 deltas a second to a page that paints 60 times a second costs each
//! reader 200 socket writes a second, and the kernel's write is most of a server's cost. Here a
//! frame that would reach the readers within the interval of the previous publish is held, and
//! the frames held meanwhile go out together at the end of that interval: merged by the core's
//! rule (`twoplane_core::message::push_merged`, docs/contract.md §5 "Merged writes"), encoded
//! once, and taken by each reader in one write.
//!
//! Two users, one rule: a hosted stream keeps one [`Display`] for all its readers (under its
//! lock, `hosted/produce.rs`), and the relay leg of a reader of a stream hosted elsewhere keeps
//! one for that reader (`relay_leg.rs`), so a reader on another instance is written at the same
//! rate as one on the host.
//!
//! Guarantees:
//! - The first frame after a quiet interval is published at once, so a slow model sees no added
//!   latency, and frames further apart than the interval are published exactly as without it.
//! - A `durable` frame waits for the readers' next write (it goes out in front of the next delta,
//!   in the same write) or at most a wait the caller gives (the checkpoint interval), whichever
//!   comes first, and never starts an interval: a delta right after one does not wait for it.
//! - Nothing is reordered or dropped: held frames are published in order, merged only where the
//!   contract says the result reads the same, and anything that must see the stream's frames in
//!   order (a join, a terminal frame) publishes what is held first ([`Display::take`]).
//! - A held delta is flushed at most one interval after the publish it follows, whatever a
//!   `durable` frame armed before it.

use std::time::Duration;

use tokio::time::Instant;
use twoplane_core::message::{push_merged, MessageFrame};

/// The held frames and when the readers were last written to.
#[derive(Default)]
pub(crate) struct Display {
    held: Vec<MessageFrame>,
    last: Option<Instant>,
    /// The earliest flush scheduled (a deadline handed out by [`Display::offer`]), until it fires.
    armed: Option<Instant>,
}

/// What [`Display::offer`] decided for a frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Publish it now (after whatever [`Display::take`] returns, when `flush` says so).
    Now { flush: bool },
    /// Held; when `arm` is set, a flush must be scheduled for that moment (earlier than any
    /// scheduled before it; a later one that fires early finds less held, or nothing).
    Held { arm: Option<Instant> },
}

impl Display {
    /// Decide for `frame`, arriving at `now`, under an interval of `interval` (not zero). A
    /// `durable` frame waits for the readers' next write, or `durable_wait` at most.
    pub fn offer(&mut self, frame: &MessageFrame, interval: Duration, durable_wait: Duration, now: Instant) -> Offer {
        if matches!(frame, MessageFrame::Durable { .. }) {
            // It carries no text, and the package's reader does nothing with it: a write of its
            // own per checkpoint and reader (at model rates, one for every few deltas) buys a
            // reader nothing that riding along with its next delta does not.
            push_merged(&mut self.held, frame);
            return self.arm(now + durable_wait);
        }
        let due = self.last.map(|last| last + interval);
        if due.is_none_or(|due| now >= due) {
            // Quiet for an interval (or a late flush): out now, with anything held before it.
            self.last = Some(now);
            return Offer::Now { flush: !self.held.is_empty() };
        }
        push_merged(&mut self.held, frame);
        self.arm(due.unwrap_or(now))
    }

    /// Hold until `at`: a flush to schedule when none as early is.
    fn arm(&mut self, at: Instant) -> Offer {
        if self.armed.is_some_and(|armed| armed <= at) {
            return Offer::Held { arm: None };
        }
        self.armed = Some(at);
        Offer::Held { arm: Some(at) }
    }

    /// The held frames, in order, for the caller to publish now (at `now`, the write they make).
    pub fn take(&mut self, now: Instant) -> Vec<MessageFrame> {
        // Only content starts the next interval: a flush of `durable` frames alone would hold
        // the next delta for an interval after it.
        if self.held.iter().any(|f| !matches!(f, MessageFrame::Durable { .. })) {
            self.last = Some(now);
        }
        std::mem::take(&mut self.held)
    }

    /// A scheduled flush ran: whatever it finds held is [`Display::take`]n by the caller.
    pub fn fired(&mut self) {
        self.armed = None;
    }

    /// Whether frames are held.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// How many frames are held (after merging): a holder bounds it, since frames that do not
    /// merge (part starts, events) pile up inside an interval as they come.
    pub fn held_len(&self) -> usize {
        self.held.len()
    }
}

/// The earlier of two optional deadlines (a holder keeps the earliest flush it was asked for).
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS16: Duration = Duration::from_millis(16);
    const WAIT: Duration = Duration::from_millis(750);

    fn chunk(from: u64, text: &str) -> MessageFrame {
        MessageFrame::chunk(from, 0, from, text.into()).unwrap()
    }

    #[test]
    fn the_first_frame_after_quiet_goes_out_and_the_rest_wait_merged() {
        let t0 = Instant::now();
        let mut d = Display::default();
        assert_eq!(d.offer(&chunk(0, "a"), MS16, WAIT, t0), Offer::Now { flush: false });
        assert_eq!(
            d.offer(&chunk(1, "b"), MS16, WAIT, t0 + Duration::from_millis(2)),
            Offer::Held { arm: Some(t0 + MS16) }
        );
        assert_eq!(d.offer(&chunk(2, "c"), MS16, WAIT, t0 + Duration::from_millis(5)), Offer::Held { arm: None });
        d.fired();
        assert_eq!(d.take(t0 + MS16), vec![chunk(1, "bc")]);
        // The flush counts as a write: the next frame within an interval of it waits again.
        assert_eq!(
            d.offer(&chunk(3, "d"), MS16, WAIT, t0 + MS16 + Duration::from_millis(1)),
            Offer::Held { arm: Some(t0 + MS16 + MS16) }
        );
    }

    #[test]
    fn a_durable_frame_rides_with_the_next_write_and_never_holds_a_delta() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut d = Display::default();
        assert_eq!(d.offer(&MessageFrame::Durable { seq: 1 }, MS16, WAIT, t0), Offer::Held { arm: Some(t0 + WAIT) });
        // The next delta takes it along, in front of itself: one write.
        assert_eq!(d.offer(&chunk(1, "b"), MS16, WAIT, t0 + ms(3)), Offer::Now { flush: true });
        assert_eq!(d.take(t0 + ms(3)), vec![MessageFrame::Durable { seq: 1 }]);
        // A durable while a flush is already due sooner asks for no flush of its own.
        assert_eq!(d.offer(&MessageFrame::Durable { seq: 2 }, MS16, WAIT, t0 + ms(5)), Offer::Held { arm: None });
        // A delta inside the interval is due at the interval's end, sooner than the durable's wait.
        assert_eq!(d.offer(&chunk(2, "c"), MS16, WAIT, t0 + ms(10)), Offer::Held { arm: Some(t0 + ms(19)) });
        d.fired();
        assert_eq!(d.take(t0 + ms(19)), vec![MessageFrame::Durable { seq: 2 }, chunk(2, "c")]);
        // Flushed alone after its wait, a durable does not start an interval.
        let t1 = t0 + ms(100);
        assert_eq!(d.offer(&MessageFrame::Durable { seq: 3 }, MS16, WAIT, t1), Offer::Held { arm: Some(t1 + WAIT) });
        d.fired();
        assert_eq!(d.take(t1 + WAIT), vec![MessageFrame::Durable { seq: 3 }]);
        assert_eq!(d.offer(&chunk(3, "d"), MS16, WAIT, t1 + WAIT + ms(1)), Offer::Now { flush: false });
    }

    #[test]
    fn frames_further_apart_than_the_interval_are_never_held() {
        let t0 = Instant::now();
        let mut d = Display::default();
        for i in 0..5u64 {
            let at = t0 + Duration::from_millis(20 * i);
            assert_eq!(d.offer(&chunk(i, "x"), MS16, WAIT, at), Offer::Now { flush: false });
        }
        assert!(!d.holds());
    }

    #[test]
    fn a_late_frame_takes_what_is_held_with_it_in_order() {
        let t0 = Instant::now();
        let mut d = Display::default();
        d.offer(&chunk(0, "a"), MS16, WAIT, t0);
        d.offer(&chunk(1, "b"), MS16, WAIT, t0 + Duration::from_millis(1));
        // The timer is late: a frame past the deadline flushes the held one before itself.
        assert_eq!(d.offer(&chunk(2, "c"), MS16, WAIT, t0 + Duration::from_millis(30)), Offer::Now { flush: true });
        assert_eq!(d.take(t0 + Duration::from_millis(30)), vec![chunk(1, "b")]);
    }
}
