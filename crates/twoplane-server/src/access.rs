//! Who may produce and who may read on `twoplane serve`.
//!
//! Guarantees:
//! - Producers present the producer secret as `Authorization: Bearer <secret>`; it is compared
//!   in constant time. Without a configured secret the producer API answers loopback peers only
//!   (anything else gets 403 `loopback_only`), and startup says so.
//! - Readers present a read token ([`crate::token`]) as `Authorization: Bearer <token>` or as
//!   the `token` query parameter (an `EventSource` cannot set headers); the header wins when
//!   both are sent. Every refusal is the same 403 whether or not the stream exists: the plane
//!   asks `ReadAuthorizer` (below) before it looks the stream up.
//! - With no read secret, reads are open (as `twoplane serve` always was) and only a loopback
//!   `--listen` is accepted, unless `--open-reads` says that open reads are wanted elsewhere
//!   ([`Access::check_listen`]).
//! - Secrets come from a file (its bytes, trailing spaces, tabs, CRs and LFs removed) or an environment
//!   variable, and are at least [`crate::token::MIN_SECRET_BYTES`] long. They never appear in
//!   `Debug` output or logs.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use subtle::ConstantTimeEq;
use twoplane_stream::{AllowAll, AuthRequest, Authorizer};

use crate::cors::AllowedOrigins;
use crate::http::HttpCaller;
use crate::token::{self, Claims, Denied, MIN_SECRET_BYTES};

/// Environment variable holding the producer secret when no `--producer-token-file` is given.
pub const PRODUCER_TOKEN_ENV: &str = "TWOPLANE_PRODUCER_TOKEN";
/// Environment variable holding the read-token secret when no `--read-token-secret-file` is given.
pub const READ_SECRET_ENV: &str = "TWOPLANE_READ_TOKEN_SECRET";

/// Secret bytes that never print.
#[derive(Clone)]
pub struct Secret(Arc<[u8]>);

impl Secret {
    /// Wrap `bytes`, refusing a secret too short to be one.
    pub fn new(bytes: &[u8], what: &str) -> Result<Secret, String> {
        // Which bytes are the key is the token rule's (twoplane-token), for both secrets.
        let trimmed = crate::token::secret_key(bytes);
        if trimmed.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "{what} has {} bytes; use at least {MIN_SECRET_BYTES} (for example: head -c 32 /dev/urandom | base64)",
                trimmed.len()
            ));
        }
        Ok(Secret(Arc::from(trimmed)))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Load a secret from `file` when given, else from the environment variable `env`; `None` when
/// neither is set. `flag` names the flag in messages.
pub fn load_secret(file: Option<&Path>, env: &str, flag: &str) -> Result<Option<Secret>, String> {
    if let Some(path) = file {
        let bytes = std::fs::read(path).map_err(|e| format!("{flag} {}: cannot read it: {e}", path.display()))?;
        return Secret::new(&bytes, &format!("{flag} {}", path.display())).map(Some);
    }
    match std::env::var_os(env) {
        Some(value) if !value.is_empty() => {
            Secret::new(value.as_encoded_bytes(), &format!("the environment variable {env}")).map(Some)
        }
        _ => Ok(None),
    }
}

/// The access configuration of one server.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// The producers' bearer secret; `None`: the producer API answers loopback peers only.
    pub producer_token: Option<Secret>,
    /// The key read tokens are signed with; `None`: reads are open.
    pub read_secret: Option<Secret>,
    /// Open reads on a non-loopback address, on purpose (`--open-reads`).
    pub open_reads: bool,
    /// Pages on these origins may read from another origin (`--allow-origin`; crate::cors).
    pub allowed_origins: AllowedOrigins,
}

impl Access {
    /// Refuse a configuration that would expose open reads, naming the flag to add.
    pub fn check_listen(&self, listen: SocketAddr) -> Result<(), String> {
        if self.open_reads && self.read_secret.is_some() {
            return Err("--open-reads and a read-token secret contradict each other: give one of them".into());
        }
        if self.read_secret.is_none() && self.allowed_origins == AllowedOrigins::Any {
            return Err("--allow-origin '*' without a read-token secret would let every web page read every stream \
                        and cancel it: add --read-token-secret-file FILE, or name the origins"
                .into());
        }
        if !crate::loopback::is_loopback(listen.ip()) && self.read_secret.is_none() && !self.open_reads {
            return Err(format!(
                "--listen {listen} is not a loopback address, and without a read-token secret anyone who can reach it \
                 could read every stream: add --read-token-secret-file FILE (or set {READ_SECRET_ENV}), or \
                 --open-reads if that is what you want"
            ));
        }
        Ok(())
    }

    /// The plane's authorizer: read tokens when a secret is configured, else everyone.
    pub fn authorizer(&self) -> Arc<dyn Authorizer> {
        match &self.read_secret {
            Some(secret) => Arc::new(ReadAuthorizer { secret: secret.clone() }),
            None => Arc::new(AllowAll),
        }
    }

