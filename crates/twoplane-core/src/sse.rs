//! Server-sent events (docs/contract.md §5): the response headers, the encoder that turns frames into
//! events, and an incremental decoder that follows the WHATWG event-stream parsing rules.
//!
//! Guarantees:
//! - An encoded frame is `id: <resume point>\n` (only when the frame has one) followed by
//!   `data: <JSON>\n\n`, where the JSON is byte-for-byte what `JSON.stringify` writes for the
//!   same frame. The JSON never holds a raw CR or LF (the codec escapes them), so one frame is
//!   always exactly one `data:` line and one event.
//! - The `id:` is the frame's resume point, so a browser `EventSource` that loses its connection
//!   reconnects with `Last-Event-ID` naming exactly the offset it got to.
//! - [`SseDecoder`] accepts any bytes split anywhere (inside a CRLF, inside a UTF-8 sequence,
//!   inside the leading BOM) and produces the same events as if the whole stream had arrived at
//!   once. It never panics and holds no more than the current line and the event being built.

mod batch;
mod encode;
pub use batch::encode_json_array_events;
#[cfg(any(test, feature = "testing"))]
pub use encode::encode_events;
pub use encode::{
    encode_event, encode_event_into, encode_json_event_utf16, DEFAULT_KEEP_ALIVE_MS, KEEP_ALIVE_COMMENT,
    STREAM_SSE_HEADERS,
};

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, or `"message"` when the event had none.
    pub event: String,
    /// The `data` lines joined with LF.
    pub data: String,
    /// The stream's last event id when this event was dispatched (it persists across events
    /// until an `id` field replaces it).
    pub last_event_id: String,
}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// An incremental `text/event-stream` parser (WHATWG HTML, "Server-sent events", event stream
/// interpretation).
///
/// Bytes go in through [`SseDecoder::feed`] in pieces of any size; complete events come out.
/// UTF-8 is decoded one complete line at a time with U+FFFD for invalid sequences, which is
/// exactly what decoding the whole stream first would give: CR and LF are ASCII, so they can never
/// sit inside a multi-byte sequence, and a sequence cut short by a line end is invalid either way.
#[derive(Clone, Debug)]
pub struct SseDecoder {
    /// The bytes of the line being read, without its terminator.
    line: Vec<u8>,
    /// The previous byte was a CR, so an LF right after it (possibly in the next feed) belongs
    /// to the same line end.
    after_cr: bool,
    /// How many bytes of a leading BOM have been matched, or `None` once past the stream start.
    bom_matched: Option<usize>,
    data: String,
    event_type: String,
    /// The last event ID buffer: set by `id` fields as they are parsed.
    id_buffer: String,
    /// The last event ID string: the buffer as of the latest dispatch. This, not the buffer, is
    /// what a reconnect sends, so an `id` whose event never completed is not trusted.
    last_event_id: String,
    /// The reconnection time, as the `f64` nearest to the `retry` field's integer: what
    /// JavaScript's `Number()` reads from the same digits (exact up to 2^53). See `parse_retry`.
    retry: Option<f64>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder::new()
    }
}

impl SseDecoder {
    pub fn new() -> Self {
        SseDecoder {
            line: Vec::new(),
            after_cr: false,
            bom_matched: Some(0),
            data: String::new(),
            event_type: String::new(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            retry: None,
        }
    }

    /// Parse the next piece of the stream, appending every event it completes to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        let mut rest = bytes;
        if let Some(matched) = self.bom_matched {
            let mut matched = matched;
            let mut used = 0;
            while matched < BOM.len() && used < rest.len() && rest[used] == BOM[matched] {
                matched += 1;
                used += 1;
            }
            if matched == BOM.len() {
                // A whole BOM at the very start: dropped, once.
                self.bom_matched = None;
                rest = &rest[used..];
            } else if used == rest.len() {
                // Still a possible BOM; wait for more bytes before deciding.
                self.bom_matched = Some(matched);
                return;
            } else {
                // Not a BOM after all: the bytes held back are ordinary content. None of them is
                // CR or LF, so they simply start the first line.
                self.bom_matched = None;
                self.line.extend_from_slice(&BOM[..matched]);
                rest = &rest[used..];
            }
        }
        self.scan(rest, out);
    }

