//! The S2 log store: [`LogStore`] over S2's REST API (version 1), as served by `s2-lite` (the
//! open-source server) and the hosted service.
//!
//! Guarantees:
//! - An append carries `match_seq_num`, so it writes only when the stream's tail is the expected
//!   one; a mismatch writes nothing and reports the actual tail ([`Append::TailMismatch`]).
//! - A stream that was never written reads as tail 0 (S2 answers 404 for it). Basins are created
//!   with `create_stream_on_append`, so the first append creates the stream; in a basin made
//!   without that setting, a missing stream is created and the append retried once.
//! - Errors are typed ([`LogError`]): a missing basin is [`LogError::BasinMissing`], transport
//!   failures and server-side failures (5xx, 408, 429) are [`LogError::Unavailable`], the rest
//!   [`LogError::Rejected`]. No error, log line or `Debug` output carries the URL's credentials:
//!   the access token is taken out of the URL when the store is built and only ever sent as the
//!   `Authorization` header.
//!
//! The URL is the account endpoint (basins). Stream requests go to the same endpoint with the
//! basin in the `s2-basin` header, as s2-lite serves them (`http://127.0.0.1:57080`), or, when a
//! basin URL is given ([`S2Options::basin_url`], a template holding `{basin}`), to that basin's
//! own endpoint, as S2's hosted service serves them (account `https://aws.s2.dev`, basins
//! `https://{basin}.b.s2.dev`). An access token, when needed, is given as the URL's password (or
//! user): `https://:TOKEN@aws.s2.dev`; it is sent to both endpoints.
//!
//! `https://` endpoints are verified: the certificate chain must lead to the system's CA
//! certificates, or to those of [`S2Options::ca_file`] (a private endpoint), and must name the
//! host (the rules of `verify-full` for PostgreSQL, from the same code: `twoplane_pg`). A
//! certificate that does not verify, a server that does not speak TLS and a refused token each
//! say so in their error.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{header, StatusCode};
use serde::Deserialize;
use serde_json::json;

use crate::names::BasinName;
use crate::types::{Append, LogError, LogStore, LogTarget};

/// How long one request may take before it counts as unavailable.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an S2 URL cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum S2UrlError {
    #[error("not an http:// or https:// URL (s2-lite: http://127.0.0.1:57080; S2's service: https://aws.s2.dev)")]
    NotHttp,
    #[error("the S2 URL has no host")]
    NoHost,
    #[error(
        "the basin URL must be an http:// or https:// URL holding {{basin}} (S2's service: https://{{basin}}.b.s2.dev)"
    )]
    BadBasinUrl,
    #[error("a CA file is given but no S2 URL is https://")]
    CaWithoutTls,
    #[error("TLS setup: {0}")]
    Tls(String),
}

/// How to reach S2 beyond its URL.
#[derive(Clone, Debug, Default)]
pub struct S2Options {
    /// Trusted CA certificates (PEM) for `https://` endpoints, instead of the system's.
    pub ca_file: Option<PathBuf>,
    /// The basin endpoint, a URL holding `{basin}` (`https://{basin}.b.s2.dev`); without it,
    /// stream requests go to the account endpoint with an `s2-basin` header (s2-lite).
    pub basin_url: Option<String>,
}

/// A [`LogStore`] on an S2 endpoint.
#[derive(Clone)]
pub struct S2LogStore {
    client: reqwest::Client,
    /// `scheme://host:port/path` without credentials, and without a trailing slash.
    endpoint: Arc<str>,
    /// The basin endpoint's template (`{basin}` in it), same form as `endpoint`.
    basin_url: Option<Arc<str>>,
    token: Option<Arc<str>>,
    /// What `https://` certificates are checked against, for messages.
    trust: Arc<str>,
}

