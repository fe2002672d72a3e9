//! What travels through Redis: a frame in the core's frame JSON, tagged with its generation.
//!
//! A generation is one production of one stream id by one producer process, named by a random
//! token. The tag exists because a stream id can be produced twice (a row whose producer died
//! before its first checkpoint may be opened again), and the frames of the two productions both
//! start at offset 0: a reader that spliced a chunk of the second onto text of the first would
//! show corrupted text. Readers therefore stay with the generation they saw first and end with
//! `stale` when another one appears.
//!
//! Layout: a pub/sub message is `<generation>\n<frame JSON>`; a Streams entry has the fields
//! `gen` and `frame`. The JSON is exactly `twoplane_core::json::encode_frame`, and is decoded
//! with the core's checking decoder, so a payload that is not a valid frame is refused.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use twoplane_core::message::{decode_message_frame, encode_message_frame, MessageFrame as Frame};

/// A frame from its JSON bytes (the message codec: every frame of today's wire, and the frames
/// of messages with parts, docs/contract.md §8).
fn decode_frame_bytes(bytes: &[u8]) -> Result<Frame, String> {
    let json = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
    decode_message_frame(json).map_err(|e| e.to_string())
}

/// The Streams entry field holding the generation.
pub(crate) const GEN_FIELD: &str = "gen";
/// The Streams entry field holding the frame JSON.
pub(crate) const FRAME_FIELD: &str = "frame";

/// A frame and the generation it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Envelope {
    pub gen: String,
    pub frame: Frame,
}

/// A fresh generation token: 16 hex digits, unique across processes in practice (seeded by the
/// OS through `RandomState`, the time, the process id and a counter).
pub(crate) fn new_generation() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(nanos);
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}", h.finish())
}

/// The pub/sub payload of `frame` in generation `gen`.
pub(crate) fn encode_message(gen: &str, frame: &Frame) -> Vec<u8> {
    let json = encode_message_frame(frame);
    let mut out = Vec::with_capacity(gen.len() + 1 + json.len());
    out.extend_from_slice(gen.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(json.as_bytes());
    out
}

/// Parse a pub/sub payload.
pub(crate) fn decode_message(payload: &[u8]) -> Result<Envelope, String> {
    let split = payload.iter().position(|b| *b == b'\n').ok_or("a relay message without a generation line")?;
    let gen = decode_gen(&payload[..split])?;
    let frame =
        decode_frame_bytes(&payload[split + 1..]).map_err(|e| format!("a relay message is not a frame: {e}"))?;
    Ok(Envelope { gen, frame })
}

/// Parse the two fields of a Streams entry.
pub(crate) fn decode_entry(gen: Option<&[u8]>, frame: Option<&[u8]>) -> Result<Envelope, String> {
    let gen = decode_gen(gen.ok_or("a log entry without a generation")?)?;
    let frame = frame.ok_or("a log entry without a frame")?;
    let frame = decode_frame_bytes(frame).map_err(|e| format!("a log entry is not a frame: {e}"))?;
    Ok(Envelope { gen, frame })
}

fn decode_gen(bytes: &[u8]) -> Result<String, String> {
    if bytes.is_empty() || bytes.len() > 64 || !bytes.iter().all(u8::is_ascii_graphic) {
        return Err("a relay generation token is malformed".into());
    }
    // Checked ASCII above, so this cannot fail; no panic either way.
    String::from_utf8(bytes.to_vec()).map_err(|_| "a relay generation token is malformed".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use twoplane_core::{StreamStatus, Text};

    #[test]
    fn messages_round_trip_and_keep_lone_surrogates() {
        let frames = [
            Frame::chunk(3, 0, 3, Text::from_units(vec![0x61, 0xD800, 0x0A])).unwrap(),
            Frame::Durable { seq: 7 },
            Frame::End { seq: 9, status: StreamStatus::Error, error: Some(Text::from("boom\nline")) },
        ];
        for frame in frames {
            let gen = new_generation();
            let env = decode_message(&encode_message(&gen, &frame)).unwrap();
            assert_eq!(env, Envelope { gen, frame });
        }
    }

    #[test]
    fn garbage_is_refused_not_passed_on() {
        for bad in [
            &b""[..],
            b"no-newline",
            b"\n{\"type\":\"durable\",\"seq\":1}",
            b"g\n{\"type\":\"chunk\",\"from\":0,\"seq\":5,\"text\":\"ab\"}",
            b"g\nnot json",
            b"g\n{\"type\":\"bogus\"}",
            b"g g\n{\"type\":\"durable\",\"seq\":1}",
        ] {
            assert!(decode_message(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        assert!(decode_entry(None, Some(b"{\"type\":\"absent\"}")).is_err());
        assert!(decode_entry(Some(b"g"), None).is_err());
        assert_eq!(
            decode_entry(Some(b"g"), Some(b"{\"type\":\"durable\",\"seq\":1}")).unwrap().frame,
            Frame::Durable { seq: 1 }
        );
    }

    #[test]
    fn generations_differ() {
        let a = new_generation();
        let b = new_generation();
        assert_ne!(a, b);
        assert_eq!(a.len(), 16);
    }
}
