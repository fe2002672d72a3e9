//! The frame JSON codec, and the small strict JSON reader and writer under it.
//!
//! Guarantees:
//! - **Text is never altered.** Strings are held as UTF-16 code units ([`Text`]). A `\udxxx`
//!   escape decodes to that very code unit, paired or not, and the writer emits an unpaired
//!   surrogate back as the same escape, so any text JavaScript can hold survives a trip through
//!   this codec unit for unit. (This is why the crate carries its own JSON code: `serde_json`
//!   strings are Rust `String`s, which cannot hold a lone surrogate.)
//! - **Bytes match JavaScript.** [`write_json_string`] and [`encode_frame`] produce exactly the
//!   bytes of ES2019 `JSON.stringify` for the same string or frame object, with the frame keys in
//!   the order of docs/contract.md §1, so SSE `data:` lines compare byte for byte with a JavaScript
//!   producer's.
//! - **Parsing is strict RFC 8259**, as `JSON.parse` is: no comments, trailing commas, leading
//!   zeros, raw control characters, non-standard escapes or trailing garbage. Duplicate object keys
//!   are kept, and lookups take the last one, which is the value `JSON.parse` keeps.
//! - **Hostile input cannot hurt.** No input panics, and nesting is bounded by [`MAX_DEPTH`] so
//!   the recursive reader cannot exhaust the stack (a wasm stack is small).
//! - **Decoded frames are valid**: offsets are integers in `0..=2^53-1`, an `open` has
//!   `from <= seq`, and a chunk's text spans exactly `seq - from` units. Every rejection is an
//!   [`Error`] whose kind and field name say what was wrong.

use crate::error::{Error, ErrorKind, Result};
use crate::frame::{check_chunk_span, Frame, FrameKind, StreamStatus};
use crate::jsnum;
use crate::text::{is_low_surrogate, Text};

/// How deeply arrays and objects may nest before the reader gives up. Frames are flat; the bound
/// only exists so that `[[[[...` from a hostile relay is an error rather than a stack overflow.
pub const MAX_DEPTH: usize = 128;

/// A JSON value whose strings are UTF-16, so they can hold whatever JavaScript strings hold.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonValue {
    Null,
    Bool(bool),
    Number(f64),
    String(Text),
    Array(Vec<JsonValue>),
    /// Members in document order, duplicates included; see [`JsonValue::get`].
    Object(Vec<(Text, JsonValue)>),
}