impl fmt::Debug for S2LogStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S2LogStore")
            .field("endpoint", &self.endpoint)
            .field("basin_url", &self.basin_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl S2LogStore {
    /// A store on `url` (see the module header for its form), `https://` checked against the
    /// system's CA certificates. Nothing is contacted yet.
    pub fn new(url: &str) -> Result<S2LogStore, S2UrlError> {
        S2LogStore::with_options(url, &S2Options::default())
    }

    /// A store on `url` with `options`. Nothing is contacted yet; a CA file is read now.
    pub fn with_options(url: &str, options: &S2Options) -> Result<S2LogStore, S2UrlError> {
        let (endpoint, token) = split_url(url)?;
        let basin_url = match &options.basin_url {
            Some(template) => {
                let (shown, _) = split_url(template).map_err(|_| S2UrlError::BadBasinUrl)?;
                if !shown.contains("{basin}") {
                    return Err(S2UrlError::BadBasinUrl);
                }
                Some(shown)
            }
            None => None,
        };
        let tls = endpoint.starts_with("https://") || basin_url.as_deref().is_some_and(|b| b.starts_with("https://"));
        if options.ca_file.is_some() && !tls {
            return Err(S2UrlError::CaWithoutTls);
        }
        let mut builder =
            reqwest::Client::builder().timeout(REQUEST_TIMEOUT).pool_idle_timeout(Duration::from_secs(30));
        let trust = match &options.ca_file {
            Some(path) => format!("the CA file {}", path.display()),
            None => "the system's CA certificates".to_owned(),
        };
        let config = if tls {
            // Full verification (chain and name), from the same rules as PostgreSQL's
            // verify-full: one TLS configuration for every connection the relay makes.
            twoplane_pg::verifying_client_config(options.ca_file.as_deref()).map_err(S2UrlError::Tls)?
        } else {
            // Plain endpoints: reqwest still wants a TLS configuration (it has no provider of its
            // own here); one that trusts nothing, so a redirect to https:// fails closed.
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| S2UrlError::Tls(e.to_string()))?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        };
        builder = builder.tls_backend_preconfigured(config);
        // reqwest refuses a preconfigured rustls of another version than its own: a build
        // problem, reported rather than replaced by a client that cannot speak TLS.
        let client = builder.build().map_err(|e| S2UrlError::Tls(scrub(&e)))?;
        Ok(S2LogStore {
            client,
            endpoint: endpoint.into(),
            basin_url: basin_url.map(Into::into),
            token: token.map(Into::into),
            trust: trust.into(),
        })
    }

    /// `url` as it may be shown: its endpoint without credentials (the token may be the URL's
    /// password or its user), or a placeholder when it is not an S2 URL.
    pub fn shown(url: &str) -> String {
        split_url(url).map(|(endpoint, _)| endpoint).unwrap_or_else(|_| "(not an S2 URL)".to_owned())
    }

    /// One request to the account endpoint, to learn early what will not fix itself: a refused
    /// token is [`LogError::Rejected`], a transport failure [`LogError::Unavailable`] (its words
    /// start with `TLS failed` when TLS is what failed). Any other answer, whatever its status,
    /// shows the endpoint reachable and its certificate good.
    pub async fn check(&self) -> Result<(), LogError> {
        let response =
            self.request(reqwest::Method::GET, "/basins?limit=1", None).send().await.map_err(|e| self.transport(e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        match failure(status, response).await {
            Failure::Token(status, body) => Err(token_refused(status, &body)),
            _ => Ok(()),
        }
    }

    /// The endpoint without credentials (safe to log and to show in status).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Where a request for `basin` goes (the account endpoint when there is no basin).
    fn base(&self, basin: Option<&BasinName>) -> std::borrow::Cow<'_, str> {
        match (basin, &self.basin_url) {
            (Some(basin), Some(template)) => template.replace("{basin}", basin.as_str()).into(),
            _ => (*self.endpoint).into(),
        }
    }

    fn request(&self, method: reqwest::Method, path: &str, basin: Option<&BasinName>) -> reqwest::RequestBuilder {
        let mut req = self.client.request(method, format!("{}/v1{path}", self.base(basin)));
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        if let Some(basin) = basin {
            req = req.header("s2-basin", basin.as_str());
        }
        req.header(header::ACCEPT, "application/json")
    }

    fn stream_path(stream: &str, tail: bool) -> String {
        let mut path = String::from("/streams/");
        path.push_str(&percent_encode(stream));
        path.push_str(if tail { "/records/tail" } else { "/records" });
        path
    }

    /// Every record of a stream, oldest first (reads page by page). For checks and tests: the
    /// relay itself never reads its logs back.
    pub async fn read_all(&self, basin: &BasinName, stream: &str) -> Result<Vec<String>, LogError> {
        let mut out = Vec::new();
        loop {
            let path = format!("{}?seq_num={}&count=1000&wait=0", Self::stream_path(stream, false), out.len());
            let response =
                self.request(reqwest::Method::GET, &path, Some(basin)).send().await.map_err(|e| self.transport(e))?;
            let status = response.status();
            if status == StatusCode::RANGE_NOT_SATISFIABLE {
                return Ok(out); // Reading at the tail: nothing more.
            }
            if !status.is_success() {
                let failure = failure(status, response).await;
                if matches!(&failure, Failure::Code(code, _) if code == "stream_not_found") {
                    return Ok(out);
                }
                return Err(failure.into_error(basin));
            }
            let batch: ReadBatch = response.json().await.map_err(|e| LogError::Unavailable(scrub(&e)))?;
            if batch.records.is_empty() {
                return Ok(out);
            }
            for record in batch.records {
                if record.seq_num != out.len() as u64 {
                    return Err(LogError::Rejected(format!(
                        "read of {stream} returned seq {} at position {}",
                        record.seq_num,
                        out.len()
                    )));
                }
                out.push(record.body);
            }
        }
    }

    /// Creates `stream` in `basin` (for a basin that does not create streams on append).
    async fn create_stream(&self, basin: &BasinName, stream: &str) -> Result<(), LogError> {
        let request = self.request(reqwest::Method::POST, "/streams", Some(basin)).json(&json!({ "stream": stream }));
        self.create(request, basin).await
    }

    /// Sends a create request: made now or made before are both success.
    async fn create(&self, request: reqwest::RequestBuilder, basin: &BasinName) -> Result<(), LogError> {
        let response = request.send().await.map_err(|e| self.transport(e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        match failure(status, response).await {
            Failure::Code(code, _) if code == "resource_already_exists" => Ok(()),
            other => Err(other.into_error(basin)),
        }
    }

    async fn append_once(
        &self,
        basin: &BasinName,
        stream: &str,
        match_seq: u64,
        records: &[Arc<str>],
    ) -> Result<Result<Append, Failure>, LogError> {
        let body = json!({
            "records": records.iter().map(|r| json!({ "body": &**r })).collect::<Vec<_>>(),
            "match_seq_num": match_seq,
        });
        let response = self
            .request(reqwest::Method::POST, &Self::stream_path(stream, false), Some(basin))
            .json(&body)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = response.status();
        if status.is_success() {
            let ack: AppendAck = response.json().await.map_err(|e| LogError::Unavailable(scrub(&e)))?;
            return Ok(Ok(Append::Appended { start: ack.start.seq_num, end: ack.end.seq_num }));
        }
        if status == StatusCode::PRECONDITION_FAILED {
            let text = response.text().await.map_err(|e| self.transport(e))?;
            return match serde_json::from_str::<ConditionFailed>(&text) {
                Ok(ConditionFailed::SeqNumMismatch(tail)) => Ok(Ok(Append::TailMismatch { tail })),
                _ => Err(LogError::Rejected(format!("append condition failed: {}", clip(&text)))),
            };
        }
        Ok(Err(failure(status, response).await))
    }
}

#[async_trait]
impl LogStore for S2LogStore {
    async fn append(&self, at: LogTarget<'_>, records: &[Arc<str>]) -> Result<Append, LogError> {
        let LogTarget { basin, stream, match_seq } = at;
        if records.is_empty() {
            return Err(LogError::Rejected("an append needs at least one record".into()));
        }
        match self.append_once(basin, stream, match_seq, records).await? {
            Ok(append) => Ok(append),
            Err(Failure::Code(code, _)) if code == "stream_not_found" => {
                self.create_stream(basin, stream).await?;
                match self.append_once(basin, stream, match_seq, records).await? {
                    Ok(append) => Ok(append),
                    Err(failure) => Err(failure.into_error(basin)),
                }
            }
            Err(failure) => Err(failure.into_error(basin)),
        }
    }

    async fn check_tail(&self, basin: &BasinName, stream: &str) -> Result<u64, LogError> {
        let response = self
            .request(reqwest::Method::GET, &Self::stream_path(stream, true), Some(basin))
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = response.status();
        if status.is_success() {
            let tail: TailResponse = response.json().await.map_err(|e| LogError::Unavailable(scrub(&e)))?;
            return Ok(tail.tail.seq_num);
        }
        match failure(status, response).await {
            // Never written: no stream, no records.
            Failure::Code(code, _) if code == "stream_not_found" => Ok(0),
            other => Err(other.into_error(basin)),
        }
    }

    async fn ensure_basin(&self, basin: &BasinName) -> Result<(), LogError> {
        let body = json!({
            "basin": basin.as_str(),
            "config": { "create_stream_on_append": true },
        });
        self.create(self.request(reqwest::Method::POST, "/basins", None).json(&body), basin).await
    }
}

/// A failed response: S2's error code and message when it sent them, else the bare status.
#[derive(Debug)]
enum Failure {
    Code(String, String),
    Status(StatusCode, String),
    /// 401 or 403: the access token is missing, wrong, or not allowed this.
    Token(StatusCode, String),
}

impl Failure {
    fn into_error(self, basin: &BasinName) -> LogError {
        match self {
            Failure::Code(code, _) if code == "basin_not_found" => LogError::BasinMissing(basin.to_string()),
            Failure::Code(code, message) => {
                let retryable = matches!(
                    code.as_str(),
                    "request_timeout"
                        | "transaction_conflict"
                        | "rate_limited"
                        | "other"
                        | "server_draining"
                        | "storage"
                        | "hot_server"
                        | "unavailable"
                        | "upstream_timeout"
                        | "basin_deletion_pending"
                );
                let text = format!("{code}: {}", clip(&message));
                if retryable {
                    LogError::Unavailable(text)
                } else {
                    LogError::Rejected(text)
                }
            }
            Failure::Token(status, body) => token_refused(status, &body),
            Failure::Status(status, body) => {
                let text = format!("HTTP {status}: {}", clip(&body));
                if status.is_server_error()
                    || status == StatusCode::REQUEST_TIMEOUT
                    || status == StatusCode::TOO_MANY_REQUESTS
                {
                    LogError::Unavailable(text)
                } else {
                    LogError::Rejected(text)
                }
            }
        }
    }
}

async fn failure(status: StatusCode, response: reqwest::Response) -> Failure {
    let text = response.text().await.unwrap_or_default();
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        return Failure::Token(status, text);
    }
    match serde_json::from_str::<ErrorInfo>(&text) {
        Ok(info) => Failure::Code(info.code, info.message),
        Err(_) => Failure::Status(status, text),
    }
}

impl S2LogStore {
    /// A transport failure, without the request URL (reqwest's Display includes it; the URL
    /// here never holds credentials, but keep errors short), saying what to fix when TLS failed.
    fn transport(&self, error: reqwest::Error) -> LogError {
        let words = scrub(&error);
        LogError::Unavailable(match tls_failure(&error) {
            Some(TlsFailure::Certificate) => format!(
                "TLS failed: the server's certificate does not verify against {} ({words}); give the CA that \
                 signed it (--s2-ca-file) or the host name it was issued for",
                self.trust
            ),
            Some(TlsFailure::Name) => format!(
                "TLS failed: the server's certificate is not issued for this host ({words}); use a host name \
                 or address the certificate carries"
            ),
            Some(TlsFailure::NotTls) => format!(
                "TLS failed: the server did not answer in TLS ({words}); is the endpoint http:// rather than https://?"
            ),
            Some(_) => format!("TLS failed ({words})"),
            None => words,
        })
    }
}

fn token_refused(status: StatusCode, body: &str) -> LogError {
    LogError::Rejected(format!(
        "the access token was refused (HTTP {status}: {}); check the token in the S2 URL (https://:TOKEN@host) \
         and what it is allowed",
        clip(body)
    ))
}

/// How TLS failed, when it is what failed.
#[derive(Debug, PartialEq, Eq)]
enum TlsFailure {
    /// The server's certificate did not verify.
    Certificate,
    /// It verified, but names other hosts.
    Name,
    /// What came back was not TLS (a plain HTTP server, say).
    NotTls,
    Other,
}

/// How TLS failed, from the rustls error among `error`'s causes. The layers between reqwest and
/// rustls do not all expose their cause as a typed source (an I/O error's own `source` skips
/// the error it wraps), so a cause that is not found by type is recognised by rustls's own
/// words, which name the error's variant.
fn tls_failure(error: &reqwest::Error) -> Option<TlsFailure> {
    let classify = |tls: &rustls::Error| match tls {
        rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName | rustls::CertificateError::NotValidForNameContext { .. },
        ) => TlsFailure::Name,
        rustls::Error::InvalidCertificate(_) => TlsFailure::Certificate,
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => TlsFailure::NotTls,
        _ => TlsFailure::Other,
    };
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
            return Some(classify(tls));
        }
        if let Some(tls) = inner.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()?.downcast_ref()) {
            return Some(classify(tls));
        }
        let words = inner.to_string();
        if words.contains("certificate not valid for name") {
            return Some(TlsFailure::Name);
        }
        if words.contains("invalid peer certificate") {
            return Some(TlsFailure::Certificate);
        }
        if words.contains("received corrupt message") || words.contains("received unexpected message") {
            return Some(TlsFailure::NotTls);
        }
        source = inner.source();
    }
    None
}