    /// Check a reader's token for `stream_id` (open reads: always allowed, no claims).
    pub fn check_read(&self, headers: &HeaderMap, stream_id: &str) -> Result<Option<Claims>, Denied> {
        match &self.read_secret {
            None => Ok(None),
            Some(secret) => check_bearer_token(secret, headers, stream_id).map(Some),
        }
    }

    /// Lines for the startup log: what is protected and how.
    pub fn describe(&self, listen: SocketAddr) -> Vec<String> {
        let mut lines = Vec::new();
        match &self.producer_token {
            Some(_) => lines.push("producer API at /v1/streams: bearer secret required".to_owned()),
            None => lines.push(format!(
                "producer API at /v1/streams: no producer secret configured, so it answers loopback clients only \
                 (add --producer-token-file FILE or {PRODUCER_TOKEN_ENV} to produce from elsewhere)"
            )),
        }
        match (&self.read_secret, self.open_reads || crate::loopback::is_loopback(listen.ip())) {
            (Some(_), _) => lines.push("readers: a signed read token is required".to_owned()),
            (None, true) => lines.push(format!(
                "readers: open (no read-token secret); add --read-token-secret-file FILE or {READ_SECRET_ENV} to require tokens"
            )),
            (None, false) => {}
        }
        lines.extend(self.allowed_origins.describe());
        lines
    }
}

/// The bearer credential of a request, if it has one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
}

/// The one read check: the request's bearer token, verified for `stream_id` now.
fn check_bearer_token(secret: &Secret, headers: &HeaderMap, stream_id: &str) -> Result<Claims, Denied> {
    let presented = bearer(headers).ok_or(Denied::Missing)?;
    token::verify(secret.bytes(), presented, stream_id, token::unix_now())
}

/// The plane's authorizer when read tokens are required: the caller is an [`HttpCaller`], the
/// token is its bearer credential.
struct ReadAuthorizer {
    secret: Secret,
}

#[async_trait]
impl Authorizer for ReadAuthorizer {
    async fn authorize(&self, request: AuthRequest<'_>) -> bool {
        let Some(caller) = request.user::<HttpCaller>() else { return false };
        match check_bearer_token(&self.secret, &caller.headers, request.stream_id) {
            Ok(_) => true,
            Err(denied) => {
                tracing::debug!(reason = denied.as_str(), "read token refused");
                false
            }
        }
    }
}

/// `routes` as every reader route is served: a `?token=` read as the bearer token (an
/// `EventSource` cannot set headers), and, outside that check (a preflight carries no token),
/// CORS for the allowed origins.
pub fn reader_routes<S: Clone + Send + Sync + 'static>(routes: axum::Router<S>, access: &Access) -> axum::Router<S> {
    let routes = routes
        .route_layer(axum::middleware::from_fn_with_state(Arc::new(access.clone()), guard_open_reads))
        .route_layer(axum::middleware::from_fn(token_from_query));
    match access.allowed_origins.layer() {
        Some(cors) => routes.layer(cors),
        None => routes,
    }
}

/// Middleware for reader routes without a read-token secret: what a web page could send is
/// refused (crate::browser). A cancel (a change, which a page can post without a preflight) from
/// a page that is neither on this machine nor on an allowed origin, always. A read only when its
/// `Host` names another machine (a rebound domain), and only while reads are open because the
/// server listens on loopback: a page on another origin cannot read the answer anyway (no CORS
/// header names it), and `--open-reads` opens reads to every client on purpose, under whatever
/// name it is reached.
async fn guard_open_reads(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    if access.read_secret.is_none() {
        let risk = crate::browser::page_risk(request.headers(), &access.allowed_origins, false);
        let refused = match risk {
            _ if request.method() != axum::http::Method::GET => risk.is_some(),
            Some(crate::browser::PageRisk::ForeignHost) => !access.open_reads,
            _ => false,
        };
        if refused {
            tracing::debug!(kind = risk.map(|r| r.kind()), "a request a web page could have sent was refused");
            return crate::http::forbidden();
        }
    }
    next.run(request).await
}

/// Middleware for reader routes: a `token` query parameter becomes the `Authorization: Bearer`
/// header when the request has none, so one check serves both carriers.
pub async fn token_from_query(mut request: Request, next: Next) -> Response {
    if !request.headers().contains_key(header::AUTHORIZATION) {
        let query = request.uri().query().unwrap_or("");
        let token = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "token").map(|(_, v)| v.into_owned());
        // A token that cannot be a header value cannot be valid either: it is left out, and the
        // request is refused as one without a token.
        if let Some(value) = token.and_then(|t| HeaderValue::from_str(&format!("Bearer {t}")).ok()) {
            request.headers_mut().insert(header::AUTHORIZATION, value);
        }
    }
    next.run(request).await
}

/// Middleware for the producer API: the bearer secret, or a loopback peer when none is set.
pub async fn require_producer(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    if let Some(refused) = producer_refusal(&access, request.headers(), peer, request.uri().path()) {
        return refused;
    }
    next.run(request).await
}