    /// The end of the stream. As the WHATWG rules require, an event still being built (no blank
    /// line yet) is discarded, and so is an unterminated last line; nothing is dispatched here,
    /// and `out` is left untouched. It exists so that a caller has one place that ends a stream.
    ///
    /// Afterwards the decoder is ready for a new stream (a reconnection): the line, data, event
    /// type and last event ID buffers start empty again and a leading BOM is honoured once more,
    /// as for any newly parsed stream. [`SseDecoder::last_event_id`] and
    /// [`SseDecoder::retry`] keep their values, since they belong to the connection's owner
    /// (what the next request's `Last-Event-ID` and reconnection delay should be), not to one
    /// stream.
    pub fn finish(&mut self, _out: &mut Vec<SseEvent>) {
        self.line.clear();
        self.after_cr = false;
        self.bom_matched = Some(0);
        self.data.clear();
        self.event_type.clear();
        self.id_buffer.clear();
    }

    /// The last event ID as of the latest dispatched (or empty-data) event: what a reconnect
    /// sends as `Last-Event-ID`.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time in milliseconds from the latest valid `retry` field, if any; a value
    /// too large for `u64` saturates.
    pub fn retry(&self) -> Option<u64> {
        // `as` saturates (and the value is never NaN or negative).
        self.retry.map(|ms| ms as u64)
    }

    /// The same time as a JavaScript number: the field's integer, rounded to the nearest `f64`
    /// (not saturated at `u64::MAX`), which is what a JavaScript decoder holds (below 2^128; see
    /// `parse_retry`). The bindings report this one.
    pub fn retry_f64(&self) -> Option<f64> {
        self.retry
    }

    /// Split `bytes` into lines at LF, CR or CRLF, processing each complete line.
    fn scan(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        let mut i = 0;
        while i < bytes.len() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[i] == b'\n' {
                    // The LF of a CRLF whose CR ended the previous line.
                    i += 1;
                    continue;
                }
            }
            match bytes[i..].iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.line.extend_from_slice(&bytes[i..]);
                    return;
                }
                Some(k) => {
                    self.line.extend_from_slice(&bytes[i..i + k]);
                    self.after_cr = bytes[i + k] == b'\r';
                    i += k + 1;
                    self.end_line(out);
                }
            }
        }
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        // Take the buffer so the decoded line can borrow it while `self` is updated, then hand
        // the allocation back for the next line.
        let mut line = std::mem::take(&mut self.line);
        {
            let text = String::from_utf8_lossy(&line);
            self.process_line(&text, out);
        }
        line.clear();
        self.line = line;
    }

    fn process_line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => {
                self.event_type.clear();
                self.event_type.push_str(value);
            }
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            // An id holding NUL is ignored whole: it could not be sent back as a header.
            "id" if !value.contains('\0') => {
                self.id_buffer.clear();
                self.id_buffer.push_str(value);
            }
            // Only a non-empty run of ASCII digits counts; anything else leaves the time as it
            // was.
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = Some(parse_retry(value));
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        // The last event ID string follows the buffer even when nothing is dispatched, so an
        // `id`-only block still moves the resume point.
        self.last_event_id.clone_from(&self.id_buffer);
        if self.data.is_empty() {
            self.event_type.clear();
            return;
        }
        if self.data.ends_with('\n') {
            self.data.pop();
        }
        let event =
            if self.event_type.is_empty() { "message".to_owned() } else { std::mem::take(&mut self.event_type) };
        out.push(SseEvent { event, data: std::mem::take(&mut self.data), last_event_id: self.last_event_id.clone() });
    }
}

