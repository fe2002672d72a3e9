//! Subscribe requests over HTTP (docs/contract.md §4 and §5): reading `streamId` and the join offset
//! out of a GET, and building the URL a reader subscribes with.
//!
//! Guarantees:
//! - [`stream_request_from_http`] never fails and never panics: a missing or garbled parameter
//!   becomes the empty stream id or offset 0, exactly as the JavaScript original behaves
//!   (`URLSearchParams` for the query, `parseInt(x, 10)` for the offset).
//! - `Last-Event-ID` wins over `?from` whenever the header is present, even when it is empty: a
//!   reconnecting `EventSource` sends where it actually got to, while its URL still names where it
//!   first joined.
//! - [`subscribe_url`] (and [`subscribe_url_units`], for a stream id that is a JavaScript string)
//!   is the one definition of the URL a reader subscribes with: the browser reader, the wasm build
//!   and the Node addon all call it, and `tests/vectors/request.json` pins it. The id is escaped as
//!   `encodeURIComponent` escapes it; a lone surrogate, which no URL can carry, is written as
//!   U+FFFD (`%EF%BF%BD`), exactly what the URL parser makes of it.

use crate::error::{Error, ErrorKind, Result};
use crate::jsnum::{self, MAX_SAFE_INTEGER};

/// A parsed subscribe request.
///
/// `from` keeps JavaScript number semantics on purpose (it is what `parseInt` produced, filtered
/// to a finite positive value or 0), so bindings can hand it back unchanged; it may exceed
/// 2^53 - 1 for absurd inputs. Use [`StreamRequest::from_offset`] for an offset to compute with.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamRequest {
    pub stream_id: String,
    pub from: f64,
}

impl StreamRequest {
    /// `from` as an offset, saturated at 2^53 - 1, the largest offset any frame can carry. The
    /// plane clamps a join past the produced length anyway, so saturating loses nothing, and it
    /// keeps later arithmetic on the offset far away from `u64` overflow.
    pub fn from_offset(&self) -> u64 {
        if self.from.is_nan() || self.from <= 0.0 {
            0
        } else if self.from >= MAX_SAFE_INTEGER as f64 {
            MAX_SAFE_INTEGER
        } else {
            // In range and non-negative: the cast truncates any fraction, never wraps.
            self.from as u64
        }
    }
}

/// Read a subscribe request from a GET's URL and its `Last-Event-ID` header (`None` when the
/// header is absent).
///
/// `url` may be absolute (`http://host/path?x=1`) or origin-relative (`/path?x=1`); only its query
/// is read, decoded as `application/x-www-form-urlencoded` like `URLSearchParams` (`+` is a space,
/// percent escapes are decoded, invalid UTF-8 becomes U+FFFD). The FIRST `streamId` and `from`
/// win. The offset text is the header when present, else `from`, else `"0"`, read like
/// `parseInt(text, 10)`; anything that is not a finite number above 0 becomes 0.
pub fn stream_request_from_http(url: &str, last_event_id: Option<&str>) -> StreamRequest {
    let query = query_of(url);
    let mut stream_id: Option<String> = None;
    let mut from_param: Option<String> = None;
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        match name.as_ref() {
            "streamId" if stream_id.is_none() => stream_id = Some(value.into_owned()),
            "from" if from_param.is_none() => from_param = Some(value.into_owned()),
            _ => {}
        }
        if stream_id.is_some() && from_param.is_some() {
            break;
        }
    }
    let raw = last_event_id.or(from_param.as_deref()).unwrap_or("0");
    let parsed = jsnum::parse_int10(raw);
    let from = if parsed.is_finite() && parsed > 0.0 { parsed } else { 0.0 };
    StreamRequest { stream_id: stream_id.unwrap_or_default(), from }
}

