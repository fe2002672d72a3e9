//! The lifecycle of one hosted stream: live, sealing, ended (or fenced off), and a reader's
//! cancel.
//!
//! Owns: the cancel flag, the seal that was asked for, whether the stream ended and with which
//! terminal frame, the fencing error, and the seal's outcome as every caller reads it.
//!
//! Guarantees:
//! - The first seal request wins; none is taken once the stream ended.
//! - A stream takes no text once a seal was requested (or it ended); a fenced stream answers
//!   every later push, flush and seal with the `fenced` error.
//! - The terminal frame is set once, when the stream ends: the seal's `end`, or the `stale` of a
//!   fenced producer. A join after that replays it.
//! - A cancel counts only while the stream is live (not ended, no seal requested), and is
//!   reported as new once.
//! - Every `close`/`fail`/`drain` caller reads the same seal outcome.

use std::sync::Arc;

use tokio::sync::watch;
use twoplane_core::message::MessageFrame;
use twoplane_core::StreamStatus;

use crate::error::{PlaneError, PlaneErrorKind};

/// How a stream is being sealed.
#[derive(Clone, Debug)]
pub(crate) struct Seal {
    pub status: StreamStatus,
    pub error: Option<String>,
}

impl Seal {
    /// The seal of a stream whose producer went away or whose plane is draining.
    pub fn interrupted() -> Seal {
        Seal { status: StreamStatus::Interrupted, error: None }
    }
}

pub(crate) struct Lifecycle {
    /// A reader cancelled (see `LiveStream::request_cancel` and the checkpoint's read-back).
    cancelled: bool,
    /// The seal that was asked for (the first request wins).
    sealing: Option<Seal>,
    ended: bool,
    /// Set when the store fenced this producer off (`checkpoint.rs`): the stream ended with
    /// `stale` and every later push, flush and seal answers this error.
    fenced: Option<PlaneError>,
    end_frame: Option<Arc<MessageFrame>>,
}

impl Lifecycle {
    pub fn new() -> Lifecycle {
        Lifecycle { cancelled: false, sealing: None, ended: false, fenced: None, end_frame: None }
    }

    /// `Ok` when the stream takes text now; otherwise the error a push answers.
    pub fn admits_text(&self, id: &str) -> Result<(), PlaneError> {
        if let Some(err) = &self.fenced {
            return Err(err.clone());
        }
        if self.sealing.is_some() || self.ended {
            return Err(PlaneError::new(
                PlaneErrorKind::StreamClosed,
                format!("stream {id} is sealed; it takes no more text"),
            ));
        }
        Ok(())
    }

    pub fn fenced(&self) -> Option<&PlaneError> {
        self.fenced.as_ref()
    }

    pub fn is_ended(&self) -> bool {
        self.ended
    }

    pub fn is_sealing(&self) -> bool {
        self.sealing.is_some()
    }

    pub fn is_sealing_or_ended(&self) -> bool {
        self.ended || self.sealing.is_some()
    }

    /// The seal that was asked for.
    pub fn seal(&self) -> Option<&Seal> {
        self.sealing.as_ref()
    }

    /// Ask for the seal: `true` when this request is the one that counts.
    pub fn request_seal(&mut self, seal: Seal) -> bool {
        if self.ended || self.sealing.is_some() {
            return false;
        }
        self.sealing = Some(seal);
        true
    }

    pub fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// Record a reader's cancel; `true` when it is new (the producer is to be told).
    pub fn mark_cancelled(&mut self) -> bool {
        !std::mem::replace(&mut self.cancelled, true)
    }

    /// The stream ended with `terminal` (its `end`, replayed to later joins).
    pub fn end(&mut self, terminal: Arc<MessageFrame>) {
        self.ended = true;
        self.end_frame = Some(terminal);
    }

    /// The store fenced this producer off: the stream ended with `terminal` (a `stale`), and
    /// `err` answers everything from now on.
    pub fn fence(&mut self, err: PlaneError, terminal: Arc<MessageFrame>) {
        self.fenced = Some(err);
        self.end(terminal);
    }

    /// The terminal frame, once the stream ended.
    pub fn end_frame(&self) -> Option<&Arc<MessageFrame>> {
        self.end_frame.as_ref()
    }
}

/// The seal's outcome, once known, shared by every caller waiting for it.
pub(crate) struct SealOutcome(watch::Sender<Option<Result<(), PlaneError>>>);

/// Where a seal's outcome will appear ([`wait_seal`] waits for it).
pub(crate) type SealWatch = watch::Receiver<Option<Result<(), PlaneError>>>;

impl SealOutcome {
    pub fn new() -> SealOutcome {
        SealOutcome(watch::channel(None).0)
    }

    pub fn watch(&self) -> SealWatch {
        self.0.subscribe()
    }

    pub fn publish(&self, outcome: Result<(), PlaneError>) {
        self.0.send_replace(Some(outcome));
    }
}

/// The seal's outcome, once it is known.
pub(crate) async fn wait_seal(mut rx: SealWatch) -> Result<(), PlaneError> {
    match rx.wait_for(|v| v.is_some()).await {
        Ok(v) => v.clone().unwrap_or(Ok(())),
        Err(_) => Err(PlaneError::new(PlaneErrorKind::Shutdown, "the plane stopped before the seal finished")),
    }
}