/// A `retry` value (ASCII digits only) as JavaScript's `Number()` reads it. The WHATWG rules take
/// the digits as an integer of any size; JavaScript holds the nearest `f64`. The digits are summed
/// exactly in a `u128` and converted once (`as` rounds to nearest, ties to even, as `Number()`
/// does), which equals `Number()` for every value below 2^128 (38 digits, 10^28 years of
/// milliseconds); larger values saturate there. Not `str::parse::<f64>`: its tables would add
/// about 18 KB to the WebAssembly build for digits no server sends.
fn parse_retry(digits: &str) -> f64 {
    digits.bytes().fold(0u128, |acc, b| acc.saturating_mul(10).saturating_add(u128::from(b - b'0'))) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{frame_resume_point, Frame, StreamStatus};
    use crate::json;
    use crate::text::Text;
    use proptest::prelude::*;

    fn ev(event: &str, data: &str, id: &str) -> SseEvent {
        SseEvent { event: event.into(), data: data.into(), last_event_id: id.into() }
    }

    fn decode_all(bytes: &[u8]) -> (Vec<SseEvent>, SseDecoder) {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        d.feed(bytes, &mut out);
        d.finish(&mut out);
        (out, d)
    }

    fn decode_pieces(pieces: &[&[u8]]) -> (Vec<SseEvent>, SseDecoder) {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for p in pieces {
            d.feed(p, &mut out);
        }
        d.finish(&mut out);
        (out, d)
    }

    /// A straightforward whole-stream reading of the WHATWG rules, used as the oracle: decode all
    /// bytes at once (dropping a leading BOM), split into lines, interpret.
    fn reference(bytes: &[u8]) -> (Vec<SseEvent>, String, Option<f64>) {
        let bytes = bytes.strip_prefix(&BOM[..]).unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        let mut lines = Vec::new();
        let mut cur = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    lines.push(std::mem::take(&mut cur));
                }
                '\n' => lines.push(std::mem::take(&mut cur)),
                c => cur.push(c),
            }
        }
        // `cur` is an unterminated last line: discarded at the end of the stream.
        let (mut data, mut kind, mut id_buf, mut last_id, mut retry) =
            (String::new(), String::new(), String::new(), String::new(), None);
        let mut events = Vec::new();
        for line in lines {
            if line.is_empty() {
                last_id = id_buf.clone();
                if data.is_empty() {
                    kind.clear();
                    continue;
                }
                if data.ends_with('\n') {
                    data.pop();
                }
                let name = if kind.is_empty() { "message".to_owned() } else { std::mem::take(&mut kind) };
                events.push(SseEvent { event: name, data: std::mem::take(&mut data), last_event_id: last_id.clone() });
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (f, v) = match line.find(':') {
                Some(i) => {
                    let v = &line[i + 1..];
                    (&line[..i], v.strip_prefix(' ').unwrap_or(v))
                }
                None => (&line[..], ""),
            };
            match f {
                "event" => kind = v.to_owned(),
                "data" => {
                    data.push_str(v);
                    data.push('\n');
                }
                "id" if !v.contains('\0') => id_buf = v.to_owned(),
                "retry" if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                    retry = Some(parse_retry(v));
                }
                _ => {}
            }
        }
        (events, last_id, retry)
    }

    const SAMPLE: &[u8] = "\u{FEFF}: hello\r\nid: 1\nevent: chunk\ndata: first\r\ndata:  second é😀\r\n\r\n\
        data: no event\n\nid\nretry: 2500\ndata\n\n: comment\rid: x\0y\rdata: after nul\r\r\
        event: lonely\n\ndata: tail without blank line\n"
        .as_bytes();

    fn sample_events() -> Vec<SseEvent> {
        vec![
            ev("chunk", "first\n second é😀", "1"),
            ev("message", "no event", "1"),
            ev("message", "", ""),
            ev("message", "after nul", ""),
        ]
    }

    #[test]
    fn decodes_a_known_stream() {
        let (events, d) = decode_all(SAMPLE);
        assert_eq!(events, sample_events());
        assert_eq!(d.retry(), Some(2500));
        assert_eq!(d.last_event_id(), "");
        assert_eq!(reference(SAMPLE), (sample_events(), String::new(), Some(2500.0)));
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let whole = decode_all(SAMPLE).0;
        for i in 0..=SAMPLE.len() {
            assert_eq!(decode_pieces(&[&SAMPLE[..i], &SAMPLE[i..]]).0, whole, "split at {i}");
            for j in i..=SAMPLE.len() {
                let got = decode_pieces(&[&SAMPLE[..i], &SAMPLE[i..j], &SAMPLE[j..]]).0;
                assert_eq!(got, whole, "split at {i} and {j}");
            }
        }
        let bytes: Vec<&[u8]> = SAMPLE.chunks(1).collect();
        assert_eq!(decode_pieces(&bytes).0, whole);
    }

    #[test]
    fn bom_is_dropped_once_even_when_split() {
        let bom_twice = b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n";
        // The second BOM is content: it makes the field name "\u{FEFF}data", an unknown field.
        assert_eq!(decode_all(bom_twice).0, vec![]);
        let stream = b"\xEF\xBB\xBFdata: x\n\n";
        for i in 0..=stream.len() {
            assert_eq!(decode_pieces(&[&stream[..i], &stream[i..]]).0, vec![ev("message", "x", "")], "split {i}");
        }
        // A BOM that is not at the very start is content too.
        assert_eq!(decode_all(b"data: \xEF\xBB\xBFx\n\n").0, vec![ev("message", "\u{FEFF}x", "")]);
        // A partial BOM is ordinary (invalid) UTF-8 and starts the first line.
        assert_eq!(decode_all(b"\xEF\xBBdata: x\n\n").0, vec![]);
        assert_eq!(decode_all(b"\xEF\xBB\ndata: x\n\n").0, vec![ev("message", "x", "")]);
        assert_eq!(decode_pieces(&[b"\xEF", b"\xBB", b"\xBF", b"data: y\n\n"]).0, vec![ev("message", "y", "")]);
    }

    #[test]
    fn line_ends_mix_freely() {
        for stream in [
            &b"data: a\n\ndata: b\n\n"[..],
            b"data: a\r\rdata: b\r\r",
            b"data: a\r\n\r\ndata: b\r\n\r\n",
            b"data: a\r\n\rdata: b\n\r\n",
        ] {
            assert_eq!(decode_all(stream).0, vec![ev("message", "a", ""), ev("message", "b", "")], "{stream:?}");
        }
        // CR then LF in the next feed is one line end, not a blank line.
        assert_eq!(decode_pieces(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]).0, vec![ev("message", "a\nb", "")]);
        // LF then CR is two line ends.
        assert_eq!(decode_all(b"data: a\n\r").0, vec![ev("message", "a", "")]);
    }

    #[test]
    fn multi_line_data_and_field_parsing() {
        assert_eq!(decode_all(b"data: a\ndata:b\ndata:  c\ndata\n\n").0, vec![ev("message", "a\nb\n c\n", "")]);
        assert_eq!(decode_all(b"data: a:b: c\n\n").0, vec![ev("message", "a:b: c", "")]);
        assert_eq!(decode_all(b"data\n\n").0, vec![ev("message", "", "")]);
        assert_eq!(decode_all(b"data:\ndata:\n\n").0, vec![ev("message", "\n", "")]);
        // Field names are case-sensitive and exact.
        assert_eq!(decode_all(b"Data: x\ndata : y\n data: z\n\n").0, vec![]);
        // Unknown fields are ignored without disturbing the event.
        assert_eq!(decode_all(b"foo: bar\ndata: x\nbaz\n\n").0, vec![ev("message", "x", "")]);
    }

    #[test]
    fn event_type_applies_to_one_event_only() {
        assert_eq!(
            decode_all(b"event: a\nevent: b\ndata: 1\n\ndata: 2\n\nevent: c\n\ndata: 3\n\n").0,
            vec![ev("b", "1", ""), ev("message", "2", ""), ev("message", "3", "")]
        );
        assert_eq!(decode_all(b"event\ndata: 1\n\n").0, vec![ev("message", "1", "")]);
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(decode_all(b": ping\n\n:\ndata: x\n: mid\n\n").0, vec![ev("message", "x", "")]);
        assert_eq!(decode_all(KEEP_ALIVE_COMMENT.as_bytes()).0, vec![]);
    }

    #[test]
    fn last_event_id_persists_and_nul_is_ignored() {
        let (events, d) = decode_all(b"id: 7\ndata: a\n\ndata: b\n\nid: 8\0\ndata: c\n\nid:\ndata: d\n\n");
        assert_eq!(
            events,
            vec![ev("message", "a", "7"), ev("message", "b", "7"), ev("message", "c", "7"), ev("message", "d", "")]
        );
        assert_eq!(d.last_event_id(), "");
        // An id-only block moves the last event id without dispatching.
        let (events, d) = decode_all(b"id: 5\n\n");
        assert_eq!(events, vec![]);
        assert_eq!(d.last_event_id(), "5");
        // An id whose block never completed is not trusted.
        let (_, d) = decode_all(b"id: 1\n\nid: 2\ndata: x\n");
        assert_eq!(d.last_event_id(), "1");
        // `id` with no colon clears it; a space is kept after the first one.
        let (events, _) = decode_all(b"id: 3\n\nid\ndata: x\n\nid:  4\ndata: y\n\n");
        assert_eq!(events, vec![ev("message", "x", ""), ev("message", "y", " 4")]);
    }

    #[test]
    fn retry_needs_only_ascii_digits() {
        let retry = |s: &[u8]| decode_all(s).1.retry();
        assert_eq!(retry(b"retry: 3000\n"), Some(3000));
        assert_eq!(retry(b"retry:10\n"), Some(10));
        assert_eq!(retry(b"retry: 0\n"), Some(0));
        assert_eq!(retry(b"retry: 1000\nretry: x\n"), Some(1000));
        for bad in [&b"retry: -1\n"[..], b"retry: 1.5\n", b"retry: 12a\n", b"retry:\n", b"retry\n", b"retry:  5\n"] {
            assert_eq!(retry(bad), None, "{bad:?}");
        }
        assert_eq!(retry(b"retry: 99999999999999999999999999\n"), Some(u64::MAX));
        // As a JavaScript number it is the nearest f64 to the integer, as `Number()` reads it,
        // not u64::MAX: 99999999999999999999 is 1e20, not about 1.8e19.
        let js = |s: &[u8]| decode_all(s).1.retry_f64();
        assert_eq!(js(b"retry: 99999999999999999999\n"), Some(1e20));
        assert_eq!(js(b"retry: 9007199254740993\n"), Some(9007199254740992.0));
        assert_eq!(js(b"retry: 0042\n"), Some(42.0));
        assert_eq!(js(b"retry: 99999999999999999999999999999999999999\n"), Some(1e38));
        // A retry line needs no blank line to take effect.
        assert_eq!(decode_pieces(&[b"retry: 7\n"]).1.retry(), Some(7));
    }

    #[test]
    fn utf8_split_inside_a_sequence_and_invalid_bytes() {
        let s = "data: é😀漢\n\n".as_bytes();
        for i in 0..=s.len() {
            assert_eq!(decode_pieces(&[&s[..i], &s[i..]]).0, vec![ev("message", "é😀漢", "")], "split {i}");
        }
        // Invalid bytes become U+FFFD; a sequence cut by a line end is invalid too.
        assert_eq!(decode_all(b"data: a\xFFb\n\n").0, vec![ev("message", "a\u{FFFD}b", "")]);
        assert_eq!(decode_all(b"data: \xF0\x9F\ndata: x\n\n").0, vec![ev("message", "\u{FFFD}\nx", "")]);
    }

    #[test]
    fn incomplete_event_at_end_is_discarded_and_decoder_restarts() {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        d.feed(b"id: 4\ndata: done\n\nretry: 9\nid: 5\ndata: partial\n\ndata: cut", &mut out);
        d.finish(&mut out);
        assert_eq!(out, vec![ev("message", "done", "4"), ev("message", "partial", "5")]);
        d.feed(b"data: never\n", &mut out);
        d.finish(&mut out);
        assert_eq!(out.len(), 2);
        assert_eq!((d.last_event_id(), d.retry()), ("5", Some(9)));
        // A new stream after finish: a leading BOM is dropped again, buffers start empty.
        d.feed(b"\xEF\xBB\xBFdata: again\n\n", &mut out);
        assert_eq!(out[2], ev("message", "again", ""));
    }

    fn frames() -> Vec<Frame> {
        vec![
            Frame::Open { stream_id: "m1".into(), from: 3, seq: 9, durable_seq: 2, ended: false },
            Frame::Chunk { from: 3, seq: 9, text: "héllo\n".into() },
            Frame::Durable { seq: 9 },
            Frame::End { seq: 9, status: StreamStatus::Error, error: Some("boom".into()) },
            Frame::Stale { floor_seq: 1, durable_seq: 2 },
            Frame::Absent,
        ]
    }

    #[test]
    fn encodes_frames_as_events() {
        let expected = [
            "id: 3\ndata: {\"type\":\"open\",\"streamId\":\"m1\",\"from\":3,\"seq\":9,\"durableSeq\":2,\"ended\":false}\n\n",
            "id: 9\ndata: {\"type\":\"chunk\",\"from\":3,\"seq\":9,\"text\":\"héllo\\n\"}\n\n",
            "id: 9\ndata: {\"type\":\"durable\",\"seq\":9}\n\n",
            "id: 9\ndata: {\"type\":\"end\",\"seq\":9,\"status\":\"error\",\"error\":\"boom\"}\n\n",
            "data: {\"type\":\"stale\",\"floorSeq\":1,\"durableSeq\":2}\n\n",
            "data: {\"type\":\"absent\"}\n\n",
        ];
        let frames = frames();
        for (frame, want) in frames.iter().zip(expected) {
            assert_eq!(encode_event(frame), want);
        }
        assert_eq!(encode_events(&frames), expected.concat());
        assert_eq!(encode_events(&[]), "");
        let mut out = String::from("x");
        encode_event_into(&mut out, &Frame::Absent);
        assert_eq!(out, "xdata: {\"type\":\"absent\"}\n\n");
    }

    #[test]
    fn headers_and_keep_alive() {
        assert_eq!(
            STREAM_SSE_HEADERS,
            [
                ("content-type", "text/event-stream; charset=utf-8"),
                ("cache-control", "no-cache, no-transform"),
                ("connection", "keep-alive"),
                ("x-accel-buffering", "no"),
            ]
        );
        assert_eq!(KEEP_ALIVE_COMMENT, ": ping\n\n");
        assert_eq!(DEFAULT_KEEP_ALIVE_MS, 15_000);
    }

    #[test]
    fn encoded_frames_decode_back() {
        let frames = frames();
        let wire = format!("{}{}", encode_events(&frames), KEEP_ALIVE_COMMENT);
        let (events, _) = decode_all(wire.as_bytes());
        assert_eq!(events.len(), frames.len());
        let mut id = String::new();
        for (event, frame) in events.iter().zip(&frames) {
            assert_eq!(event.event, "message");
            assert_eq!(json::decode_frame(&event.data).unwrap(), *frame);
            if let Some(point) = frame_resume_point(frame) {
                id = point.to_string();
            }
            assert_eq!(event.last_event_id, id);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_any_split_same_events(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), Just(0u8), Just(0xEF), Just(0xBB), Just(0xBF),
                    Just(0xF0), Just(0x9F), Just(0x98), Just(0x80),
                    prop::sample::select(b"dataeventidretry0123456789x".to_vec()),
                    any::<u8>(),
                ],
                0..200,
            ),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut pieces = Vec::new();
            let mut start = 0;
            for p in points {
                pieces.push(&bytes[start..p]);
                start = p;
            }
            pieces.push(&bytes[start..]);
            let (split, ds) = decode_pieces(&pieces);
            let (whole, dw) = decode_all(&bytes);
            prop_assert_eq!(&split, &whole);
            prop_assert_eq!(ds.last_event_id(), dw.last_event_id());
            prop_assert_eq!(ds.retry_f64(), dw.retry_f64());
            let (ref_events, ref_id, ref_retry) = reference(&bytes);
            prop_assert_eq!(&whole, &ref_events);
            prop_assert_eq!(dw.last_event_id(), ref_id.as_str());
            prop_assert_eq!(dw.retry_f64(), ref_retry);
        }

        #[test]
        fn chunk_text_round_trips_exactly(units in proptest::collection::vec(any::<u16>(), 0..64), from in 0u64..1_000_000) {
            let frame = Frame::chunk(from, Text::from_units(units)).unwrap();
            let (events, d) = decode_all(encode_event(&frame).as_bytes());
            prop_assert_eq!(events.len(), 1);
            prop_assert_eq!(json::decode_frame(&events[0].data).unwrap(), frame.clone());
            prop_assert_eq!(d.last_event_id(), frame_resume_point(&frame).unwrap().to_string());
        }
    }

    #[test]
    fn json_events_in_utf16_match_the_frame_encoder() {
        let frame = Frame::chunk(3, Text::from_units(vec![0x61, 0xD800])).unwrap();
        let json: Vec<u16> = crate::json::encode_frame(&frame).encode_utf16().collect();
        let mut out = Vec::new();
        encode_json_event_utf16(&mut out, frame_resume_point(&frame).map(|p| p as f64), &json);
        assert_eq!(String::from_utf16(&out).unwrap(), encode_event(&frame));
        let mut odd = Vec::new();
        encode_json_event_utf16(&mut odd, Some(1e21), &[0x7B, 0x7D]);
        encode_json_event_utf16(&mut odd, None, &[0x7B, 0x7D]);
        assert_eq!(String::from_utf16(&odd).unwrap(), "id: 1e+21\ndata: {}\n\ndata: {}\n\n");
    }
}