fn scrub(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else if error.is_decode() {
        "unreadable response"
    } else {
        "request failed"
    };
    let mut source = std::error::Error::source(error);
    let mut detail = String::new();
    while let Some(inner) = source {
        detail = inner.to_string();
        source = inner.source();
    }
    if detail.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {detail}")
    }
}

fn clip(text: &str) -> &str {
    match text.char_indices().nth(300) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// Splits the URL into the endpoint (no credentials, no trailing slash) and the access token.
fn split_url(url: &str) -> Result<(String, Option<String>), S2UrlError> {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme @ ("http" | "https"), rest)) => (scheme, rest),
        _ => return Err(S2UrlError::NotHttp),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], rest[at..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let (userinfo, host) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    if host.is_empty() {
        return Err(S2UrlError::NoHost);
    }
    let token = userinfo.and_then(|info| {
        let (user, password) = info.split_once(':').unwrap_or((info, ""));
        let token = if password.is_empty() { user } else { password };
        (!token.is_empty()).then(|| percent_decode(token))
    });
    Ok((format!("{scheme}://{host}{path}"), token))
}

/// Everything but the unreserved characters of RFC 3986 is percent-encoded, so a stream name
/// (which holds `/`) stays one path segment.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

fn percent_encode(text: &str) -> String {
    utf8_percent_encode(text, PATH_SEGMENT).to_string()
}

