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
//!   latency, and frames further apart than the interval are published exactly as without it. A
//!   `durable` frame (published at once, or flushed alone) does not start an interval: the store's
//!   confirmations come at their own pace, and a delta right after one must not wait for it.
//! - Nothing is reordered or dropped: held frames are published in order, merged only where the
//!   contract says the result reads the same, and anything that must see the stream's frames in
//!   order (a join, a terminal frame) publishes what is held first ([`Display::take`]).
//! - At most one flush is armed at a time, due at most one interval after the publish it follows.

use std::time::Duration;

use tokio::time::Instant;
use twoplane_core::message::{push_merged, MessageFrame};

/// The held frames and when the readers were last written to.
#[derive(Default)]
pub(crate) struct Display {
    held: Vec<MessageFrame>,
    last: Option<Instant>,
    /// A flush is scheduled (its deadline was handed out by [`Display::offer`]).
    armed: bool,
}

/// What [`Display::offer`] decided for a frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Publish it now (after whatever [`Display::take`] returns, when `flush` says so).
    Now { flush: bool },
    /// Held; when `arm` is set, a flush must be scheduled for that moment.
    Held { arm: Option<Instant> },
}

impl Display {
    /// Decide for `frame`, arriving at `now`, under an interval of `interval` (not zero).
    pub fn offer(&mut self, frame: &MessageFrame, interval: Duration, now: Instant) -> Offer {
        let due = self.last.map(|last| last + interval);
        if due.is_none_or(|due| now >= due) {
            // Quiet for an interval (or a late flush): out now, with anything held before it.
            if !matches!(frame, MessageFrame::Durable { .. }) || !self.held.is_empty() {
                self.last = Some(now);
            }
            return Offer::Now { flush: !self.held.is_empty() };
        }
        push_merged(&mut self.held, frame);
        if self.armed {
            return Offer::Held { arm: None };
        }
        self.armed = true;
        Offer::Held { arm: due }
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

    /// The armed flush ran: whatever it finds held is [`Display::take`]n by the caller.
    pub fn fired(&mut self) {
        self.armed = false;
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

#[cfg(test)]
mod tests {
    use super::*;

    const MS16: Duration = Duration::from_millis(16);

    fn chunk(from: u64, text: &str) -> MessageFrame {
        MessageFrame::chunk(from, 0, from, text.into()).unwrap()
    }

    #[test]
    fn the_first_frame_after_quiet_goes_out_and_the_rest_wait_merged() {
        let t0 = Instant::now();
        let mut d = Display::default();
        assert_eq!(d.offer(&chunk(0, "a"), MS16, t0), Offer::Now { flush: false });
        assert_eq!(d.offer(&chunk(1, "b"), MS16, t0 + Duration::from_millis(2)), Offer::Held { arm: Some(t0 + MS16) });
        assert_eq!(d.offer(&chunk(2, "c"), MS16, t0 + Duration::from_millis(5)), Offer::Held { arm: None });
        d.fired();
        assert_eq!(d.take(t0 + MS16), vec![chunk(1, "bc")]);
        // The flush counts as a write: the next frame within an interval of it waits again.
        assert_eq!(
            d.offer(&chunk(3, "d"), MS16, t0 + MS16 + Duration::from_millis(1)),
            Offer::Held { arm: Some(t0 + MS16 + MS16) }
        );
    }

    #[test]
    fn a_durable_frame_sent_at_once_does_not_hold_the_next_delta() {
        let t0 = Instant::now();
        let mut d = Display::default();
        assert_eq!(d.offer(&MessageFrame::Durable { seq: 1 }, MS16, t0), Offer::Now { flush: false });
        assert_eq!(d.offer(&chunk(1, "b"), MS16, t0 + Duration::from_millis(3)), Offer::Now { flush: false });
        // A durable held after a delta and flushed alone does not start the next interval either.
        assert!(matches!(
            d.offer(&MessageFrame::Durable { seq: 2 }, MS16, t0 + Duration::from_millis(5)),
            Offer::Held { .. }
        ));
        d.fired();
        assert_eq!(d.take(t0 + Duration::from_millis(19)), vec![MessageFrame::Durable { seq: 2 }]);
        assert_eq!(d.offer(&chunk(2, "c"), MS16, t0 + Duration::from_millis(23)), Offer::Now { flush: false });
    }

    #[test]
    fn frames_further_apart_than_the_interval_are_never_held() {
        let t0 = Instant::now();
        let mut d = Display::default();
        for i in 0..5u64 {
            let at = t0 + Duration::from_millis(20 * i);
            assert_eq!(d.offer(&chunk(i, "x"), MS16, at), Offer::Now { flush: false });
        }
        assert!(!d.holds());
    }

    #[test]
    fn a_late_frame_takes_what_is_held_with_it_in_order() {
        let t0 = Instant::now();
        let mut d = Display::default();
        d.offer(&chunk(0, "a"), MS16, t0);
        d.offer(&chunk(1, "b"), MS16, t0 + Duration::from_millis(1));
        // The timer is late: a frame past the deadline flushes the held one before itself.
        assert_eq!(d.offer(&chunk(2, "c"), MS16, t0 + Duration::from_millis(30)), Offer::Now { flush: true });
        assert_eq!(d.take(t0 + Duration::from_millis(30)), vec![chunk(1, "b")]);
    }
}
