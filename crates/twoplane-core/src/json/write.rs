//! The JSON writer: byte for byte what ES2019 `JSON.stringify` writes for the same string or value,
//! lone surrogates written back as the same `\u` escape.

use super::value::JsonValue;
use crate::jsnum;
use crate::text::{is_low_surrogate, Text};

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

impl JsonValue {
    /// Compact JSON text; see [`write_json_value`]. (Here rather than beside the value model, so
    /// the model does not depend on its writer.)
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        write_json_value(&mut out, self);
        out
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
        JsonValue::Object(members) => write_json_object(out, members),
    }
}

/// An object from its members, in the order held. A message's attributes are such members, so
/// the message codec writes them with this too, and a value writes the same wherever it stands.
pub(crate) fn write_json_object(out: &mut String, members: &[(Text, JsonValue)]) {
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

/// Offsets within `0..=2^53-1` print as plain integers in JavaScript too, so decimal digits are
/// exactly `JSON.stringify`'s output for every offset a valid frame can hold.
pub(crate) fn push_u64(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}