fn percent_decode(text: &str) -> String {
    percent_decode_str(text).decode_utf8_lossy().into_owned()
}

#[derive(Deserialize)]
struct ErrorInfo {
    code: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct Position {
    seq_num: u64,
}

#[derive(Deserialize)]
struct AppendAck {
    start: Position,
    end: Position,
}

#[derive(Deserialize)]
struct TailResponse {
    tail: Position,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum ConditionFailed {
    SeqNumMismatch(u64),
    #[allow(dead_code)]
    FencingTokenMismatch(String),
}

#[derive(Deserialize)]
struct ReadBatch {
    #[serde(default)]
    records: Vec<ReadRecord>,
}

#[derive(Deserialize)]
struct ReadRecord {
    seq_num: u64,
    #[serde(default)]
    body: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_the_url_and_never_show() {
        let store = S2LogStore::new("http://user:s3cr%21t@127.0.0.1:57080/").unwrap();
        assert_eq!(store.endpoint(), "http://127.0.0.1:57080");
        assert_eq!(store.token.as_deref(), Some("s3cr!t"));
        assert!(!format!("{store:?}").contains("s3cr"));
        let store = S2LogStore::new("http://tok@h:1/base").unwrap();
        assert_eq!((store.endpoint(), store.token.as_deref()), ("http://h:1/base", Some("tok")));
        assert_eq!(S2LogStore::new("ftp://h").unwrap_err(), S2UrlError::NotHttp);
        assert_eq!(S2LogStore::new("http://u:p@/x").unwrap_err(), S2UrlError::NoHost);
    }

