//! What a web page in a browser on this machine can make it send: the rule that keeps the
//! loopback default (no producer secret, or reads open because the server listens on loopback)
//! from being an open door for every page a user has open.
//!
//! A page cannot read another origin's answers, but it can send: a `fetch` with `mode:
//! 'no-cors'` posts a body of a "simple" content type without asking first, and a page on a
//! domain the attacker re-points at 127.0.0.1 (DNS rebinding) reaches the server as if it were
//! its own origin, with its own name in `Host`. Programs that are not browsers (curl, a Python
//! or Node backend) send neither `Origin` nor `Sec-Fetch-Site`, and name the server by the
//! address they connect to.
//!
//! Guarantees: [`page_risk`] refuses (a) a `Host` that is not a loopback name or address, (b) a
//! `Sec-Fetch-Site` of `cross-site`, (c) an `Origin` that is neither a loopback origin nor one of
//! the allowed origins, (d) when the route takes JSON, a content type a page may send without a
//! preflight (`text/plain`, form encodings). It is pure: headers in, a stable reason out.

use axum::http::{header, HeaderMap};

use crate::cors::AllowedOrigins;

/// Why a request that a page could have sent is refused; each is the `kind` of the refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageRisk {
    /// `Host` names another machine: a page on a rebound domain.
    ForeignHost,
    /// A page on another site sent it (`Sec-Fetch-Site` or `Origin` says so).
    CrossSite,
    /// A body a page may post without a preflight, on a route that takes JSON.
    SimpleContentType,
}

impl PageRisk {
    pub fn kind(self) -> &'static str {
        match self {
            PageRisk::ForeignHost => "foreign_host",
            PageRisk::CrossSite => "cross_site",
            PageRisk::SimpleContentType => "simple_content_type",
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            PageRisk::ForeignHost => {
                "the Host header names another machine; without a secret this server answers requests addressed to \
                 localhost, 127.0.0.1 or [::1] only"
            }
            PageRisk::CrossSite => {
                "a page on another site sent this; without a secret this server does not act for other sites' pages"
            }
            PageRisk::SimpleContentType => "send the JSON body with Content-Type: application/json",
        }
    }
}

/// The risk `headers` show (see the module guarantees); `json_body` for routes whose body is
/// JSON.
pub fn page_risk(headers: &HeaderMap, allowed: &AllowedOrigins, json_body: bool) -> Option<PageRisk> {
    let text = |name: header::HeaderName| headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"));
    if let Some(host) = text(header::HOST) {
        if !crate::loopback::is_loopback_host(host) {
            return Some(PageRisk::ForeignHost);
        }
    }
    if let Some(origin) = text(header::ORIGIN) {
        if !is_loopback_origin(origin) && !allows(allowed, origin) {
            return Some(PageRisk::CrossSite);
        }
    } else if text(header::HeaderName::from_static("sec-fetch-site"))
        .is_some_and(|s| s.eq_ignore_ascii_case("cross-site"))
    {
        // An allowed origin's request carries its `Origin`, checked above; this is a browser's
        // cross-site request that did not say where it came from.
        return Some(PageRisk::CrossSite);
    }
    if json_body {
        let essence = text(header::CONTENT_TYPE).map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase());
        if matches!(
            essence.as_deref(),
            Some("text/plain" | "application/x-www-form-urlencoded" | "multipart/form-data")
        ) {
            return Some(PageRisk::SimpleContentType);
        }
    }
    None
}

fn allows(allowed: &AllowedOrigins, origin: &str) -> bool {
    match allowed {
        AllowedOrigins::SameOrigin => false,
        AllowedOrigins::Any => true,
        AllowedOrigins::List(list) => list.iter().any(|o| o.as_bytes().eq_ignore_ascii_case(origin.as_bytes())),
    }
}

/// An origin (`scheme://host[:port]`) on this machine.
fn is_loopback_origin(origin: &str) -> bool {
    origin.split_once("://").is_some_and(|(scheme, host)| {
        matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") && crate::loopback::is_loopback_host(host)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.insert(*name, HeaderValue::from_static(value));
        }
        h
    }

    #[test]
    fn programs_on_this_machine_pass() {
        let same = AllowedOrigins::SameOrigin;
        for host in ["127.0.0.1:8787", "localhost:8787", "LOCALHOST", "[::1]:8787", "127.8.9.1", "[::ffff:127.0.0.1]:1"]
        {
            let h = headers(&[("host", host), ("content-type", "application/json")]);
            assert_eq!(page_risk(&h, &same, true), None, "{host}");
        }
        assert_eq!(page_risk(&HeaderMap::new(), &same, true), None);
        // The server's own page (the demo's), and another local page.
        let own = headers(&[
            ("host", "127.0.0.1:8787"),
            ("origin", "http://127.0.0.1:8787"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert_eq!(page_risk(&own, &same, false), None);
        let dev = headers(&[
            ("host", "localhost:8787"),
            ("origin", "http://localhost:5173"),
            ("sec-fetch-site", "same-site"),
        ]);
        assert_eq!(page_risk(&dev, &same, false), None);
    }

    #[test]
    fn pages_elsewhere_are_refused() {
        let same = AllowedOrigins::SameOrigin;
        let rebound = headers(&[("host", "attacker.example:8787")]);
        assert_eq!(page_risk(&rebound, &same, false), Some(PageRisk::ForeignHost));
        for host in ["127.0.0.1.attacker.example", "localhost.attacker.example:80", "[::2]:1", "[::1]x", "10.0.0.1"] {
            assert_eq!(page_risk(&headers(&[("host", host)]), &same, false), Some(PageRisk::ForeignHost), "{host}");
        }
        let no_cors =
            headers(&[("host", "127.0.0.1:8787"), ("origin", "https://evil.example"), ("content-type", "text/plain")]);
        assert_eq!(page_risk(&no_cors, &same, true), Some(PageRisk::CrossSite));
        let opaque = headers(&[("host", "127.0.0.1:8787"), ("origin", "null")]);
        assert_eq!(page_risk(&opaque, &same, false), Some(PageRisk::CrossSite));
        let unsaid = headers(&[("host", "127.0.0.1:8787"), ("sec-fetch-site", "cross-site")]);
        assert_eq!(page_risk(&unsaid, &same, false), Some(PageRisk::CrossSite));
        let form = headers(&[("host", "127.0.0.1"), ("content-type", "application/x-www-form-urlencoded")]);
        assert_eq!(page_risk(&form, &same, true), Some(PageRisk::SimpleContentType));
        assert_eq!(page_risk(&form, &same, false), None, "a text route takes any body");
        let plain = headers(&[("content-type", "Text/Plain; charset=utf-8")]);
        assert_eq!(page_risk(&plain, &same, true), Some(PageRisk::SimpleContentType));
    }

    #[test]
    fn allowed_origins_pass() {
        let list = AllowedOrigins::parse(&["https://chat.example.com".to_owned()]).unwrap();
        let h = headers(&[
            ("host", "127.0.0.1:8787"),
            ("origin", "https://chat.example.com"),
            ("sec-fetch-site", "cross-site"),
        ]);
        assert_eq!(page_risk(&h, &list, false), None);
        assert_eq!(page_risk(&h, &AllowedOrigins::SameOrigin, false), Some(PageRisk::CrossSite));
    }
}
