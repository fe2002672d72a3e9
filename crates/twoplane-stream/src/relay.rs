//! The relay seam: the live plane across processes (Redis, NATS, a socket: application code).
//!
//! Guarantees:
//! - `publish` is called, in order and synchronously, with every `chunk`, `durable` and `end`
//!   the producer fans out; a failure (an error or a panic) is reported to the relay hook and
//!   never reaches the producer or its checkpoints.
//! - `attach` is asked only for streams this process does not produce, and only once the
//!   authorizer said yes; it is bounded by the attach timeout, and a timeout, an error or
//!   `None` is the ordinary `absent` answer.
//! - An attached source is untrusted: every frame runs through the core's conform pass, so the
//!   worst a faulty relay can do is send a reader to the store (one legal `stale`); it cannot put
//!   wrong text in front of one.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use twoplane_core::message::MessageFrame;

/// A relay adapter's error.
pub type RelayError = Box<dyn std::error::Error + Send + Sync>;

/// Frames of a stream hosted elsewhere, as an attached relay yields them.
pub type FrameSource = BoxStream<'static, Result<MessageFrame, RelayError>>;

/// Which halves of the relay an adapter implements; a relay with neither is refused at
/// construction (it is a misconfiguration, not a topology).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayTopology {
    pub publish: bool,
    pub attach: bool,
}

/// Carries live frames between processes. Checkpoints never go through it.
#[async_trait]
pub trait Relay: Send + Sync {
    fn topology(&self) -> RelayTopology;

    /// Mirror one produced frame outward. It runs synchronously under the stream's lock (that
    /// is what keeps the relay's order identical to the subscribers'), so it must not block
    /// and must not call back into the plane: queue the frame and send it from elsewhere.
    fn publish(&self, stream_id: &str, frame: &MessageFrame) -> Result<(), RelayError> {
        let _ = (stream_id, frame);
        Ok(())
    }

    /// Resolve once every frame that `publish` accepted before this call has left the process
    /// (written, or given up by the adapter's own retry policy and reported). An adapter that
    /// publishes straight from `publish`, or not at all, has nothing to wait for. The plane calls
    /// it once when it drains ([`crate::Plane::drain`], bounded by
    /// [`crate::PlaneOptions::drain_relay_ms`]), so the `end` frames of the streams it just
    /// sealed reach readers on other instances before the process exits.
    async fn flush(&self) -> Result<(), RelayError> {
        Ok(())
    }

    /// Frames of `stream_id` from `from`, or `None` (the caller answers `absent`). An adapter
    /// that cannot serve `from` yields `stale` and stops.
    async fn attach(&self, stream_id: &str, from: u64) -> Result<Option<FrameSource>, RelayError> {
        let _ = (stream_id, from);
        Ok(None)
    }
}

/// Where a relay failure happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayPhase {
    /// Mirroring a produced frame out.
    Publish,
    /// Dialing the adapter for a subscriber (including the attach timeout).
    Attach,
    /// Consuming or conforming an attached source's frames.
    Frames,
}

impl RelayPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            RelayPhase::Publish => "publish",
            RelayPhase::Attach => "attach",
            RelayPhase::Frames => "frames",
        }
    }
}

/// Context for [`RelayErrorHook`].
#[derive(Clone, Copy, Debug)]
pub struct RelayErrorInfo<'a> {
    pub stream_id: &'a str,
    pub phase: RelayPhase,
}

/// A diagnostic for relay failures (default: `tracing::warn!`). A panicking hook is contained.
pub type RelayErrorHook = Arc<dyn Fn(RelayErrorInfo<'_>, &(dyn std::error::Error + 'static)) + Send + Sync>;

/// A plain message as a relay error (conform violations, timeouts, panics).
#[derive(Debug)]
pub(crate) struct RelayFailure(pub String);

impl fmt::Display for RelayFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RelayFailure {}
