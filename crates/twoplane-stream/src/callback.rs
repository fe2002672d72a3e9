//! The escape hatch: persist checkpoints however the application likes.
//!
//! Guarantees: the callback receives owned inputs (`'static` futures), text as UTF-16 exactly as
//! produced. A failed call is tried again, so applying the same `(from, seq)` twice must be
//! harmless, and so must a slice that starts before what the callback already stored (when an
//! acknowledgement was lost, the plane does not know the earlier slice landed). Returning the applied length in [`CommitReply::seq`] lets the plane resynchronize
//! instead; returning `None` means "the slice as sent is applied". Close bodies may be trimmed
//! (`body_from > 0`) when the plane was built with `retain_chars`.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::FutureExt;
use twoplane_core::{StreamStatus, Text};

use crate::error::PlaneError;
use crate::target::{AppendAck, AppendRequest, CloseRequest, DurableTarget, OpenRequest, TargetCaps, TargetMode};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a checkpoint hands the callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitInput {
    /// The stream is going live (the application's mutator already wrote the row).
    Open { stream_id: String, host_token: String },
    /// A prefix advance: `text.len() == seq - from`.
    Append { stream_id: String, from: u64, seq: u64, text: Text },
    /// The seal. `body` starts at offset `body_from`; `seq == body_from + body.len()`. A
    /// compacting application needs `body_from == 0`; a non-compacting one appends
    /// `body[from - body_from..]` as the final chunk.
    Close {
        stream_id: String,
        from: u64,
        seq: u64,
        body: Text,
        body_from: u64,
        status: StreamStatus,
        error: Option<String>,
    },
}

/// The callback's answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitReply {
    /// The applied durable length, when the application knows it (recommended).
    pub seq: Option<u64>,
    /// A reader asked the producer to stop.
    pub cancel_requested: bool,
}

type CommitFn = Arc<dyn Fn(CommitInput) -> BoxFuture<'static, Result<CommitReply, BoxError>> + Send + Sync>;
type ProbeFn = Arc<dyn Fn(String) -> BoxFuture<'static, Result<Option<u64>, BoxError>> + Send + Sync>;

pub struct CallbackTarget {
    commit: CommitFn,
    probe: Option<ProbeFn>,
}

impl CallbackTarget {
    pub fn new<F, Fut>(commit: F) -> Self
    where
        F: Fn(CommitInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CommitReply, BoxError>> + Send + 'static,
    {
        CallbackTarget { commit: Arc::new(move |input| commit(input).boxed()), probe: None }
    }

    /// A read of the applied length, used to resynchronize after a failed commit.
    pub fn with_probe<F, Fut>(mut self, probe: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<u64>, BoxError>> + Send + 'static,
    {
        self.probe = Some(Arc::new(move |id| probe(id).boxed()));
        self
    }

    async fn call(&self, input: CommitInput) -> Result<CommitReply, PlaneError> {
        (self.commit)(input).await.map_err(|e| PlaneError::store("the commit callback failed").with_boxed_source(e))
    }
}

#[async_trait]
impl DurableTarget for CallbackTarget {
    fn caps(&self) -> TargetCaps {
        // A callback plane trims its text (`retain_chars`), so it cannot fold a message's parts
        // into a document at the seal: parts are refused on it.
        TargetCaps { mode: TargetMode::Callback, has_host: false, has_cancel: true, has_parts: false }
    }

    async fn open(&self, request: OpenRequest<'_>) -> Result<(), PlaneError> {
        self.call(CommitInput::Open {
            stream_id: request.stream_id.to_owned(),
            host_token: request.host_token.to_owned(),
        })
        .await
        .map(drop)
    }

    async fn append(&self, request: AppendRequest<'_>) -> Result<AppendAck, PlaneError> {
        let reply = self
            .call(CommitInput::Append {
                stream_id: request.stream_id.to_owned(),
                from: request.from,
                seq: request.seq,
                text: Text::from_slice(request.text),
            })
            .await?;
        Ok(AppendAck { durable_seq: reply.seq.unwrap_or(request.seq), cancel_requested: reply.cancel_requested })
    }

    async fn close(&self, request: CloseRequest<'_>) -> Result<(), PlaneError> {
        self.call(CommitInput::Close {
            stream_id: request.stream_id.to_owned(),
            from: request.from,
            seq: request.seq,
            body: Text::from_slice(request.body),
            body_from: request.body_from,
            status: request.status,
            error: request.error.map(str::to_owned),
        })
        .await
        .map(drop)
    }

    async fn probe_durable_seq(&self, stream_id: &str) -> Result<Option<u64>, PlaneError> {
        match &self.probe {
            None => Ok(None),
            Some(probe) => probe(stream_id.to_owned())
                .await
                .map_err(|e| PlaneError::store("the probe callback failed").with_boxed_source(e)),
        }
    }
}