    #[test]
    fn https_and_basin_endpoints_are_taken_and_checked() {
        let store = S2LogStore::new("https://:tok@aws.s2.dev").unwrap();
        assert_eq!((store.endpoint(), store.token.as_deref()), ("https://aws.s2.dev", Some("tok")));
        let basin = BasinName::parse("basin-one").unwrap();
        assert_eq!(store.base(Some(&basin)), "https://aws.s2.dev");
        let hosted = S2Options { basin_url: Some("https://{basin}.b.s2.dev/".into()), ..S2Options::default() };
        let store = S2LogStore::with_options("https://:tok@aws.s2.dev", &hosted).unwrap();
        assert_eq!(store.base(Some(&basin)), "https://basin-one.b.s2.dev");
        assert_eq!(store.base(None), "https://aws.s2.dev");
        let no_slot = S2Options { basin_url: Some("https://b.s2.dev".into()), ..S2Options::default() };
        assert_eq!(S2LogStore::with_options("https://aws.s2.dev", &no_slot).unwrap_err(), S2UrlError::BadBasinUrl);
        let ca = S2Options { ca_file: Some("/nonexistent/ca.pem".into()), ..S2Options::default() };
        assert_eq!(S2LogStore::with_options("http://127.0.0.1:1", &ca).unwrap_err(), S2UrlError::CaWithoutTls);
        let err = S2LogStore::with_options("https://127.0.0.1:1", &ca).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }

