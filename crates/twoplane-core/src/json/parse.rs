//! The strict JSON reader (RFC 8259, as `JSON.parse` accepts it): never panics, bounds nesting by
//! [`MAX_DEPTH`], and decodes every `\u` escape to that very code unit.

use super::value::JsonValue;
use crate::error::{Error, ErrorKind, Result};
use crate::text::Text;

/// How deeply arrays and objects may nest before the reader gives up. Frames are flat; the bound
/// only exists so that `[[[[...` from a hostile relay is an error rather than a stack overflow.
pub const MAX_DEPTH: usize = 128;

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
