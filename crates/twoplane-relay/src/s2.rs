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
//! The URL is the endpoint serving both the account API (basins) and the basin API (streams),
//! like `http://127.0.0.1:57080` for s2-lite; the basin of a stream request goes in the
//! `s2-basin` header. An access token, when needed, is given as the URL's password (or user):
//! `http://:TOKEN@host:port`. Plain HTTP only for now (the crate is built without TLS).

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{header, StatusCode};
use serde::Deserialize;
use serde_json::json;

use crate::names::BasinName;
use crate::types::{Append, LogError, LogStore};

/// How long one request may take before it counts as unavailable.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an S2 URL cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum S2UrlError {
    #[error("not an http:// URL (S2 endpoints look like http://127.0.0.1:57080)")]
    NotHttp,
    #[error("the S2 URL has no host")]
    NoHost,
}

/// A [`LogStore`] on an S2 endpoint.
#[derive(Clone)]
pub struct S2LogStore {
    client: reqwest::Client,
    /// `scheme://host:port/path` without credentials, and without a trailing slash.
    endpoint: Arc<str>,
    token: Option<Arc<str>>,
}

impl fmt::Debug for S2LogStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S2LogStore")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl S2LogStore {
    /// A store on `url` (see the module header for its form). Nothing is contacted yet.
    pub fn new(url: &str) -> Result<S2LogStore, S2UrlError> {
        let (endpoint, token) = split_url(url)?;
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            // Building a client without TLS or proxies configured only fails if the system
            // cannot start its resolver; report it like an unreachable host, on first use.
            .unwrap_or_else(|_| reqwest::Client::new());
        Ok(S2LogStore { client, endpoint: endpoint.into(), token: token.map(Into::into) })
    }

    /// The endpoint without credentials (safe to log and to show in status).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn request(&self, method: reqwest::Method, path: &str, basin: Option<&BasinName>) -> reqwest::RequestBuilder {
        let mut req = self.client.request(method, format!("{}/v1{path}", self.endpoint));
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
            let response = self.request(reqwest::Method::GET, &path, Some(basin)).send().await.map_err(transport)?;
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
        let response = self
            .request(reqwest::Method::POST, "/streams", Some(basin))
            .json(&json!({ "stream": stream }))
            .send()
            .await
            .map_err(transport)?;
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
            .map_err(transport)?;
        let status = response.status();
        if status.is_success() {
            let ack: AppendAck = response.json().await.map_err(|e| LogError::Unavailable(scrub(&e)))?;
            return Ok(Ok(Append::Appended { start: ack.start.seq_num, end: ack.end.seq_num }));
        }
        if status == StatusCode::PRECONDITION_FAILED {
            let text = response.text().await.map_err(transport)?;
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
    async fn append(
        &self,
        basin: &BasinName,
        stream: &str,
        match_seq: u64,
        records: &[Arc<str>],
    ) -> Result<Append, LogError> {
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
            .map_err(transport)?;
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
        let response =
            self.request(reqwest::Method::POST, "/basins", None).json(&body).send().await.map_err(transport)?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        match failure(status, response).await {
            Failure::Code(code, _) if code == "resource_already_exists" => Ok(()),
            other => Err(other.into_error(basin)),
        }
    }
}

/// A failed response: S2's error code and message when it sent them, else the bare status.
#[derive(Debug)]
enum Failure {
    Code(String, String),
    Status(StatusCode, String),
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
    match serde_json::from_str::<ErrorInfo>(&text) {
        Ok(info) => Failure::Code(info.code, info.message),
        Err(_) => Failure::Status(status, text),
    }
}

/// A transport failure, without the request URL (reqwest's Display includes it, and with it
/// whatever the caller passed; the URL here never holds credentials, but keep errors short).
fn transport(error: reqwest::Error) -> LogError {
    LogError::Unavailable(scrub(&error))
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
    let rest = url.strip_prefix("http://").ok_or(S2UrlError::NotHttp)?;
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
    Ok((format!("http://{host}{path}"), token))
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
        assert_eq!(S2LogStore::new("https://h").unwrap_err(), S2UrlError::NotHttp);
        assert_eq!(S2LogStore::new("http://u:p@/x").unwrap_err(), S2UrlError::NoHost);
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