/// [`stream_request_from_http`] for a request as the fetch API hands it over, whose URL is always
/// absolute: a relative URL is refused with [`ErrorKind::InvalidUrl`], as the TypeScript original
/// refused it (it parsed the URL with `new URL(url)` and no base, which throws). The server side
/// and Node's `IncomingMessage` carry origin-relative paths and use [`stream_request_from_http`].
///
/// Only the scheme is checked ([`is_absolute_url`]); an absolute URL that the WHATWG parser would
/// still refuse (`http://` with no host, a bad port) is read like any other, since only its query
/// matters here.
pub fn stream_request_from_fetch(url: &str, last_event_id: Option<&str>) -> Result<StreamRequest> {
    if !is_absolute_url(url) {
        return Err(Error::new(
            ErrorKind::InvalidUrl,
            format!(
                "a fetch request's URL must be absolute (scheme://host/...), got {} characters without a scheme",
                url.chars().count()
            ),
        ));
    }
    Ok(stream_request_from_http(url, last_event_id))
}

/// Whether `url` starts with a scheme, the test that separates an absolute URL from a relative
/// reference: after the parser's own clean-up (C0 controls and spaces trimmed, tabs and newlines
/// deleted), an ASCII letter, then letters, digits, `+`, `-` or `.`, then `:`.
pub fn is_absolute_url(url: &str) -> bool {
    let mut chars = as_parsed(url);
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    for c in chars {
        match c {
            ':' => return true,
            c if c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.') => {}
            _ => return false,
        }
    }
    false
}

/// The characters of `url` that the WHATWG URL parser looks at: it trims leading and trailing C0
/// controls and spaces and deletes every tab and newline before anything else. Doing the same
/// keeps `?streamId=a%20` and a header-mangled `?streamId=a\t` agreeing with `new URL(...)`.
fn as_parsed(url: &str) -> impl Iterator<Item = char> + '_ {
    url.trim_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\n' | '\r'))
}

/// The query part of a URL as the WHATWG URL parser would see it ([`as_parsed`]): after the first
/// `?` that is not inside the fragment, up to the fragment.
fn query_of(url: &str) -> String {
    let cleaned: String = as_parsed(url).collect();
    let before_fragment = match cleaned.find('#') {
        Some(i) => &cleaned[..i],
        None => &cleaned[..],
    };
    match before_fragment.find('?') {
        Some(i) => before_fragment[i + 1..].to_owned(),
        None => String::new(),
    }
}

/// The URL a reader subscribes with (docs/contract.md §4): the endpoint, then the query parameters
/// `streamId=<id>&from=<from>`.
///
/// - The endpoint's fragment (from its first `#`) is dropped: no client sends a fragment, and a
///   query written after one would be part of the fragment instead of a query.
/// - The parameters start the query (`?`) when the endpoint has none, and join it with `&` when it
///   has one, with no separator at all when it already ends with `?` or `&`.
/// - The id is percent-encoded as `encodeURIComponent` does; `from` is printed in decimal.
pub fn subscribe_url(endpoint: &str, stream_id: &str, from: u64) -> String {
    build_subscribe_url(endpoint, stream_id.chars(), stream_id.len(), from)
}

/// [`subscribe_url`] for a stream id given as UTF-16 code units (a JavaScript string): a lone
/// surrogate is written as U+FFFD, what the URL parser turns it into (a URL is UTF-8 and cannot
/// hold one; `encodeURIComponent` would throw instead).
pub fn subscribe_url_units(endpoint: &str, stream_id: &[u16], from: u64) -> String {
    let chars = char::decode_utf16(stream_id.iter().copied()).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER));
    build_subscribe_url(endpoint, chars, stream_id.len(), from)
}

fn build_subscribe_url(endpoint: &str, stream_id: impl Iterator<Item = char>, id_len: usize, from: u64) -> String {
    let base = endpoint.split_once('#').map_or(endpoint, |(before, _)| before);
    let mut out = String::with_capacity(base.len() + id_len * 3 + 40);
    out.push_str(base);
    if !base.contains('?') {
        out.push('?');
    } else if !(base.ends_with('?') || base.ends_with('&')) {
        out.push('&');
    }
    out.push_str("streamId=");
    let mut utf8 = [0u8; 4];
    for c in stream_id {
        encode_uri_component_into(&mut out, c.encode_utf8(&mut utf8));
    }
    out.push_str("&from=");
    out.push_str(&from.to_string());
    out
}

/// JavaScript's `encodeURIComponent`: every byte of the UTF-8 form is escaped as `%XX` (uppercase
/// hex) except ASCII letters, digits and `-_.!~*'()`.
pub fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    encode_uri_component_into(&mut out, s);
    out
}