impl JsonValue {
    /// The member named `key`; with duplicate keys the last one wins, as with `JSON.parse`.
    /// `None` when absent or when `self` is not an object.
    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        match self {
            JsonValue::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// [`JsonValue::get`] for a key that may itself hold unpaired surrogates.
    pub fn get_units(&self, key: &[u16]) -> Option<&JsonValue> {
        match self {
            JsonValue::Object(members) => members.iter().rev().find(|(k, _)| k.units() == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_text(&self) -> Option<&Text> {
        match self {
            JsonValue::String(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            JsonValue::Number(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            JsonValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[JsonValue]> {
        match self {
            JsonValue::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&[(Text, JsonValue)]> {
        match self {
            JsonValue::Object(members) => Some(members),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, JsonValue::Null)
    }

    /// The JSON type's name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            JsonValue::Null => "null",
            JsonValue::Bool(_) => "boolean",
            JsonValue::Number(_) => "number",
            JsonValue::String(_) => "string",
            JsonValue::Array(_) => "array",
            JsonValue::Object(_) => "object",
        }
    }

    /// Compact JSON text; see [`write_json_value`].
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        write_json_value(&mut out, self);
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

/// Parse one JSON text strictly (RFC 8259, as `JSON.parse` accepts it).
pub fn parse_value(input: &str) -> Result<JsonValue> {
    let mut p = Parser { src: input, bytes: input.as_bytes(), pos: 0, depth: 0 };
    p.skip_ws();
    let v = p.value()?;
    p.skip_ws();
    if p.pos < p.bytes.len() {
        return Err(p.err("unexpected data after the JSON value"));
    }
    Ok(v)
}

/// [`parse_value`] over raw bytes, which must be UTF-8.
pub fn parse_value_bytes(input: &[u8]) -> Result<JsonValue> {
    match std::str::from_utf8(input) {
        Ok(s) => parse_value(s),
        Err(e) => {
            Err(Error::new(ErrorKind::InvalidJson, format!("invalid JSON: not UTF-8 at byte {}", e.valid_up_to())))
        }
    }
}

struct Parser<'a> {
    /// Kept beside `bytes` so runs of raw text can be re-read as `&str` without re-validating.
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> Error {
        Error::new(ErrorKind::InvalidJson, format!("invalid JSON at byte {}: {what}", self.pos))
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect_literal(&mut self, word: &[u8], value: JsonValue) -> Result<JsonValue> {
        if self.bytes.get(self.pos..).is_some_and(|rest| rest.starts_with(word)) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.err("unexpected character"))
        }
    }

    fn value(&mut self) -> Result<JsonValue> {
        match self.peek() {
            None => Err(self.err("unexpected end of input")),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string().map(JsonValue::String),
            Some(b't') => self.expect_literal(b"true", JsonValue::Bool(true)),
            Some(b'f') => self.expect_literal(b"false", JsonValue::Bool(false)),
            Some(b'n') => self.expect_literal(b"null", JsonValue::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn enter(&mut self) -> Result<()> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err("nesting is deeper than the reader allows"));
        }
        self.depth += 1;
        Ok(())
    }

    fn array(&mut self) -> Result<JsonValue> {
        self.enter()?;
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(JsonValue::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(JsonValue::Array(items));
                }
                None => return Err(self.err("unterminated array")),
                Some(_) => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    fn object(&mut self) -> Result<JsonValue> {
        self.enter()?;
        self.pos += 1; // '{'
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(JsonValue::Object(members));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.err("expected ':'"));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value()?;
            members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(JsonValue::Object(members));
                }
                None => return Err(self.err("unterminated object")),
                Some(_) => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    /// A string, from its opening quote. Raw runs are split only at ASCII bytes, so every run
    /// starts and ends on a char boundary of `src` and converts without a second UTF-8 check.
    fn string(&mut self) -> Result<Text> {
        self.pos += 1; // '"'
        let mut units: Vec<u16> = Vec::new();
        loop {
            let start = self.pos;
            let rest = self.bytes.get(start..).unwrap_or_default();
            let len = rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).unwrap_or(rest.len());
            let run = rest.get(..len).unwrap_or_default();
            // A UTF-8 run never has more UTF-16 units than bytes, so this is the only growth.
            units.reserve(len);
            if !push_utf8_run(&mut units, run) {
                return Err(self.err("string is not valid UTF-8"));
            }
            self.pos += len;
            match self.peek() {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Text::from_units(units));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let unit = self.escape()?;
                    units.push(unit);
                }
                Some(_) => return Err(self.err("raw control character in string")),
            }
        }
    }

    /// One escape, after its backslash. `\u` yields its code unit as written, surrogate or not:
    /// pairing is the writer's business, and JavaScript strings need not be well formed.
    fn escape(&mut self) -> Result<u16> {
        let unit = match self.peek() {
            Some(b'"') => 0x22,
            Some(b'\\') => 0x5C,
            Some(b'/') => 0x2F,
            Some(b'b') => 0x08,
            Some(b'f') => 0x0C,
            Some(b'n') => 0x0A,
            Some(b'r') => 0x0D,
            Some(b't') => 0x09,
            Some(b'u') => {
                self.pos += 1;
                let mut unit: u16 = 0;
                for _ in 0..4 {
                    let digit = match self.peek() {
                        Some(b @ b'0'..=b'9') => b - b'0',
                        Some(b @ b'a'..=b'f') => b - b'a' + 10,
                        Some(b @ b'A'..=b'F') => b - b'A' + 10,
                        _ => return Err(self.err("\\u needs four hex digits")),
                    };
                    unit = (unit << 4) | u16::from(digit);
                    self.pos += 1;
                }
                return Ok(unit);
            }
            None => return Err(self.err("unterminated string")),
            Some(_) => return Err(self.err("invalid escape")),
        };
        self.pos += 1;
        Ok(unit)
    }

    /// Validate the JSON number grammar (Rust's float syntax is looser: `+1`, `.5`, `inf`), then
    /// let Rust's correctly rounding parser produce the same double `JSON.parse` does.
    fn number(&mut self) -> Result<JsonValue> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.err("expected a digit")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("expected a digit after '.'"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("expected a digit in the exponent"));
            }
            self.digits();
        }
        // A leading zero followed by more digits ("01") stops after the "0"; the caller then
        // meets the "1" where it expects ',' or the end, and rejects it there.
        let text = self.src.get(start..self.pos).ok_or_else(|| self.err("invalid number"))?;
        text.parse::<f64>().map(JsonValue::Number).map_err(|_| self.err("invalid number"))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }
}

/// Append a run of UTF-8 as UTF-16. ASCII stretches (most text, and every key) are copied a byte
/// to a unit in a loop that vectorizes; only the stretches between them are decoded.
/// `false` only on invalid UTF-8, which a run cut from a `&str` at ASCII bytes cannot hold.
fn push_utf8_run(units: &mut Vec<u16>, mut run: &[u8]) -> bool {
    while !run.is_empty() {
        let ascii = run.iter().position(|&b| b >= 0x80).unwrap_or(run.len());
        let (head, tail) = run.split_at(ascii);
        units.extend(head.iter().map(|&b| u16::from(b)));
        let wide = tail.iter().position(|&b| b < 0x80).unwrap_or(tail.len());
        let (head, tail) = tail.split_at(wide);
        match std::str::from_utf8(head) {
            Ok(s) => units.extend(s.encode_utf16()),
            Err(_) => return false,
        }
        run = tail;
    }
    true
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_u_escape(out: &mut String, unit: u16) {
    out.push_str("\\u");
    for shift in [12u16, 8, 4, 0] {
        out.push(char::from(HEX[usize::from((unit >> shift) & 0xF)]));
    }
}

/// Append `units` as a JSON string literal, byte for byte what ES2019 `JSON.stringify` gives:
/// the short escapes for `"`, `\`, BS, FF, LF, CR and TAB; `\u00xx` for the other controls;
/// `\udxxx` for each unpaired surrogate; everything else (pairs, DEL, U+2028/U+2029, `/`) raw.
pub fn write_json_string(out: &mut String, units: &[u16]) {
    out.reserve(units.len() + 2);
    out.push('"');
    let mut rest = units;
    while !rest.is_empty() {
        // Model text is mostly plain ASCII: copy such runs in batches through a stack buffer,
        // which is several times faster than pushing one decoded char at a time.
        let plain = rest.iter().position(|&u| !is_plain_ascii(u)).unwrap_or(rest.len());
        let (run, tail) = rest.split_at(plain);
        push_ascii_run(out, run);
        rest = tail;
        let Some((&unit, tail)) = rest.split_first() else { break };
        rest = tail;
        match unit {
            0x22 => out.push_str("\\\""),
            0x5C => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            0x0A => out.push_str("\\n"),
            0x0D => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0x00..=0x1F => push_u_escape(out, unit),
            // A high surrogate pairs only with an immediately following low one; every other
            // surrogate is unpaired and escaped: the well-formed-stringify rule of ES2019.
            0xD800..=0xDBFF => match rest.split_first() {
                Some((&low, tail)) if is_low_surrogate(low) => {
                    let c = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                    out.push(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
                    rest = tail;
                }
                _ => push_u_escape(out, unit),
            },
            0xDC00..=0xDFFF => push_u_escape(out, unit),
            // Not a surrogate, so always a scalar value; the fallback is unreachable.
            _ => out.push(char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER)),
        }
    }
    out.push('"');
}

/// Printable ASCII that `JSON.stringify` writes as itself (DEL included).
fn is_plain_ascii(u: u16) -> bool {
    (0x20..0x80).contains(&u) && u != 0x22 && u != 0x5C
}

fn push_ascii_run(out: &mut String, run: &[u16]) {
    let mut buf = [0u8; 128];
    for part in run.chunks(buf.len()) {
        for (b, &u) in buf.iter_mut().zip(part) {
            *b = u as u8;
        }
        let bytes = buf.get(..part.len()).unwrap_or_default();
        // Callers pass only units below 0x80, so this is ASCII and always valid UTF-8.
        if let Ok(s) = std::str::from_utf8(bytes) {
            out.push_str(s);
        }
    }
}

/// Append `v` as compact JSON, as `JSON.stringify(v)` writes it: numbers as JavaScript prints
/// them, non-finite numbers as `null`, and `-0` as `0`.
///
/// Object members are written in the order they are held, duplicates included. That is what
/// `JSON.stringify` writes for an object with the same keys in the same insertion order, provided
/// the keys are unique and none is an array index (JavaScript lists those first, ascending).
pub fn write_json_value(out: &mut String, v: &JsonValue) {
    match v {
        JsonValue::Null => out.push_str("null"),
        JsonValue::Bool(true) => out.push_str("true"),
        JsonValue::Bool(false) => out.push_str("false"),
        JsonValue::Number(n) if n.is_finite() => out.push_str(&jsnum::format(*n)),
        JsonValue::Number(_) => out.push_str("null"),
        JsonValue::String(t) => write_json_string(out, t.units()),
        JsonValue::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_value(out, item);
            }
            out.push(']');
        }
        JsonValue::Object(members) => {
            out.push('{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, key.units());
                out.push(':');
                write_json_value(out, value);
            }
            out.push('}');
        }
    }
}

