//! A reader's response: the contract's headers and its [`SseBody`], for hyper to poll or for the
//! direct SSE path ([`crate::sse_conn`]) to take and serve itself.
//!
//! Guarantees:
//! - The headers are exactly the ones given (the SSE endpoint's are [`STREAM_SSE_HEADERS`]).
//! - One server of a body: whichever side takes the body first (hyper polling the response's
//!   body, or the direct path taking it out of the response's extensions) serves it; the other
//!   then finds nothing.
//! - The response's body owns the [`SseBody`]: dropping it drops the subscription, whoever else
//!   holds a hand-off (the extension only reaches the body while it lives).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use twoplane_core::sse::STREAM_SSE_HEADERS;
use twoplane_stream::Subscription;

use super::body::SseBody;
use super::config::{SseConfig, SseStats};

/// An SSE response for `subscription`: the contract's headers and an [`SseBody`]. Use this to
/// serve a subscription from a route of your own.
pub fn sse_response(subscription: Subscription, config: &SseConfig, stats: Arc<SseStats>) -> Response {
    body_response(SseBody::new(subscription, config, stats))
}

/// The SSE endpoint's response of `body`: the contract's headers.
pub(super) fn body_response(body: SseBody) -> Response {
    handoff_response(body, &STREAM_SSE_HEADERS)
}

/// The response of a reader's `body` with `headers`: its body for hyper, and the hand-off the
/// direct SSE path takes it through.
pub(crate) fn handoff_response(body: SseBody, headers: &[(&'static str, &'static str)]) -> Response {
    let (body, extension) = SseHandoff::new(body);
    // As the body hyper polls, and as an extension the direct SSE path (`crate::sse_conn`) takes
    // the body out of to serve the subscription itself.
    let mut response = Response::new(Body::new(body));
    response.extensions_mut().insert(extension);
    let map = response.headers_mut();
    for (name, value) in headers {
        map.insert(HeaderName::from_static(name), HeaderValue::from_static(value));
    }
    response
}

/// The [`SseBody`] of a response from [`sse_response`], seen from the response's body (which owns
/// it: dropping the response body drops the subscription, whoever else holds a hand-off) and from
/// its extensions (which only reach it while the body lives). Whichever side takes it first
/// serves it; the other then finds nothing.
#[derive(Clone)]
pub(crate) struct SseHandoff(Side);

#[derive(Clone)]
enum Side {
    Body(Arc<Mutex<Option<SseBody>>>),
    Extension(Weak<Mutex<Option<SseBody>>>),
}

impl SseHandoff {
    /// The body's side and the extension's side of `body`.
    fn new(body: SseBody) -> (SseHandoff, SseHandoff) {
        let owner = Arc::new(Mutex::new(Some(body)));
        let viewer = Arc::downgrade(&owner);
        (SseHandoff(Side::Body(owner)), SseHandoff(Side::Extension(viewer)))
    }

    fn with<R>(&self, f: impl FnOnce(&mut Option<SseBody>) -> R) -> R {
        // A panic while polling leaves the body as it was: still usable.
        match &self.0 {
            Side::Body(owner) => f(&mut twoplane_runtime::lock(owner)),
            Side::Extension(viewer) => match viewer.upgrade() {
                Some(owner) => f(&mut twoplane_runtime::lock(&owner)),
                None => f(&mut None),
            },
        }
    }

    /// The body, for a writer that serves it itself; the response's own body is then empty.
    pub(crate) fn take(&self) -> Option<SseBody> {
        self.with(Option::take)
    }
}

impl http_body::Body for SseHandoff {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        self.with(|body| match body.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        })
    }

    fn is_end_stream(&self) -> bool {
        self.with(|body| body.as_ref().is_none_or(http_body::Body::is_end_stream))
    }
}