fn encode_uri_component_into(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0x0F)] as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_means_a_scheme() {
        for url in ["http://h/p", "HTTPS://h", " \u{1}http://h ", "c:", "web+app:x", "a.b-c:z", "h\ttp://h"] {
            assert!(is_absolute_url(url), "{url:?}");
            assert!(stream_request_from_fetch(url, None).is_ok(), "{url:?}");
        }
        for url in ["", "/p?streamId=a", "p?x", "//h/p", "1x://h", ":x", "-a:b", "ht tp://h", "?a:b", "http"] {
            assert!(!is_absolute_url(url), "{url:?}");
            let e = stream_request_from_fetch(url, Some("3")).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{url:?}");
        }
        // Accepted, it reads exactly as the lenient parser reads it.
        let url = "http://h/p?streamId=a&from=2";
        assert_eq!(stream_request_from_fetch(url, Some("5")).unwrap(), stream_request_from_http(url, Some("5")));
    }

    fn req(url: &str, header: Option<&str>) -> (String, f64) {
        let r = stream_request_from_http(url, header);
        (r.stream_id, r.from)
    }

    #[test]
    fn reads_stream_id_and_from() {
        assert_eq!(req("http://h/p?streamId=m1&from=7", None), ("m1".into(), 7.0));
        assert_eq!(req("/p?streamId=m1&from=7", None), ("m1".into(), 7.0));
        assert_eq!(req("/p?from=7&streamId=m1", None), ("m1".into(), 7.0));
        assert_eq!(req("/p?streamId=m1", None), ("m1".into(), 0.0));
    }

    #[test]
    fn last_event_id_wins_whenever_present() {
        assert_eq!(req("/p?streamId=s&from=5", Some("9")), ("s".into(), 9.0));
        // An empty header still wins; parseInt("") is NaN, which becomes 0.
        assert_eq!(req("/p?streamId=s&from=5", Some("")), ("s".into(), 0.0));
        assert_eq!(req("/p?streamId=s&from=5", Some("x")), ("s".into(), 0.0));
        assert_eq!(req("/p?streamId=s&from=5", None), ("s".into(), 5.0));
    }

    #[test]
    fn offsets_parse_like_parse_int() {
        assert_eq!(req("/p?from=12abc", None).1, 12.0);
        assert_eq!(req("/p?from=-3", None).1, 0.0);
        assert_eq!(req("/p?from=0x10", None).1, 0.0);
        assert_eq!(req("/p?from=1.9", None).1, 1.0);
        assert_eq!(req("/p?from=%20%2042", None).1, 42.0);
        assert_eq!(req("/p?from=99999999999999999999", None).1, 1e20);
        assert_eq!(req("/p?from=abc", None).1, 0.0);
        let huge = "9".repeat(400);
        assert_eq!(req(&format!("/p?from={huge}"), None).1, 0.0, "Infinity is not finite");
    }

    #[test]
    fn from_offset_saturates() {
        let r = |from| StreamRequest { stream_id: String::new(), from };
        assert_eq!(r(1e20).from_offset(), MAX_SAFE_INTEGER);
        assert_eq!(r(12.0).from_offset(), 12);
        assert_eq!(r(0.0).from_offset(), 0);
        assert_eq!(r(-4.0).from_offset(), 0);
        assert_eq!(r(f64::NAN).from_offset(), 0);
        assert_eq!(r(f64::INFINITY).from_offset(), MAX_SAFE_INTEGER);
        assert_eq!(stream_request_from_http("/p?from=1e3", None).from_offset(), 1);
    }

    #[test]
    fn query_decoding_matches_url_search_params() {
        assert_eq!(req("/p?streamId=a+b%20c", None).0, "a b c");
        assert_eq!(req("/p?streamId=%E2%9C%93", None).0, "✓");
        assert_eq!(req("/p?streamId=%FF", None).0, "\u{FFFD}");
        assert_eq!(req("/p?streamId=%zz", None).0, "%zz");
        assert_eq!(req("/p?streamId=a%26b&from=1", None), ("a&b".into(), 1.0));
        assert_eq!(req("/p?streamId", None).0, "");
        assert_eq!(req("/p?streamId=a=b", None).0, "a=b");
        assert_eq!(req("/p?&&streamId=x&", None).0, "x");
    }

    #[test]
    fn first_occurrence_wins() {
        assert_eq!(req("/p?streamId=a&streamId=b&from=1&from=2", None), ("a".into(), 1.0));
        assert_eq!(req("/p?streamId=&streamId=b", None).0, "");
    }

    #[test]
    fn missing_pieces() {
        assert_eq!(req("/p", None), (String::new(), 0.0));
        assert_eq!(req("", None), (String::new(), 0.0));
        assert_eq!(req("/p?from=3", None), (String::new(), 3.0));
        assert_eq!(req("http://h/p?", None), (String::new(), 0.0));
    }

    #[test]
    fn fragment_is_ignored() {
        assert_eq!(req("/p?streamId=a#from=9", None), ("a".into(), 0.0));
        assert_eq!(req("/p?streamId=a&from=2#x?from=9", None), ("a".into(), 2.0));
        // A `?` inside the fragment does not start a query.
        assert_eq!(req("/p#x?streamId=a", None), (String::new(), 0.0));
    }

    #[test]
    fn url_whitespace_is_cleaned_like_the_url_parser() {
        assert_eq!(req("  /p?streamId=a\tb&from=4 ", None), ("ab".into(), 4.0));
    }

    #[test]
    fn subscribe_url_joins_with_the_right_separator() {
        assert_eq!(subscribe_url("/api/stream", "m1", 0), "/api/stream?streamId=m1&from=0");
        assert_eq!(subscribe_url("/api/stream?chat=3", "m1", 42), "/api/stream?chat=3&streamId=m1&from=42");
        assert_eq!(subscribe_url("https://h/s", "a b", 7), "https://h/s?streamId=a%20b&from=7");
        // An endpoint that already ends its query needs no separator.
        assert_eq!(subscribe_url("/s?", "m", 1), "/s?streamId=m&from=1");
        assert_eq!(subscribe_url("/s?a=1&", "m", 1), "/s?a=1&streamId=m&from=1");
    }

    #[test]
    fn subscribe_url_drops_the_endpoint_fragment() {
        assert_eq!(subscribe_url("/s#", "m", 2), "/s?streamId=m&from=2");
        assert_eq!(subscribe_url("/s#top?x=1", "m", 2), "/s?streamId=m&from=2");
        assert_eq!(subscribe_url("/s?a=1#f", "m", 2), "/s?a=1&streamId=m&from=2");
    }

    #[test]
    fn subscribe_url_units_writes_lone_surrogates_as_replacement_characters() {
        let id: Vec<u16> = vec![0x61, 0xD800, 0x62, 0xDC00, 0xD83D, 0xDE00, 0xD83D];
        assert_eq!(subscribe_url_units("/s", &id, 3), "/s?streamId=a%EF%BF%BDb%EF%BF%BD%F0%9F%98%80%EF%BF%BD&from=3");
        let well_formed: Vec<u16> = "é x".encode_utf16().collect();
        assert_eq!(subscribe_url_units("/s", &well_formed, 0), subscribe_url("/s", "é x", 0));
    }

    #[test]
    fn encode_uri_component_matches_javascript() {
        assert_eq!(encode_uri_component("AZaz09-_.!~*'()"), "AZaz09-_.!~*'()");
        assert_eq!(encode_uri_component(";/?:@&=+$,#"), "%3B%2F%3F%3A%40%26%3D%2B%24%2C%23");
        assert_eq!(encode_uri_component(" %\"<>\\^`{|}"), "%20%25%22%3C%3E%5C%5E%60%7B%7C%7D");
        assert_eq!(encode_uri_component("😀"), "%F0%9F%98%80");
        assert_eq!(encode_uri_component("é"), "%C3%A9");
        assert_eq!(encode_uri_component("\0\n"), "%00%0A");
        assert_eq!(encode_uri_component(""), "");
    }

    #[test]
    fn subscribe_url_round_trips_through_the_parser() {
        for id in ["m1", "a b+c", "x&from=9", "😀/é?#", "%41"] {
            let url = subscribe_url("http://h/s?k=v", id, 123);
            let r = stream_request_from_http(&url, None);
            assert_eq!(r.stream_id, id);
            assert_eq!(r.from, 123.0);
        }
    }
}