/// Offsets within `0..=2^53-1` print as plain integers in JavaScript too, so decimal digits are
/// exactly `JSON.stringify`'s output for every offset a valid frame can hold.
fn push_u64(out: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        out.push(char::from(b));
    }
}

/// A frame as `JSON.stringify` writes the same object, keys in the order of docs/contract.md §1.
pub fn encode_frame(frame: &Frame) -> String {
    let mut out = String::new();
    encode_frame_into(&mut out, frame);
    out
}

/// [`encode_frame`], appending to `out` (so an SSE writer can build `data: ...` in one buffer).
/// Offsets are written as given; [`Frame::validate`] is how to check a hand-built frame first.
pub fn encode_frame_into(out: &mut String, frame: &Frame) {
    // Reserve once: the fixed keys plus up to three 16-digit offsets, and one byte per text unit
    // (exact for ASCII, the common case; longer text grows the buffer once more at most).
    match frame {
        Frame::Open { stream_id, from, seq, durable_seq, ended } => {
            out.reserve(96 + stream_id.len());
            out.push_str("{\"type\":\"open\",\"streamId\":");
            write_json_string(out, stream_id.units());
            out.push_str(",\"from\":");
            push_u64(out, *from);
            out.push_str(",\"seq\":");
            push_u64(out, *seq);
            out.push_str(",\"durableSeq\":");
            push_u64(out, *durable_seq);
            out.push_str(if *ended { ",\"ended\":true}" } else { ",\"ended\":false}" });
        }
        Frame::Chunk { from, seq, text } => {
            out.reserve(64 + text.len());
            out.push_str("{\"type\":\"chunk\",\"from\":");
            push_u64(out, *from);
            out.push_str(",\"seq\":");
            push_u64(out, *seq);
            out.push_str(",\"text\":");
            write_json_string(out, text.units());
            out.push('}');
        }
        Frame::Durable { seq } => {
            out.reserve(48);
            out.push_str("{\"type\":\"durable\",\"seq\":");
            push_u64(out, *seq);
            out.push('}');
        }
        Frame::End { seq, status, error } => {
            out.reserve(64 + error.as_ref().map_or(0, Text::len));
            out.push_str("{\"type\":\"end\",\"seq\":");
            push_u64(out, *seq);
            out.push_str(",\"status\":\"");
            // Status names are plain lowercase ASCII: nothing to escape.
            out.push_str(status.as_str());
            out.push('"');
            if let Some(error) = error {
                out.push_str(",\"error\":");
                write_json_string(out, error.units());
            }
            out.push('}');
        }
        Frame::Stale { floor_seq, durable_seq } => {
            out.reserve(80);
            out.push_str("{\"type\":\"stale\",\"floorSeq\":");
            push_u64(out, *floor_seq);
            out.push_str(",\"durableSeq\":");
            push_u64(out, *durable_seq);
            out.push('}');
        }
        Frame::Absent => out.push_str("{\"type\":\"absent\"}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Frames from JSON
// ---------------------------------------------------------------------------------------------

/// Parse and check one frame (see the module header for what "check" guarantees).
pub fn decode_frame(input: &str) -> Result<Frame> {
    frame_from_value(&parse_value(input)?)
}

/// [`decode_frame`] over raw bytes, which must be UTF-8.
pub fn decode_frame_bytes(input: &[u8]) -> Result<Frame> {
    frame_from_value(&parse_value_bytes(input)?)
}

/// Check a parsed JSON value as a frame. Fields are checked in wire order, so the first problem
/// reported is the first one a reader of the JSON would meet. Unknown keys are ignored: frames
/// that passed through JavaScript may carry extra fields.
pub fn frame_from_value(v: &JsonValue) -> Result<Frame> {
    if !matches!(v, JsonValue::Object(_)) {
        return Err(Error::new(
            ErrorKind::InvalidJson,
            format!("a frame must be a JSON object, not {}", v.type_name()),
        ));
    }
    let type_text = text_field(v, "type")?;
    let kind = FrameKind::ALL.into_iter().find(|k| type_text == k.as_str()).ok_or_else(|| {
        Error::field(ErrorKind::UnknownFrameType, "type", format!("unknown frame type {}", preview(type_text)))
    })?;
    match kind {
        FrameKind::Open => {
            let stream_id = text_field(v, "streamId")?.clone();
            let from = offset_field(v, "from")?;
            let seq = offset_field(v, "seq")?;
            let durable_seq = offset_field(v, "durableSeq")?;
            let ended = bool_field(v, "ended")?;
            if seq < from {
                return Err(Error::field(
                    ErrorKind::InvalidOffset,
                    "seq",
                    format!("open has seq {seq} below from {from}"),
                ));
            }
            Ok(Frame::Open { stream_id, from, seq, durable_seq, ended })
        }
        FrameKind::Chunk => {
            let from = offset_field(v, "from")?;
            let seq = offset_field(v, "seq")?;
            let text = text_field(v, "text")?;
            check_chunk_span(from, seq, text.len())?;
            Ok(Frame::Chunk { from, seq, text: text.clone() })
        }
        FrameKind::Durable => Ok(Frame::Durable { seq: offset_field(v, "seq")? }),
        FrameKind::End => {
            let seq = offset_field(v, "seq")?;
            let status_text = text_field(v, "status")?;
            let status = StreamStatus::ALL.into_iter().find(|s| status_text == s.as_str()).ok_or_else(|| {
                Error::field(
                    ErrorKind::InvalidStatus,
                    "status",
                    format!("unknown stream status {}", preview(status_text)),
                )
            })?;
            let error = match v.get("error") {
                None => None,
                Some(JsonValue::String(t)) => Some(t.clone()),
                Some(other) => return Err(wrong_type("error", "a string", other)),
            };
            Ok(Frame::End { seq, status, error })
        }
        FrameKind::Stale => {
            Ok(Frame::Stale { floor_seq: offset_field(v, "floorSeq")?, durable_seq: offset_field(v, "durableSeq")? })
        }
        FrameKind::Absent => Ok(Frame::Absent),
    }
}

fn required<'v>(v: &'v JsonValue, name: &'static str) -> Result<&'v JsonValue> {
    v.get(name).ok_or_else(|| Error::field(ErrorKind::MissingField, name, format!("missing field {name}")))
}

fn wrong_type(name: &'static str, expected: &str, found: &JsonValue) -> Error {
    Error::field(ErrorKind::InvalidField, name, format!("field {name} must be {expected}, not {}", found.type_name()))
}

fn text_field<'v>(v: &'v JsonValue, name: &'static str) -> Result<&'v Text> {
    match required(v, name)? {
        JsonValue::String(t) => Ok(t),
        other => Err(wrong_type(name, "a string", other)),
    }
}

fn bool_field(v: &JsonValue, name: &'static str) -> Result<bool> {
    match required(v, name)? {
        JsonValue::Bool(b) => Ok(*b),
        other => Err(wrong_type(name, "a boolean", other)),
    }
}

/// A JSON number is an offset when JavaScript would call it one: `Number.isInteger`, not
/// negative, and exactly representable (so `1.0` and `1e2` pass, as they do in JavaScript).
fn offset_field(v: &JsonValue, name: &'static str) -> Result<u64> {
    match required(v, name)? {
        JsonValue::Number(n) => jsnum::as_offset(*n).ok_or_else(|| {
            Error::field(
                ErrorKind::InvalidOffset,
                name,
                format!("field {name} must be an integer in 0..=2^53-1, not {}", jsnum::format(*n)),
            )
        }),
        other => Err(wrong_type(name, "a number", other)),
    }
}

/// A bounded, quoted rendering of untrusted text for error messages, so a hostile megabyte-long
/// `type` cannot make a megabyte-long log line.
fn preview(t: &Text) -> String {
    const LIMIT: usize = 64;
    let mut out = String::new();
    if t.len() > LIMIT {
        write_json_string(&mut out, t.units().get(..LIMIT).unwrap_or_default());
        out.push_str("...");
    } else {
        write_json_string(&mut out, t.units());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    fn stringify(u: &[u16]) -> String {
        let mut out = String::new();
        write_json_string(&mut out, u);
        out
    }

    fn err_of(input: &str) -> (ErrorKind, Option<&'static str>) {
        let e = decode_frame(input).expect_err(input);
        (e.kind(), e.field_name())
    }

    fn sample_frames() -> Vec<Frame> {
        vec![
            Frame::Open { stream_id: "msg-1".into(), from: 0, seq: 12, durable_seq: 5, ended: false },
            Frame::Open {
                stream_id: Text::from_units(vec![0xD800, 0x22]),
                from: 3,
                seq: 3,
                durable_seq: 9,
                ended: true,
            },
            Frame::Chunk { from: 7, seq: 13, text: "hé\"\n😀".into() },
            Frame::Chunk { from: 0, seq: 0, text: Text::new() },
            Frame::Chunk { from: 1, seq: 3, text: Text::from_units(vec![0xDC00, 0xD800]) },
            Frame::Durable { seq: jsnum::MAX_SAFE_INTEGER },
            Frame::End { seq: 4, status: StreamStatus::Complete, error: None },
            Frame::End { seq: 0, status: StreamStatus::Error, error: Some("boom \u{1}".into()) },
            Frame::End { seq: 2, status: StreamStatus::Cancelled, error: Some(Text::new()) },
            Frame::End { seq: 2, status: StreamStatus::Interrupted, error: None },
            Frame::Stale { floor_seq: 10, durable_seq: 8 },
            Frame::Absent,
        ]
    }

    #[test]
    fn exact_frame_encodings() {
        let cases: Vec<(Frame, &str)> = vec![
            (
                Frame::Open { stream_id: "s1".into(), from: 0, seq: 12, durable_seq: 5, ended: false },
                r#"{"type":"open","streamId":"s1","from":0,"seq":12,"durableSeq":5,"ended":false}"#,
            ),
            (
                Frame::Open { stream_id: "s".into(), from: 1, seq: 2, durable_seq: 2, ended: true },
                r#"{"type":"open","streamId":"s","from":1,"seq":2,"durableSeq":2,"ended":true}"#,
            ),
            (Frame::Chunk { from: 3, seq: 5, text: "ab".into() }, r#"{"type":"chunk","from":3,"seq":5,"text":"ab"}"#),
            (Frame::Durable { seq: 9007199254740991 }, r#"{"type":"durable","seq":9007199254740991}"#),
            (
                Frame::End { seq: 4, status: StreamStatus::Complete, error: None },
                r#"{"type":"end","seq":4,"status":"complete"}"#,
            ),
            (
                Frame::End { seq: 4, status: StreamStatus::Error, error: Some("bad \"x\"".into()) },
                r#"{"type":"end","seq":4,"status":"error","error":"bad \"x\""}"#,
            ),
            (Frame::Stale { floor_seq: 10, durable_seq: 8 }, r#"{"type":"stale","floorSeq":10,"durableSeq":8}"#),
            (Frame::Absent, r#"{"type":"absent"}"#),
        ];
        for (frame, expected) in cases {
            assert_eq!(encode_frame(&frame), expected);
        }
    }

    #[test]
    fn encode_into_appends() {
        let mut out = String::from("data: ");
        encode_frame_into(&mut out, &Frame::Absent);
        assert_eq!(out, "data: {\"type\":\"absent\"}");
    }

    #[test]
    fn every_frame_round_trips() {
        for f in sample_frames() {
            let json = encode_frame(&f);
            assert_eq!(decode_frame(&json).as_ref(), Ok(&f), "{json}");
            assert_eq!(decode_frame_bytes(json.as_bytes()).as_ref(), Ok(&f));
            assert_eq!(frame_from_value(&parse_value(&json).unwrap()).as_ref(), Ok(&f));
        }
    }

    #[test]
    fn string_escapes_match_json_stringify() {
        assert_eq!(stringify(&units("")), r#""""#);
        assert_eq!(stringify(&units("a\"b\\c/d")), r#""a\"b\\c/d""#);
        assert_eq!(stringify(&units("\u{8}\u{c}\n\r\t")), r#""\b\f\n\r\t""#);
        assert_eq!(stringify(&units("\u{0}\u{1}\u{b}\u{1f}")), r#""\u0000\u0001\u000b\u001f""#);
        assert_eq!(stringify(&units(" \u{7f}")), "\" \u{7f}\"");
        assert_eq!(stringify(&units("\u{2028}\u{2029}")), "\"\u{2028}\u{2029}\"");
        assert_eq!(stringify(&units("é漢😀")), "\"é漢😀\"");
        assert_eq!(stringify(&[0xD800]), r#""\ud800""#);
        assert_eq!(stringify(&[0xDBFF, 0x61]), r#""\udbffa""#);
        assert_eq!(stringify(&[0xDC00]), r#""\udc00""#);
        assert_eq!(stringify(&[0x61, 0xDFFF]), r#""a\udfff""#);
        assert_eq!(stringify(&[0xDC00, 0xD800]), r#""\udc00\ud800""#);
        assert_eq!(stringify(&[0xD800, 0xD800, 0xDC00]), "\"\\ud800\u{10000}\"");
        assert_eq!(stringify(&[0xD83D, 0xDE00]), "\"😀\"");
    }

    #[test]
    fn every_control_unit_has_one_spelling() {
        for u in 0u16..0x20 {
            let s = stringify(&[u]);
            let expected = match u {
                0x08 => "\"\\b\"".to_owned(),
                0x09 => "\"\\t\"".to_owned(),
                0x0A => "\"\\n\"".to_owned(),
                0x0C => "\"\\f\"".to_owned(),
                0x0D => "\"\\r\"".to_owned(),
                _ => format!("\"\\u{u:04x}\""),
            };
            assert_eq!(s, expected);
            assert_eq!(parse_value(&s).unwrap(), JsonValue::String(Text::from_units(vec![u])));
        }
    }

    #[test]
    fn escapes_decode_to_units_verbatim() {
        let pair = parse_value(r#""\ud83d\ude00""#).unwrap();
        assert_eq!(pair, JsonValue::String("😀".into()));
        let upper = parse_value(r#""\uD83D\uDE00""#).unwrap();
        assert_eq!(upper, pair);
        let lone = parse_value(r#""a\ud800b""#).unwrap();
        assert_eq!(lone.as_text().unwrap().units(), &[0x61, 0xD800, 0x62]);
        let reversed = parse_value(r#""\udc00\ud800""#).unwrap();
        assert_eq!(reversed.as_text().unwrap().units(), &[0xDC00, 0xD800]);
        let simple = parse_value(r#""\"\\\/\b\f\n\r\t""#).unwrap();
        assert_eq!(simple.as_text().unwrap(), "\"\\/\u{8}\u{c}\n\r\t");
        // Raw UTF-8 becomes UTF-16; an astral character is two units.
        let raw = parse_value("\"é😀\"").unwrap();
        assert_eq!(raw.as_text().unwrap().units(), &[0xE9, 0xD83D, 0xDE00]);
    }

    #[test]
    fn lone_surrogates_survive_decode_then_encode() {
        for json in [
            r#"{"type":"chunk","from":0,"seq":1,"text":"\ud800"}"#,
            r#"{"type":"chunk","from":4,"seq":6,"text":"\udc00\ud800"}"#,
            r#"{"type":"chunk","from":0,"seq":3,"text":"x\udfffy"}"#,
            r#"{"type":"open","streamId":"\udbff","from":0,"seq":0,"durableSeq":0,"ended":false}"#,
            r#"{"type":"end","seq":0,"status":"error","error":"\ud800"}"#,
        ] {
            assert_eq!(encode_frame(&decode_frame(json).unwrap()), json);
        }
        // An escaped valid pair is written back raw, as JSON.stringify does.
        let f = decode_frame(r#"{"type":"chunk","from":0,"seq":2,"text":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(encode_frame(&f), "{\"type\":\"chunk\",\"from\":0,\"seq\":2,\"text\":\"😀\"}");
    }

    #[test]
    fn parses_general_json() {
        let v = parse_value(" {\"a\" : [1, -2.5e3, true, false, null, {}, []], \"b\":\"x\"}\r\n\t").unwrap();
        assert_eq!(v.get("b").and_then(JsonValue::as_text).unwrap(), "x");
        let a = v.get("a").and_then(JsonValue::as_array).unwrap();
        assert_eq!(a.len(), 7);
        assert_eq!(a[1].as_f64(), Some(-2500.0));
        assert_eq!(a[2].as_bool(), Some(true));
        assert!(a[4].is_null());
        assert_eq!(v.to_json(), r#"{"a":[1,-2500,true,false,null,{},[]],"b":"x"}"#);
        assert_eq!(parse_value("0").unwrap(), JsonValue::Number(0.0));
        assert_eq!(parse_value("-0").unwrap().as_f64().map(f64::is_sign_negative), Some(true));
        assert_eq!(parse_value("1E+2").unwrap(), JsonValue::Number(100.0));
        assert_eq!(parse_value("0.1").unwrap(), JsonValue::Number(0.1));
        assert_eq!(parse_value("1e400").unwrap(), JsonValue::Number(f64::INFINITY));
        assert_eq!(parse_value("\"\u{7f}\"").unwrap().as_text().unwrap().units(), &[0x7F]);
    }

    #[test]
    fn rejects_what_json_parse_rejects() {
        for bad in [
            "",
            " ",
            "[1,]",
            "{\"a\":1,}",
            "[1 2]",
            "{\"a\" 1}",
            "{a:1}",
            "{'a':1}",
            "01",
            "-01",
            "1.",
            ".5",
            "+1",
            "1e",
            "1e+",
            "-",
            "--1",
            "0x10",
            "NaN",
            "Infinity",
            "tru",
            "nul",
            "True",
            "[",
            "{",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\u12G4\"",
            "\"\\\"",
            "\"a\u{1}b\"",
            "\"\t\"",
            "\"\n\"",
            "1 2",
            "{} x",
            "/* c */ 1",
            "1 // c",
            "\u{feff}1",
            "\u{a0}1",
            "\u{b}1",
            "\u{c}1",
            "[1]]",
            "{\"a\":1}}",
        ] {
            let e = parse_value(bad).expect_err(bad);
            assert_eq!(e.kind(), ErrorKind::InvalidJson, "{bad:?}");
        }
        assert_eq!(parse_value_bytes(b"\"\xff\"").unwrap_err().kind(), ErrorKind::InvalidJson);
        assert_eq!(parse_value_bytes(b"\"\xed\xa0\x80\"").unwrap_err().kind(), ErrorKind::InvalidJson);
        assert_eq!(decode_frame_bytes(b"{\"type\":\"absent\"}\xc3").unwrap_err().kind(), ErrorKind::InvalidJson);
    }

    #[test]
    fn duplicate_keys_keep_all_and_look_up_last() {
        let v = parse_value(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 3);
        assert_eq!(v.get("a"), Some(&JsonValue::Number(3.0)));
        assert_eq!(v.get_units(&units("b")), Some(&JsonValue::Number(2.0)));
        assert_eq!(v.get("c"), None);
        assert_eq!(JsonValue::Null.get("a"), None);
        let f = decode_frame(r#"{"type":"chunk","type":"durable","seq":4}"#).unwrap();
        assert_eq!(f, Frame::Durable { seq: 4 });
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse_value(&ok).is_ok());
        let too_deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(parse_value(&too_deep).unwrap_err().kind(), ErrorKind::InvalidJson);
        let hostile = "[{\"a\":".repeat(1_000_000);
        assert_eq!(parse_value(&hostile).unwrap_err().kind(), ErrorKind::InvalidJson);
        assert_eq!(decode_frame(&"[".repeat(1_000_000)).unwrap_err().kind(), ErrorKind::InvalidJson);
    }

    #[test]
    fn write_json_value_like_stringify() {
        let v = JsonValue::Array(vec![
            JsonValue::Number(f64::NAN),
            JsonValue::Number(f64::INFINITY),
            JsonValue::Number(-0.0),
            JsonValue::Number(1e21),
            JsonValue::Number(1.5e-7),
            JsonValue::Number(123456789.125),
            JsonValue::Object(vec![(Text::from_units(vec![0xD800]), JsonValue::String("\u{2028}".into()))]),
        ]);
        assert_eq!(v.to_json(), "[null,null,0,1e+21,1.5e-7,123456789.125,{\"\\ud800\":\"\u{2028}\"}]");
    }

    #[test]
    fn frame_shape_errors() {
        assert_eq!(err_of("[]"), (ErrorKind::InvalidJson, None));
        assert_eq!(err_of("\"open\""), (ErrorKind::InvalidJson, None));
        assert!(decode_frame("null").unwrap_err().message().contains("must be a JSON object"));
        assert_eq!(err_of("{"), (ErrorKind::InvalidJson, None));
        assert_eq!(err_of("{}"), (ErrorKind::MissingField, Some("type")));
        assert_eq!(err_of(r#"{"type":1}"#), (ErrorKind::InvalidField, Some("type")));
        assert_eq!(err_of(r#"{"type":null}"#), (ErrorKind::InvalidField, Some("type")));
        assert_eq!(err_of(r#"{"type":"Open"}"#), (ErrorKind::UnknownFrameType, Some("type")));
        assert_eq!(err_of(r#"{"type":"\ud800"}"#), (ErrorKind::UnknownFrameType, Some("type")));
        let long = format!(r#"{{"type":"{}"}}"#, "x".repeat(10_000));
        assert!(decode_frame(&long).unwrap_err().message().len() < 200);
    }

    #[test]
    fn open_errors() {
        let base = r#""type":"open""#;
        assert_eq!(err_of(&format!("{{{base}}}")), (ErrorKind::MissingField, Some("streamId")));
        assert_eq!(err_of(&format!(r#"{{{base},"streamId":5}}"#)), (ErrorKind::InvalidField, Some("streamId")));
        assert_eq!(err_of(&format!(r#"{{{base},"streamId":"s"}}"#)), (ErrorKind::MissingField, Some("from")));
        let with = |rest: &str| format!(r#"{{{base},"streamId":"s",{rest}}}"#);
        assert_eq!(err_of(&with(r#""from":"0""#)), (ErrorKind::InvalidField, Some("from")));
        assert_eq!(err_of(&with(r#""from":0"#)), (ErrorKind::MissingField, Some("seq")));
        assert_eq!(err_of(&with(r#""from":0,"seq":1"#)), (ErrorKind::MissingField, Some("durableSeq")));
        assert_eq!(err_of(&with(r#""from":0,"seq":1,"durableSeq":0"#)), (ErrorKind::MissingField, Some("ended")));
        assert_eq!(
            err_of(&with(r#""from":0,"seq":1,"durableSeq":0,"ended":1"#)),
            (ErrorKind::InvalidField, Some("ended"))
        );
        assert_eq!(
            err_of(&with(r#""from":0,"seq":1,"durableSeq":-1,"ended":true"#)),
            (ErrorKind::InvalidOffset, Some("durableSeq"))
        );
        assert_eq!(
            err_of(&with(r#""from":0.5,"seq":1,"durableSeq":0,"ended":true"#)),
            (ErrorKind::InvalidOffset, Some("from"))
        );
        assert_eq!(
            err_of(&with(r#""from":2,"seq":1,"durableSeq":0,"ended":true"#)),
            (ErrorKind::InvalidOffset, Some("seq"))
        );
        let f = decode_frame(&with(r#""from":1.0,"seq":1e2,"durableSeq":0,"ended":true,"extra":[1]"#)).unwrap();
        assert_eq!(f, Frame::Open { stream_id: "s".into(), from: 1, seq: 100, durable_seq: 0, ended: true });
    }

    #[test]
    fn offset_errors() {
        for (seq, kind) in [
            ("-1", ErrorKind::InvalidOffset),
            ("1.5", ErrorKind::InvalidOffset),
            ("9007199254740992", ErrorKind::InvalidOffset),
            ("1e400", ErrorKind::InvalidOffset),
            ("\"1\"", ErrorKind::InvalidField),
            ("null", ErrorKind::InvalidField),
            ("true", ErrorKind::InvalidField),
            ("[1]", ErrorKind::InvalidField),
        ] {
            assert_eq!(err_of(&format!(r#"{{"type":"durable","seq":{seq}}}"#)), (kind, Some("seq")), "{seq}");
        }
        assert_eq!(decode_frame(r#"{"type":"durable","seq":-0}"#).unwrap(), Frame::Durable { seq: 0 });
        assert_eq!(
            decode_frame(r#"{"type":"durable","seq":9007199254740991}"#).unwrap(),
            Frame::Durable { seq: jsnum::MAX_SAFE_INTEGER }
        );
        assert_eq!(err_of(r#"{"type":"durable"}"#), (ErrorKind::MissingField, Some("seq")));
        assert_eq!(err_of(r#"{"type":"stale","durableSeq":1}"#), (ErrorKind::MissingField, Some("floorSeq")));
        assert_eq!(err_of(r#"{"type":"stale","floorSeq":1}"#), (ErrorKind::MissingField, Some("durableSeq")));
        assert_eq!(
            err_of(r#"{"type":"stale","floorSeq":1,"durableSeq":0.1}"#),
            (ErrorKind::InvalidOffset, Some("durableSeq"))
        );
    }

    #[test]
    fn chunk_errors() {
        assert_eq!(err_of(r#"{"type":"chunk","seq":1,"text":"a"}"#), (ErrorKind::MissingField, Some("from")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"text":"a"}"#), (ErrorKind::MissingField, Some("seq")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"seq":1}"#), (ErrorKind::MissingField, Some("text")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"seq":1,"text":1}"#), (ErrorKind::InvalidField, Some("text")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"seq":2,"text":"a"}"#), (ErrorKind::ChunkSpan, Some("text")));
        assert_eq!(err_of(r#"{"type":"chunk","from":2,"seq":1,"text":"a"}"#), (ErrorKind::ChunkSpan, Some("text")));
        assert_eq!(err_of(r#"{"type":"chunk","from":0,"seq":1,"text":"😀"}"#), (ErrorKind::ChunkSpan, Some("text")));
        assert!(decode_frame(r#"{"type":"chunk","from":0,"seq":2,"text":"😀"}"#).is_ok());
    }

    #[test]
    fn end_errors() {
        assert_eq!(err_of(r#"{"type":"end","status":"complete"}"#), (ErrorKind::MissingField, Some("seq")));
        assert_eq!(err_of(r#"{"type":"end","seq":1}"#), (ErrorKind::MissingField, Some("status")));
        assert_eq!(err_of(r#"{"type":"end","seq":1,"status":0}"#), (ErrorKind::InvalidField, Some("status")));
        assert_eq!(
            err_of(r#"{"type":"end","seq":1,"status":"streaming"}"#),
            (ErrorKind::InvalidStatus, Some("status"))
        );
        assert_eq!(
            err_of(r#"{"type":"end","seq":1,"status":"complete","error":null}"#),
            (ErrorKind::InvalidField, Some("error"))
        );
        assert_eq!(
            err_of(r#"{"type":"end","seq":1,"status":"complete","error":{}}"#),
            (ErrorKind::InvalidField, Some("error"))
        );
        assert_eq!(err_of(r#"{"type":"end","seq":-3,"status":"complete"}"#), (ErrorKind::InvalidOffset, Some("seq")));
    }

    #[test]
    fn absent_ignores_extras() {
        assert_eq!(decode_frame(r#" {"x":{"y":[]},"type":"absent","seq":"junk"} "#).unwrap(), Frame::Absent);
    }

    fn arb_units() -> impl Strategy<Value = Vec<u16>> {
        // Weight the interesting units: controls, quotes, both surrogate halves, and ASCII.
        let unit = prop_oneof![
            any::<u16>(),
            0u16..0x20,
            Just(0x22u16),
            Just(0x5Cu16),
            0xD800u16..0xDC00,
            0xDC00u16..0xE000,
            0x20u16..0x7F,
        ];
        proptest::collection::vec(unit, 0..24)
    }

    fn arb_offset() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..1000, 0u64..=jsnum::MAX_SAFE_INTEGER]
    }

    fn arb_frame() -> impl Strategy<Value = Frame> {
        let status = proptest::sample::select(StreamStatus::ALL.to_vec());
        prop_oneof![
            (arb_units(), arb_offset(), 0u64..1000, arb_offset(), any::<bool>()).prop_map(
                |(id, from, extra, durable_seq, ended)| Frame::Open {
                    stream_id: Text::from_units(id),
                    from,
                    seq: (from + extra).min(jsnum::MAX_SAFE_INTEGER),
                    durable_seq,
                    ended,
                }
            ),
            (0u64..1_000_000, arb_units()).prop_map(|(from, t)| Frame::chunk(from, Text::from_units(t)).unwrap()),
            arb_offset().prop_map(|seq| Frame::Durable { seq }),
            (arb_offset(), status, proptest::option::of(arb_units()))
                .prop_map(|(seq, status, error)| { Frame::End { seq, status, error: error.map(Text::from_units) } }),
            (arb_offset(), arb_offset()).prop_map(|(floor_seq, durable_seq)| Frame::Stale { floor_seq, durable_seq }),
            Just(Frame::Absent),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_frame_bytes(&bytes);
            let _ = parse_value_bytes(&bytes);
        }

        #[test]
        fn arbitrary_strings_never_panic(s in ".{0,128}") {
            let _ = decode_frame(&s);
        }

        #[test]
        fn json_shaped_strings_never_panic(s in r#"[\[\]{}",:0-9eE+\-. a-z\\/\u00e9\u{1F600}\t\n]{0,96}"#) {
            let _ = decode_frame(&s);
            if let Ok(v) = parse_value(&s) {
                // Whatever parses must re-parse from its own encoding to the same value.
                prop_assert_eq!(parse_value(&v.to_json()).ok(), Some(v));
            }
        }

        #[test]
        fn frames_round_trip(f in arb_frame()) {
            let json = encode_frame(&f);
            let back = decode_frame(&json);
            prop_assert_eq!(back.as_ref(), Ok(&f));
            prop_assert_eq!(encode_frame(&back.unwrap()), json);
        }

        #[test]
        fn strings_round_trip_unit_for_unit(u in arb_units()) {
            let json = stringify(&u);
            let v = parse_value(&json).unwrap();
            prop_assert_eq!(v.as_text().map(Text::units), Some(u.as_slice()));
        }
    }
}
