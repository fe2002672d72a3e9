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
