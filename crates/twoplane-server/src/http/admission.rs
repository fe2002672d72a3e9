//! Admission of readers: whether a reader may start, the refusals when not, and the places an
//! admitted reader holds until its response body goes.
//!
//! Guarantees:
//! - Bounds: past [`SseConfig::max_subscribers`] live readers a subscribe is `503`; past a
//!   per-stream or per-address bound ([`SseConfig::subscriber_caps`]) it is `503` with the JSON
//!   error `{"kind":"too_many_subscribers",...}` and a `Retry-After`. Both are answered before the
//!   plane is asked, so a full server spends nothing on the request.
//! - Every reader endpoint (the SSE endpoint, the AI SDK's resume route) admits its readers here
//!   ([`admit`]), and counts them the same way ([`Places`]).
//! - A denial is `403` with the same body whether or not the stream exists ([`forbidden`]).
//! - A reader's places are given back when its body goes: its places under the caps, its count
//!   among the live readers ([`SseStats::active`]) and, for a UI reader, among those
//!   ([`SseStats::ui_active`]), in that order.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request};
use axum::http::StatusCode;
use axum::response::Response;

use super::config::{SseConfig, SseStats};
use crate::conn_limits::{CapReached, SubscriberPass};

/// A reader of `stream_id` under `config`'s bounds, before the plane is asked (a full server
/// spends nothing on the request): past the server-wide bound of live readers (`stats`), or past
/// the per-stream or per-address bound, `503 too_many_subscribers` with a `Retry-After`. Every
/// reader endpoint (this one, the AI SDK's resume route) admits its readers here; the pass gives
/// the places back when it drops.
pub(crate) fn admit(
    config: &SseConfig,
    stats: &SseStats,
    stream_id: &str,
    request: &Request,
) -> Result<Option<SubscriberPass>, CapReached> {
    if config.max_subscribers.is_some_and(|max| stats.active() >= max) {
        return Err(CapReached::Server);
    }
    let Some(caps) = &config.subscriber_caps else { return Ok(None) };
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    caps.admit(stream_id, peer).map(Some)
}

/// A reader's refusal: the same status and body whether or not the stream exists, wherever a
/// reader is refused (this endpoint, the reader's cancel).
pub fn forbidden() -> Response {
    crate::refusal::refuse(StatusCode::FORBIDDEN, "forbidden", "this reader may not read this stream")
}

/// Seconds a refused subscriber is told to wait: subscribers come and go within seconds.
const SUBSCRIBER_RETRY_AFTER_S: u64 = 5;

/// `503` with `{"kind":"too_many_subscribers","message":...}` and a `Retry-After`.
pub(crate) fn too_many_subscribers(reached: CapReached) -> Response {
    crate::refusal::refuse_retry(
        StatusCode::SERVICE_UNAVAILABLE,
        reached.kind(),
        reached.message(),
        SUBSCRIBER_RETRY_AFTER_S,
    )
}

/// What a live reader's body holds until it goes, each given back as it drops (in this order).
pub(super) struct Places {
    /// The subscriber's places under the per-stream and per-address bounds.
    _pass: Option<SubscriberPass>,
    /// Counted among the live readers.
    _active: ActiveReader,
    /// A UI reader: counted as one.
    _ui: Option<UiReader>,
}

impl Places {
    /// A reader counted among the live readers in `stats` (and as opened), holding no places
    /// under the caps yet.
    pub fn new(stats: Arc<SseStats>) -> Places {
        Places { _pass: None, _active: ActiveReader::new(stats), _ui: None }
    }

    /// Hold `pass`, the reader's places under the subscriber bounds.
    pub fn admitted(&mut self, pass: Option<SubscriberPass>) {
        self._pass = pass;
    }

    /// Count the reader as a UI reader in `stats` (in [`SseStats::ui_active`], and by `gauge`,
    /// which is held too).
    pub fn count_ui(&mut self, stats: &Arc<SseStats>, gauge: impl Send + 'static) {
        stats.ui_active.fetch_add(1, Ordering::SeqCst);
        self._ui = Some(UiReader(stats.clone(), Box::new(gauge)));
    }
}

/// One live reader in [`SseStats::active`] (and `opened`), for as long as this lives.
struct ActiveReader(Arc<SseStats>);

impl ActiveReader {
    fn new(stats: Arc<SseStats>) -> ActiveReader {
        stats.active.fetch_add(1, Ordering::SeqCst);
        stats.opened.fetch_add(1, Ordering::Relaxed);
        ActiveReader(stats)
    }
}

impl Drop for ActiveReader {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One UI reader among the live readers, counted apart (and in its metrics gauge).
struct UiReader(Arc<SseStats>, #[allow(dead_code)] Box<dyn Send>);

impl Drop for UiReader {
    fn drop(&mut self) {
        self.0.ui_active.fetch_sub(1, Ordering::SeqCst);
    }
}
