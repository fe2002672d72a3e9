//! A frame source fed by a spawned reader task.
//!
//! Each attached reader runs as one task that waits on Redis, applies the cursor and emits
//! frames into a small bounded channel; the plane reads the other end as its `FrameSource`.
//! Writing the reader as a task keeps it sequential code with plain timeouts. Guarantees: when the
//! plane drops the source, the task notices at its next await (every wait also watches
//! [`Emitter::closed`]) and ends, releasing its subscription or its place in the log tail.

use futures::StreamExt;
use tokio::sync::mpsc;
use twoplane_core::message::MessageFrame as Frame;
use twoplane_stream::{FrameSource, RelayError};

use crate::error::RedisRelayError;

/// The sending half: the reader task's way out.
pub(crate) struct Emitter {
    tx: mpsc::Sender<Result<Frame, RelayError>>,
}

/// A bounded source and its emitter. The bound only paces the task: the plane's own reader
/// applies the subscriber queue bound.
pub(crate) fn channel() -> (Emitter, FrameSource) {
    let (tx, rx) = mpsc::channel(16);
    let source = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    (Emitter { tx }, source.boxed())
}

impl Emitter {
    /// Send a frame; `false` once the source was dropped.
    pub async fn frame(&self, frame: Frame) -> bool {
        self.tx.send(Ok(frame)).await.is_ok()
    }

    /// Send frames in order; `false` once the source was dropped.
    pub async fn frames(&self, frames: Vec<Frame>) -> bool {
        for frame in frames {
            if !self.frame(frame).await {
                return false;
            }
        }
        true
    }

    /// End the source with an error (the plane reports it and answers `stale`).
    pub async fn fail(&self, error: RedisRelayError) {
        let _ = self.tx.send(Err(Box::new(error))).await;
    }

    /// Resolves when the plane dropped the source.
    pub async fn closed(&self) {
        self.tx.closed().await
    }
}