/// Why a producer request from `peer` with `headers` to `path` is refused, as the answer to give;
/// `None` when it may go on. The producer API's one check, for the router
/// ([`require_producer`]) and for the append shortcut (`crate::producer`).
pub fn producer_refusal(
    access: &Access,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    path: &str,
) -> Option<Response> {
    let allowed = match &access.producer_token {
        Some(secret) => bearer(headers).is_some_and(|t| bool::from(t.as_bytes().ct_eq(secret.bytes()))),
        None => {
            if !peer.is_some_and(|p| crate::loopback::is_loopback(p.ip())) {
                return Some(refuse(
                    "loopback_only",
                    "no producer secret is configured, so the producer API answers loopback clients only",
                ));
            }
            // Trust rests on the peer being this machine, which every page in a browser on it
            // is too. The producer API answers no page, so no origin is allowed here.
            let json_body = path.ends_with("/open") || path.ends_with("/fail");
            if let Some(risk) = crate::browser::page_risk(headers, &AllowedOrigins::SameOrigin, json_body) {
                return Some(refuse(risk.kind(), risk.message()));
            }
            true
        }
    };
    (!allowed).then(|| refuse("unauthorized", "the producer API needs Authorization: Bearer <producer secret>"))
}

fn refuse(kind: &'static str, message: &str) -> Response {
    let status = match kind {
        "unauthorized" => StatusCode::UNAUTHORIZED,
        "simple_content_type" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        _ => StatusCode::FORBIDDEN,
    };
    crate::refusal::refuse(status, kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_secrets_are_refused_and_trailing_newlines_trimmed() {
        assert!(Secret::new(b"short\n", "x").is_err());
        let s = Secret::new(b"0123456789abcdef0123456789abcdef\r\n", "x").unwrap();
        assert_eq!(s.bytes(), b"0123456789abcdef0123456789abcdef");
        assert_eq!(format!("{s:?}"), "Secret(..)");
    }

    #[test]
    fn open_reads_need_loopback_or_the_flag() {
        let open = Access::default();
        assert!(open.check_listen("127.0.0.1:1".parse().unwrap()).is_ok());
        assert!(open.check_listen("[::1]:1".parse().unwrap()).is_ok());
        let err = open.check_listen("0.0.0.0:1".parse().unwrap()).unwrap_err();
        assert!(err.contains("--read-token-secret-file") && err.contains("--open-reads"), "{err}");
        let flagged = Access { open_reads: true, ..Access::default() };
        assert!(flagged.check_listen("0.0.0.0:1".parse().unwrap()).is_ok());
        let secret = Secret::new(&[7; 32], "x").unwrap();
        let signed = Access { read_secret: Some(secret), ..Access::default() };
        assert!(signed.check_listen("0.0.0.0:1".parse().unwrap()).is_ok());
    }

    /// Status of `GET /p` behind [`require_producer`], from `peer`, with `authorization`.
    async fn producer_status(access: Access, peer: &str, authorization: Option<&str>) -> StatusCode {
        use tower::ServiceExt as _;
        let router = axum::Router::new()
            .route("/p", axum::routing::get(|| async { "ok" }))
            .route_layer(axum::middleware::from_fn_with_state(Arc::new(access), require_producer));
        let mut request = axum::http::Request::builder().uri("/p");
        if let Some(value) = authorization {
            request = request.header(header::AUTHORIZATION, value);
        }
        let mut request = request.body(axum::body::Body::empty()).unwrap();
        request.extensions_mut().insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
        router.oneshot(request).await.unwrap().status()
    }

    #[tokio::test]
    async fn without_a_secret_the_producer_api_answers_loopback_peers_only() {
        let open = Access::default();
        assert_eq!(producer_status(open.clone(), "127.0.0.1:5", None).await, StatusCode::OK);
        assert_eq!(producer_status(open.clone(), "[::1]:5", None).await, StatusCode::OK);
        assert_eq!(producer_status(open.clone(), "10.1.2.3:5", None).await, StatusCode::FORBIDDEN);
        assert_eq!(producer_status(open, "[2001:db8::1]:5", Some("Bearer x")).await, StatusCode::FORBIDDEN);
    }

    #[tokio::test]
    async fn with_a_secret_the_producer_api_needs_it_from_everywhere() {
        let secret = "0123456789abcdef0123456789abcdef";
        let access = Access { producer_token: Some(Secret::new(secret.as_bytes(), "x").unwrap()), ..Access::default() };
        let bearer = format!("Bearer {secret}");
        assert_eq!(producer_status(access.clone(), "10.1.2.3:5", Some(&bearer)).await, StatusCode::OK);
        assert_eq!(producer_status(access.clone(), "127.0.0.1:5", None).await, StatusCode::UNAUTHORIZED);
        let wrong = format!("Bearer {}x", &secret[..31]);
        assert_eq!(producer_status(access.clone(), "127.0.0.1:5", Some(&wrong)).await, StatusCode::UNAUTHORIZED);
        let longer = format!("Bearer {secret}0");
        assert_eq!(producer_status(access, "127.0.0.1:5", Some(&longer)).await, StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn bearer_reads_the_scheme_case_insensitively() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer abc"));
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), None);
    }
}
