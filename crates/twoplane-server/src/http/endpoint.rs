//! The SSE endpoint (docs/contract.md §5): `GET <path>?streamId=<id>&from=<n>` answered with a
//! plane subscription encoded as server-sent events.
//!
//! Guarantees:
//! - Response headers are exactly [`twoplane_core::sse::STREAM_SSE_HEADERS`]; each frame is one event with an `id:`
//!   line when the frame has a resume point, so a reconnecting `EventSource` sends
//!   `Last-Event-ID` naming exactly where it got to (and that header wins over `?from`).
//! - A request without a stream id is `400`; a denial is `403` with the same body whether or
//!   not the stream exists; a plane that cannot subscribe is `503`; every refusal is JSON with a
//!   `kind` ([`crate::refusal`]).
//! - A reader is admitted under the bounds (`admission.rs`) before the plane is asked.

use std::any::Any;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use twoplane_core::request::stream_request_from_http;
use twoplane_stream::{Plane, PlaneErrorKind};

use super::admission::{admit, forbidden, too_many_subscribers};
use super::body::SseBody;
use super::config::{SseConfig, SseStats};
use super::handoff::body_response;

/// The path [`sse_router`] mounts the endpoint at.
pub const STREAM_PATH: &str = "/api/stream";

/// The AI SDK's resume route, `/v1/streams/{id}/ui-message-stream` (`crate::ui_stream` serves
/// it): the path before its `{id}` segment, and after.
pub(crate) const RESUME_PATH_HEAD: &str = "/v1/streams/";
pub(crate) const RESUME_PATH_TAIL: &str = "/ui-message-stream";

/// Whether a request target (`path[?query]`) is a reader's: the SSE endpoint at `stream_path`
/// (exactly, or followed by a query) or the resume route. What the accept loop's direct SSE path
/// (`crate::sse_conn`) takes, so both kinds of reader are served the same way.
pub(crate) fn is_reader_target(target: &str, stream_path: &str) -> bool {
    target == stream_path
        || target.strip_prefix(stream_path).is_some_and(|rest| rest.starts_with('?'))
        || is_resume_target(target)
}

/// Whether a request target is the resume route's.
fn is_resume_target(target: &str) -> bool {
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    path.strip_prefix(RESUME_PATH_HEAD)
        .and_then(|rest| rest.strip_suffix(RESUME_PATH_TAIL))
        .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// The caller as [`sse_router`] identifies it: the request's headers, from which an
/// [`twoplane_stream::Authorizer`] can read a cookie or a bearer token
/// (`request.user::<HttpCaller>()`).
#[derive(Clone, Debug)]
pub struct HttpCaller {
    pub headers: HeaderMap,
}

type Identify<U> = Arc<dyn Fn(&HeaderMap) -> U + Send + Sync>;

struct Endpoint<U> {
    plane: Plane,
    config: SseConfig,
    stats: Arc<SseStats>,
    identify: Identify<U>,
}

impl<U> Clone for Endpoint<U> {
    fn clone(&self) -> Self {
        Endpoint {
            plane: self.plane.clone(),
            config: self.config.clone(),
            stats: self.stats.clone(),
            identify: self.identify.clone(),
        }
    }
}

/// A router serving `GET /api/stream` for `plane`, identifying callers as [`HttpCaller`].
/// Returns the router and its counters.
pub fn sse_router(plane: Plane, config: SseConfig) -> (Router, Arc<SseStats>) {
    sse_router_with(plane, config, |headers: &HeaderMap| HttpCaller { headers: headers.clone() })
}

/// Like [`sse_router`], with the application's own user type: `identify` turns a request's
/// headers into the user handed to [`Plane::subscribe`] (and so to the authorizer).
pub fn sse_router_with<U, F>(plane: Plane, config: SseConfig, identify: F) -> (Router, Arc<SseStats>)
where
    U: Any + Send + Sync,
    F: Fn(&HeaderMap) -> U + Send + Sync + 'static,
{
    let stats = Arc::new(SseStats::default());
    let endpoint = Endpoint { plane, config, stats: stats.clone(), identify: Arc::new(identify) };
    let router = Router::new().route(STREAM_PATH, get(stream_handler::<U>)).with_state(endpoint);
    (router, stats)
}

async fn stream_handler<U: Any + Send + Sync>(State(endpoint): State<Endpoint<U>>, request: Request) -> Response {
    let headers = request.headers();
    // A header that is not valid UTF-8 still counts as present (docs/contract.md §5: present wins, even
    // empty); its garbage parses to offset 0, as `parseInt` would.
    let last_event_id = headers.get("last-event-id").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let target = request.uri().path_and_query().map_or("", |pq| pq.as_str());
    let wanted = stream_request_from_http(target, last_event_id.as_deref());
    if wanted.stream_id.is_empty() {
        return crate::refusal::refuse(StatusCode::BAD_REQUEST, "missing_stream_id", "the query needs streamId=<id>");
    }
    let pass = match admit(&endpoint.config, &endpoint.stats, &wanted.stream_id, &request) {
        Ok(pass) => pass,
        Err(reached) => return too_many_subscribers(reached),
    };
    let user = (endpoint.identify)(headers);
    let from = wanted.from_offset();
    match endpoint.plane.subscribe(&user, &wanted.stream_id, from).await {
        Ok(subscription) => {
            tracing::debug!(stream_id = ?wanted.stream_id, from, "sse subscriber joined");
            body_response(SseBody::new(subscription, &endpoint.config, endpoint.stats.clone()).admitted(pass))
        }
        // Same status and body for a stream that exists and one that does not.
        Err(e) if e.kind() == PlaneErrorKind::Forbidden => forbidden(),
        Err(e) => {
            tracing::warn!(stream_id = ?wanted.stream_id, error = %e, "subscribe failed");
            crate::refusal::refuse(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "the stream plane is unavailable")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_reader_target;

    #[test]
    fn the_direct_path_takes_exactly_the_readers_targets() {
        let taken = [
            "/api/stream",
            "/api/stream?streamId=a",
            "/v1/streams/m1/ui-message-stream",
            "/v1/streams/a%2Fb/ui-message-stream?from=12",
        ];
        let not_taken = [
            "/api/streams?x",
            "/api/stream/x",
            "/v1/streams//ui-message-stream",
            "/v1/streams/a/b/ui-message-stream",
            "/v1/streams/m1/ui-message-streams",
            "/v1/streams/m1/append",
            "/v2/streams/m1/ui-message-stream",
        ];
        for target in taken {
            assert!(is_reader_target(target, "/api/stream"), "{target}");
        }
        for target in not_taken {
            assert!(!is_reader_target(target, "/api/stream"), "{target}");
        }
    }
}
