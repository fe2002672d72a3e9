//! Cross-origin reads: which browser origins may read streams from a page on another origin
//! (`--allow-origin`).
//!
//! Guarantees:
//! - Without `--allow-origin` no CORS header is sent, so browsers let only same-origin pages read
//!   the answers (as before this option existed).
//! - With it, only the reader routes (the SSE endpoint and the reader's cancel) answer CORS: a
//!   listed origin gets `access-control-allow-origin` with its own value on every answer,
//!   refusals included (so a page can tell a 403 from a network failure), and preflights for
//!   `GET`/`POST` with `authorization`, `last-event-id` or `content-type` are answered before any
//!   token check (a preflight carries no credentials). The producer API never answers CORS: it
//!   is for servers, not pages.
//! - Credentials (cookies) are never allowed: read tokens travel in the `token` query parameter
//!   or the `authorization` header, so a reader needs no `withCredentials` (with it, the browser
//!   would withhold the answer).
//! - Origins are checked when the server starts: a scheme, `://`, a host and an optional port,
//!   nothing after it (no path, not even a trailing slash), and no default port (browsers leave
//!   it out of the `Origin` they send, so such an entry would never match). Scheme and host are
//!   compared in lower case, as browsers send them. `*` allows every origin (answers then carry
//!   `access-control-allow-origin: *`) and stands alone.

use std::time::Duration;

use axum::http::{header, HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// How long a browser may reuse a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(600);

/// The origins whose pages may read (`--allow-origin`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AllowedOrigins {
    /// Same-origin pages only: no CORS header is sent.
    #[default]
    SameOrigin,
    /// Every origin (`*`).
    Any,
    /// These origins, as browsers serialize them.
    List(Vec<HeaderValue>),
}

impl AllowedOrigins {
    /// The `--allow-origin` values (none: same origin only), or a sentence naming the bad one.
    pub fn parse(values: &[String]) -> Result<AllowedOrigins, String> {
        if values.is_empty() {
            return Ok(AllowedOrigins::SameOrigin);
        }
        if values.iter().any(|v| v == "*") {
            if values.len() > 1 {
                return Err("--allow-origin '*' allows every origin; give it alone, without other origins".into());
            }
            return Ok(AllowedOrigins::Any);
        }
        values.iter().map(|v| origin(v)).collect::<Result<_, _>>().map(AllowedOrigins::List)
    }

    /// The layer for the reader routes; `None` for same-origin only.
    pub fn layer(&self) -> Option<CorsLayer> {
        let origins = match self {
            AllowedOrigins::SameOrigin => return None,
            AllowedOrigins::Any => AllowOrigin::any(),
            AllowedOrigins::List(list) => AllowOrigin::list(list.iter().cloned()),
        };
        Some(
            CorsLayer::new()
                .allow_origin(origins)
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([header::AUTHORIZATION, HeaderName::from_static("last-event-id"), header::CONTENT_TYPE])
                .max_age(PREFLIGHT_MAX_AGE),
        )
    }

    /// A line for the startup log, when cross-origin reads are allowed.
    pub fn describe(&self) -> Option<String> {
        match self {
            AllowedOrigins::SameOrigin => None,
            AllowedOrigins::Any => Some("readers: pages on every origin may read (--allow-origin '*')".into()),
            AllowedOrigins::List(list) => {
                let names: Vec<&str> = list.iter().filter_map(|v| v.to_str().ok()).collect();
                Some(format!("readers: pages on {} may read (--allow-origin)", names.join(", ")))
            }
        }
    }
}

/// One origin as a browser sends it in `Origin`, or why `value` cannot be one.
fn origin(value: &str) -> Result<HeaderValue, String> {
    let bad = |why: &str| Err(format!("--allow-origin {value:?}: {why}"));
    let Some((scheme, authority)) = value.split_once("://") else {
        return bad("an origin is a scheme, \"://\" and a host, like https://app.example.com");
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return bad("the scheme is not one");
    }
    if authority.is_empty() {
        return bad("the host is missing");
    }
    if let Some(c) = authority.chars().find(|c| matches!(c, '/' | '?' | '#' | '@') || !c.is_ascii_graphic()) {
        let why = if c == '/' {
            "an origin has no path, not even a trailing slash"
        } else {
            "an origin is a scheme, a host and a port, nothing else"
        };
        return bad(why);
    }
    let lower = value.to_ascii_lowercase();
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" | "wss" => Some(":443"),
        "http" | "ws" => Some(":80"),
        _ => None,
    };
    if default_port.is_some_and(|port| lower.ends_with(port)) {
        return bad("browsers leave the default port out of the origin they send; remove it");
    }
    HeaderValue::from_str(&lower).or_else(|_| bad("not a header value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Result<AllowedOrigins, String> {
        AllowedOrigins::parse(&values.iter().map(|v| v.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn origins_are_kept_as_browsers_send_them() {
        assert_eq!(parse(&[]), Ok(AllowedOrigins::SameOrigin));
        assert_eq!(parse(&["*"]), Ok(AllowedOrigins::Any));
        let list =
            parse(&["https://App.Example.com", "http://127.0.0.1:5173", "http://[::1]:8080", "tauri://localhost"]);
        let expected = ["https://app.example.com", "http://127.0.0.1:5173", "http://[::1]:8080", "tauri://localhost"];
        assert_eq!(list, Ok(AllowedOrigins::List(expected.iter().map(|v| HeaderValue::from_static(v)).collect())));
    }

    #[test]
    fn the_startup_log_names_the_origins() {
        assert_eq!(parse(&[]).unwrap().describe(), None);
        assert_eq!(
            parse(&["*"]).unwrap().describe().as_deref(),
            Some("readers: pages on every origin may read (--allow-origin '*')")
        );
        assert_eq!(
            parse(&["https://A.example", "http://localhost:5173"]).unwrap().describe().as_deref(),
            Some("readers: pages on https://a.example, http://localhost:5173 may read (--allow-origin)")
        );
    }

    #[test]
    fn what_can_never_match_is_refused_with_the_reason() {
        for (value, reason) in [
            ("https://app.example.com/", "trailing slash"),
            ("https://app.example.com/chat", "no path"),
            ("app.example.com", "scheme"),
            ("https://", "host is missing"),
            ("https://app.example.com:443", "default port"),
            ("http://app.example.com:80", "default port"),
            ("https://user@app.example.com", "nothing else"),
            ("https://app.example.com?x", "nothing else"),
            ("null", "scheme"),
            ("1http://x", "scheme"),
        ] {
            let err = parse(&[value]).unwrap_err();
            assert!(err.contains(reason) && err.contains(value), "{value}: {err}");
        }
        let err = parse(&["*", "https://a.example"]).unwrap_err();
        assert!(err.contains("alone"), "{err}");
        // A non-default port stays.
        assert!(parse(&["https://app.example.com:8443"]).is_ok());
    }
}
