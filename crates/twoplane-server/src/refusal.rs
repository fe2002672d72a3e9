//! One shape for every refusal the server answers: an HTTP status and a JSON body
//! `{"kind", "message", ...}` whose `kind` is a stable snake_case name, carried also as a
//! response extension ([`RefusalKind`]) so that `/metrics` counts refusals by kind without reading
//! bodies.
//!
//! Guarantees: a response built here always has a JSON body with a `kind` and the extension with
//! the same `kind`; kinds are `&'static str`, so the metric's label set is bounded by the code.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The `kind` of a refusal, on its response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefusalKind(pub &'static str);

/// `status` with `{"kind": kind, "message": message}`.
pub fn refuse(status: StatusCode, kind: &'static str, message: &str) -> Response {
    with_body(status, kind, serde_json::json!({ "kind": kind, "message": message }))
}

/// [`refuse`] with a `Retry-After` of `secs` seconds.
pub fn refuse_retry(status: StatusCode, kind: &'static str, message: &str, secs: u64) -> Response {
    let mut response = refuse(status, kind, message);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// `status` with a JSON `body` the caller built (it must hold `kind`), marked as a refusal.
pub fn with_body(status: StatusCode, kind: &'static str, body: serde_json::Value) -> Response {
    mark((status, axum::Json(body)).into_response(), kind)
}

/// The answer to a path no route has: `404 not_found`.
pub async fn not_found() -> Response {
    refuse(StatusCode::NOT_FOUND, "not_found", "no route has this path")
}

/// A method a route does not take: axum's bare `405` (its `Allow` header kept) becomes `405
/// method_not_allowed`. A layer over the whole router rather than axum's
/// `method_not_allowed_fallback`, which would answer before the reader routes' CORS layer
/// answers a preflight (`OPTIONS`) itself.
pub async fn method_not_allowed(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let response = next.run(request).await;
    if response.status() != StatusCode::METHOD_NOT_ALLOWED || response.extensions().get::<RefusalKind>().is_some() {
        return response;
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    let mut refused =
        refuse(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this route does not take this method");
    if let Some(allow) = allow {
        refused.headers_mut().insert(header::ALLOW, allow);
    }
    refused
}

/// The answer when a handler panicked (caught by `tower_http::catch_panic`): `500 internal`,
/// logged, with nothing of the panic's message in the body.
pub fn panicked(payload: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(panic = %what, "a request handler panicked");
    refuse(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the server failed on this request")
}

/// Mark an already built refusal with its kind.
pub fn mark(mut response: Response, kind: &'static str) -> Response {
    response.extensions_mut().insert(RefusalKind(kind));
    response
}
