//! The append shortcut: `POST /v1/streams/{id}/append?offset=N`, the producer API's one route
//! taken once per delta, served by the accept loop before the router ([`Shortcut`]).
//!
//! Why: a request per delta through the router cloned a boxed service per layer and ran the
//! path, query and body extractors; measured with callgrind (docs/server.md, "Where the CPU
//! goes"), about a third of the server's instructions per append were the router's. Here the
//! request is matched by hand and handed to the handler's own code.
//!
//! Guarantees:
//! - The same answer as the router's for every request taken: the producer API's check
//!   ([`crate::access::producer_refusal`]), then the handler's code after its extractors
//!   ([`super::routes::append_at`]), a panic answered `500 internal` as the router's panic layer
//!   does, and every refusal counted as the router's outermost layer counts it.
//! - Only a request whose every part the extractors would take as is: method `POST`, the path
//!   `/v1/streams/{id}/append` with an id holding no `%` (nothing to decode), the query exactly
//!   `offset=` and digits that fit a `u64`, a `content-length` within the append limit and no
//!   `transfer-encoding`. Anything else (a bad or missing offset, a body too large, a chunked
//!   body, another route) is given back and the router answers it, with its own errors.
//! - A body that fails to arrive (the client went away mid-body) is answered `400 bad_request`,
//!   as the router's body extractor answers it; the client is usually no longer there to read it.

use std::panic::AssertUnwindSafe;

use axum::extract::ConnectInfo;
use axum::http::{header, Method};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use futures::FutureExt as _;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;

use super::errors::ApiError;
use super::registry::Producers;
use super::routes::append_at;
use crate::server::Shortcut;

/// The append shortcut of one server's producers.
pub(crate) struct AppendShortcut {
    pub producers: Producers,
}

/// What a request must be for the shortcut to take it: its stream id and offset.
fn taken<B>(request: &hyper::Request<B>, limit: usize) -> Option<(String, u64)> {
    if request.method() != Method::POST || request.headers().contains_key(header::TRANSFER_ENCODING) {
        return None;
    }
    let length: usize = request.headers().get(header::CONTENT_LENGTH)?.to_str().ok()?.parse().ok()?;
    if length > limit {
        return None;
    }
    let id = request.uri().path().strip_prefix("/v1/streams/")?.strip_suffix("/append")?;
    if id.is_empty() || id.contains(['/', '%']) {
        return None;
    }
    let digits = request.uri().query()?.strip_prefix("offset=")?;
    if digits.is_empty() || digits.len() > 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((id.to_owned(), digits.parse().ok()?))
}

impl Shortcut for AppendShortcut {
    fn try_serve(
        &self,
        request: hyper::Request<Incoming>,
    ) -> Result<BoxFuture<'static, Response>, hyper::Request<Incoming>> {
        let Some((id, offset)) = taken(&request, self.producers.limits.max_delta_bytes) else { return Err(request) };
        let producers = self.producers.clone();
        Ok(Box::pin(async move {
            let served = AssertUnwindSafe(serve(producers, request, id, offset)).catch_unwind().await;
            let response = served.unwrap_or_else(crate::refusal::panicked);
            crate::metrics::count_refusal(&response);
            response
        }))
    }
}

async fn serve(producers: Producers, request: hyper::Request<Incoming>, id: String, offset: u64) -> Response {
    let peer = request.extensions().get::<ConnectInfo<std::net::SocketAddr>>().map(|c| c.0);
    if let Some(refused) =
        crate::access::producer_refusal(&producers.access, request.headers(), peer, request.uri().path())
    {
        return refused;
    }
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return ApiError::bad_request("bad_request", format!("Failed to buffer the request body: {e}"))
                .into_response()
        }
    };
    match append_at(&producers, &id, offset, &body).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::taken;

    fn request(method: &str, uri: &str, headers: &[(&str, &str)]) -> hyper::Request<()> {
        let mut builder = hyper::Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn takes_only_what_the_extractors_would_take_as_is() {
        let len = [("content-length", "4")];
        assert_eq!(taken(&request("POST", "/v1/streams/a-b_c/append?offset=12", &len), 64), Some(("a-b_c".into(), 12)));
        assert_eq!(
            taken(&request("POST", "/v1/streams/s/append?offset=18446744073709551615", &len), 64),
            Some(("s".into(), u64::MAX))
        );
        for (method, uri) in [
            ("GET", "/v1/streams/s/append?offset=0"),
            ("POST", "/v1/streams/s/append"),
            ("POST", "/v1/streams/s/append?offset="),
            ("POST", "/v1/streams/s/append?offset=-1"),
            ("POST", "/v1/streams/s/append?offset=18446744073709551616"),
            ("POST", "/v1/streams/s/append?offset=1&x=2"),
            ("POST", "/v1/streams/s/append?x=2&offset=1"),
            ("POST", "/v1/streams/%73/append?offset=1"),
            ("POST", "/v1/streams//append?offset=1"),
            ("POST", "/v1/streams/a/b/append?offset=1"),
            ("POST", "/v1/streams/s/append/?offset=1"),
            ("POST", "/v1/streams/s/body?offset=1"),
        ] {
            assert_eq!(taken(&request(method, uri, &len), 64), None, "{method} {uri}");
        }
        let uri = "/v1/streams/s/append?offset=0";
        assert_eq!(taken(&request("POST", uri, &[]), 64), None, "no length");
        assert_eq!(taken(&request("POST", uri, &[("content-length", "65")]), 64), None, "over the limit");
        assert!(taken(&request("POST", uri, &[("content-length", "64")]), 64).is_some(), "at the limit");
        let chunked = [("content-length", "4"), ("transfer-encoding", "chunked")];
        assert_eq!(taken(&request("POST", uri, &chunked), 64), None, "chunked");
    }
}
