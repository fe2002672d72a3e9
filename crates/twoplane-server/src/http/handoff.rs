//! A reader's response: the contract's headers and its [`SseBody`], for whichever writer answers
//! the request: hyper, which polls the response's body, or the direct SSE path
//! ([`crate::sse_conn`]), which serves the body itself.
//!
//! The direct path answers a request through the same router as hyper (the same layers, the same
//! handler), with a place for a reader's body set for the time its router call runs
//! ([`answer_here`]). A handler building a reader's response ([`handoff_response`],
//! [`sse_response`]) gives the body to that place when there is one, and to the response
//! otherwise.
//!
//! Guarantees:
//! - One owner of a body from handler to socket: the response's body for hyper, or the
//!   connection of the direct path, never both; nothing else holds or reaches it, so dropping its
//!   owner drops the subscription.
//! - The direct path serves the body only under the response its handler built (that response
//!   carries a mark): a response replaced on its way out (by a layer) is served as it is, and the
//!   body is dropped as the router call returns.
//! - The headers are exactly the ones given (the SSE endpoint's are [`STREAM_SSE_HEADERS`]), on
//!   either path.

use std::future::Future;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use twoplane_core::sse::STREAM_SSE_HEADERS;
use twoplane_stream::Subscription;

use super::body::SseBody;
use super::config::{SseConfig, SseStats};

tokio::task_local! {
    /// Set while the direct SSE path's router call runs: where a reader's body goes.
    static HERE: Place;
}

/// Where the direct SSE path takes a reader's body from.
#[derive(Clone, Default)]
struct Place(Arc<Mutex<Option<SseBody>>>);

/// Marks a response whose body went to the direct SSE path's [`Place`].
#[derive(Clone)]
struct Placed;

/// An SSE response for `subscription`: the contract's headers and an [`SseBody`]. Use this to
/// serve a subscription from a route of your own.
pub fn sse_response(subscription: Subscription, config: &SseConfig, stats: Arc<SseStats>) -> Response {
    body_response(SseBody::new(subscription, config, stats))
}

/// The SSE endpoint's response of `body`: the contract's headers.
pub(super) fn body_response(body: SseBody) -> Response {
    handoff_response(body, &STREAM_SSE_HEADERS)
}

/// The response of a reader's `body` with `headers`: the body goes to the direct SSE path when
/// it is answering this request, and is the response's body otherwise.
pub(crate) fn handoff_response(body: SseBody, headers: &[(&'static str, &'static str)]) -> Response {
    let mut response = match HERE.try_with(Place::clone) {
        Ok(place) => place.offer(body),
        Err(_) => Response::new(Body::new(body)),
    };
    let map = response.headers_mut();
    for (name, value) in headers {
        map.insert(HeaderName::from_static(name), HeaderValue::from_static(value));
    }
    response
}

impl Place {
    /// The response of `body` kept here: empty, and marked. A second body in one answer (none
    /// is built) is the response's own.
    fn offer(&self, body: SseBody) -> Response {
        let mut held = twoplane_runtime::lock(&self.0);
        if held.is_some() {
            return Response::new(Body::new(body));
        }
        *held = Some(body);
        let mut response = Response::new(Body::empty());
        response.extensions_mut().insert(Placed);
        response
    }
}

/// The direct SSE path's answer to a request: `respond` (the router's call for it) runs with a
/// place for a reader's body, and the body comes back apart from the response when the
/// response is the one its handler built.
pub(crate) async fn answer_here(respond: impl Future<Output = Response>) -> (Response, Option<SseBody>) {
    let place = Place::default();
    let mut response = HERE.scope(place.clone(), respond).await;
    let placed = response.extensions_mut().remove::<Placed>().is_some();
    let body = twoplane_runtime::lock(&place.0).take().filter(|_| placed);
    (response, body)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http_body_util::BodyExt;

    use super::*;

    const EVENTS: &[u8] = b"data: {\"type\":\"finish\"}\n\n";

    fn body() -> SseBody {
        let subscription = Subscription::ui_fixed(Bytes::from_static(EVENTS));
        SseBody::new(subscription, &SseConfig::default(), Arc::new(SseStats::default()))
    }

    async fn collect(body: impl http_body::Body<Data = Bytes, Error = impl std::fmt::Debug>) -> Bytes {
        body.collect().await.unwrap().to_bytes()
    }

    fn assert_headers(response: &Response) {
        let got: Vec<_> = response.headers().iter().map(|(k, v)| (k.as_str(), v.to_str().unwrap())).collect();
        assert_eq!(got, STREAM_SSE_HEADERS.to_vec());
    }

    #[tokio::test]
    async fn a_body_is_the_responses_or_the_direct_paths_never_both() {
        // Hyper's path: the response's body is the reader's own.
        let response = handoff_response(body(), &STREAM_SSE_HEADERS);
        assert!(response.extensions().get::<Placed>().is_none());
        assert_headers(&response);
        assert_eq!(collect(response.into_body()).await, EVENTS);

        // The direct path: the body comes back apart, the response's own is empty.
        let (response, sse) = answer_here(async { handoff_response(body(), &STREAM_SSE_HEADERS) }).await;
        assert!(response.extensions().get::<Placed>().is_none(), "the mark is taken off");
        assert_headers(&response);
        assert_eq!(collect(response.into_body()).await, "");
        assert_eq!(collect(sse.expect("the body came back")).await, EVENTS);

        // A response replaced on its way out: served as it is, and the body is gone.
        let stats = Arc::new(SseStats::default());
        let held = stats.clone();
        let replaced = async move {
            let subscription = Subscription::ui_fixed(Bytes::from_static(EVENTS));
            let built = handoff_response(SseBody::new(subscription, &SseConfig::default(), held), &[]);
            drop(built);
            Response::new(Body::from("replaced"))
        };
        let (response, sse) = answer_here(replaced).await;
        assert!(sse.is_none());
        assert_eq!(stats.active(), 0, "the body was dropped with its answer");
        assert_eq!(collect(response.into_body()).await, "replaced");
    }
}