    #[test]
    fn stream_names_stay_one_segment() {
        assert_eq!(S2LogStore::stream_path("sessions/a b", true), "/streams/sessions%2Fa%20b/records/tail");
        assert_eq!(percent_decode("a%2Fb%zz%4"), "a/b%zz%4");
    }

    #[test]
    fn error_codes_map_to_kinds() {
        let basin = BasinName::parse("basin-one").unwrap();
        let code = |c: &str| Failure::Code(c.into(), "m".into()).into_error(&basin);
        assert_eq!(code("basin_not_found"), LogError::BasinMissing("basin-one".into()));
        assert!(matches!(code("storage"), LogError::Unavailable(_)));
        assert!(matches!(code("invalid"), LogError::Rejected(_)));
        let status = |s: u16| Failure::Status(StatusCode::from_u16(s).unwrap(), String::new()).into_error(&basin);
        assert!(matches!(status(503), LogError::Unavailable(_)));
        assert!(matches!(status(429), LogError::Unavailable(_)));
        assert!(matches!(status(400), LogError::Rejected(_)));
        let mismatch: ConditionFailed = serde_json::from_str(r#"{"seq_num_mismatch":7}"#).unwrap();
        assert!(matches!(mismatch, ConditionFailed::SeqNumMismatch(7)));
    }
}
