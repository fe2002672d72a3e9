//! Fuzz scenarios and the checks they share with the property tests (test support: only with the
//! `testing` feature).
//!
//! Each `*_scenario` function turns arbitrary bytes into a run of the kernel and checks what the
//! contract promises about it, returning the broken promise as an error. The cargo-fuzz targets
//! in `fuzz/` call them, and an ordinary test replays every crash input kept in
//! `tests/fuzz-crashers/`, so a crash once found stays a regression test on stable Rust.
//! [`relay_mutations`] is the one generator of misbehaving relays, used by the relay fuzz target
//! (through [`relay_scenario`]) and by the conform property test. [`producer_event_scenario`]
//! checks the decoder of the events a producer sends (`message::input`).

use crate::conform::RelayConform;
use crate::frame::{Frame, StreamStatus};
use crate::json::{decode_frame_bytes, encode_frame};
use crate::reader::TextReader;
use crate::sse::{encode_json_array_events, SseDecoder};
use crate::text::Text;

/// Whether `frames` is a legal subscription: `open` first unless the only frame is a bare
/// `stale` or `absent`; at most one `open`; chunks span their offsets and never leave a gap after
/// the delivered prefix; exactly one terminal, last (when `closed`); nothing after a terminal.
pub fn check_subscription(frames: &[Frame], closed: bool) -> Result<(), String> {
    let Some(first) = frames.first() else {
        return if closed { Err("a closed subscription delivered nothing".into()) } else { Ok(()) };
    };
    let bare = frames.len() == 1 && matches!(first, Frame::Stale { .. } | Frame::Absent);
    let mut pos = match first {
        Frame::Open { from, .. } => *from,
        _ if bare => return Ok(()),
        other => return Err(format!("first frame is {:?}, not open", other.kind())),
    };
    for (i, f) in frames.iter().enumerate().skip(1) {
        if frames[i - 1].is_terminal() {
            return Err(format!("frame {i} follows a terminal"));
        }
        match f {
            Frame::Open { .. } => return Err(format!("second open at frame {i}")),
            Frame::Chunk { from, seq, text } => {
                f.validate().map_err(|e| e.to_string())?;
                if *from > pos {
                    return Err(format!("chunk at {from} leaves a gap after {pos} (frame {i}, {} units)", text.len()));
                }
                pos = pos.max(*seq);
            }
            Frame::End { seq, .. } if *seq > pos => {
                return Err(format!("end at {seq} claims more than the {pos} units delivered"));
            }
            _ => {}
        }
    }
    let terminal_last = frames.last().is_some_and(Frame::is_terminal);
    if closed && !terminal_last {
        return Err("a closed subscription does not end with a terminal".into());
    }
    Ok(())
}

/// A little reader of fuzz bytes: every read succeeds (zeros once the input runs out).
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (usize::from(self.byte()) << 8 | usize::from(self.byte())) % n
    }
    fn done(&self) -> bool {
        self.at >= self.data.len()
    }
}

/// Decoding never panics; whatever decodes re-encodes to something that decodes to itself and
/// satisfies the frame invariants.
pub fn frame_json_scenario(data: &[u8]) -> Result<(), String> {
    let Ok(frame) = decode_frame_bytes(data) else { return Ok(()) };
    frame.validate().map_err(|e| format!("decoded frame is invalid: {e}"))?;
    let encoded = encode_frame(&frame);
    let again = decode_frame_bytes(encoded.as_bytes()).map_err(|e| format!("re-decoding {encoded}: {e}"))?;
    if again != frame {
        return Err(format!("round trip changed the frame: {frame:?} vs {again:?}"));
    }
    Ok(())
}

/// A producer event's JSON decoding (`message::input`): never panics, what decodes names no
/// reserved key in a value, and written back out (every member, in order) it decodes to itself.
pub fn producer_event_scenario(data: &[u8]) -> Result<(), String> {
    use crate::json::write_json_string;
    use crate::message::{check_value, parse_producer_event, write_attrs, PartRef, ProducerEvent};
    let Ok(text) = std::str::from_utf8(data) else { return Ok(()) };
    let Ok(event) = parse_producer_event(text) else { return Ok(()) };
    let mut out = String::from("{\"type\":");
    let string = |out: &mut String, key: &str, t: &Text| {
        out.push_str(&format!(",\"{key}\":"));
        write_json_string(out, t.units());
    };
    let part = |out: &mut String, r: &PartRef| match r {
        PartRef::Number(n) => out.push_str(&format!(",\"part\":{n}")),
        PartRef::Id(id) => string(out, "id", id),
    };
    let value = |out: &mut String, v: &crate::message::Attrs| -> Result<(), String> {
        check_value(v).map_err(|e| format!("a decoded value names a reserved key: {e}"))?;
        out.push_str(",\"value\":");
        write_attrs(out, v);
        Ok(())
    };
    match &event {
        ProducerEvent::Chunk { part: p, text } => {
            out.push_str("\"chunk\"");
            part(&mut out, p);
            string(&mut out, "text", text);
        }
        ProducerEvent::Start { kind, id, value: v } => {
            out.push_str("\"part\"");
            string(&mut out, "kind", kind);
            if let Some(id) = id {
                string(&mut out, "id", id);
            }
            value(&mut out, v)?;
        }
        ProducerEvent::End { part: p, value: v } | ProducerEvent::Set { part: p, value: v } => {
            out.push_str(if matches!(event, ProducerEvent::End { .. }) { "\"part-end\"" } else { "\"set\"" });
            part(&mut out, p);
            value(&mut out, v)?;
        }
        ProducerEvent::Meta { value: v } => {
            out.push_str("\"meta\"");
            value(&mut out, v)?;
        }
        ProducerEvent::Finish { reason } => {
            out.push_str("\"finish\"");
            string(&mut out, "reason", reason);
        }
        ProducerEvent::Transient { kind, value: v } => {
            out.push_str("\"transient\"");
            if let Some(kind) = kind {
                string(&mut out, "kind", kind);
            }
            value(&mut out, v)?;
        }
    }
    out.push('}');
    let again = parse_producer_event(&out).map_err(|e| format!("re-decoding {out}: {e}"))?;
    if again != event {
        return Err(format!("round trip changed the event: {event:?} vs {again:?}"));
    }
    Ok(())
}

/// The SSE decoder gives the same events however the input is split.
pub fn sse_scenario(data: &[u8]) -> Result<(), String> {
    let (&split_seed, body) = data.split_first().unwrap_or((&0, &[]));
    let mut whole = SseDecoder::new();
    let mut expected = Vec::new();
    whole.feed(body, &mut expected);
    whole.finish(&mut expected);
    let mut pieces = SseDecoder::new();
    let mut got = Vec::new();
    let step = usize::from(split_seed % 7) + 1;
    for chunk in body.chunks(step) {
        pieces.feed(chunk, &mut got);
    }
    pieces.finish(&mut got);
    if got != expected || whole.last_event_id() != pieces.last_event_id() || whole.retry() != pieces.retry() {
        return Err(format!("split every {step} bytes changed the events: {got:?} vs {expected:?}"));
    }
    Ok(())
}

/// The batch SSE splitter (`sse::encode_json_array_events`) on arbitrary code units: it never
/// panics, the element count is exact (of two calls whose resume point counts differ by one, at
/// most one succeeds), and a success writes at least every element and its event lines. The first
/// byte picks the count of resume points; the rest are little-endian code units, so surrogates
/// and every structural character are reachable.
pub fn sse_json_array_scenario(data: &[u8]) -> Result<(), String> {
    let (&n, rest) = data.split_first().unwrap_or((&0, &[]));
    let units: Vec<u16> = rest.chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect();
    let ids: Vec<f64> = (0..=usize::from(n % 16)).map(|i| if i % 3 == 0 { f64::NAN } else { i as f64 }).collect();
    let fewer = encode_json_array_events(&units, &ids[..ids.len() - 1]);
    let all = encode_json_array_events(&units, &ids);
    if fewer.is_ok() && all.is_ok() {
        return Err(format!("one array text split into {} and {} elements", ids.len() - 1, ids.len()));
    }
    if let Ok(out) = all {
        // `data: ` and the blank line after each element: 8 units beyond the element itself.
        if out.len() < units.len().saturating_sub(2) + ids.len() * 8 {
            return Err(format!("{} units of events for {} units of array text", out.len(), units.len()));
        }
    }
    Ok(())
}

/// How a relay may mangle a producer's true frames without forging text: each `(op, at)` edits
/// the list in turn, `at` choosing where (reduced modulo whatever range the edit needs).
/// 0 drops a frame, 1 duplicates one, 2 moves one elsewhere, 3 truncates the list, 4 inserts a
/// replay of an earlier span of `produced`, 5 widens a chunk to overlap text before it, 6 inserts
/// a `durable` anywhere up to one past the produced length, 7 inserts an `open` at any offset.
pub fn relay_mutations(truth: &[Frame], produced: &[u16], ops: impl IntoIterator<Item = (u8, usize)>) -> Vec<Frame> {
    let mut relayed = truth.to_vec();
    let span = |from: usize, to: usize| Frame::chunk(from as u64, Text::from_slice(&produced[from..to]));
    for (op, at) in ops {
        if relayed.is_empty() {
            break;
        }
        let i = at % relayed.len();
        match op % 8 {
            0 => {
                relayed.remove(i);
            }
            1 => relayed.insert(i, relayed[i].clone()),
            2 => {
                let f = relayed.remove(i);
                relayed.insert(at % (relayed.len() + 1), f);
            }
            3 => relayed.truncate(i),
            4 => {
                let to = at % (produced.len() + 1);
                if let Ok(replay) = span(to / 2, to) {
                    relayed.insert(i, replay);
                }
            }
            5 => {
                if let Frame::Chunk { from, seq, .. } = relayed[i] {
                    let start = from.saturating_sub(3) as usize;
                    if let Ok(wider) = span(start, seq as usize) {
                        relayed[i] = wider;
                    }
                }
            }
            6 => relayed.insert(i, Frame::Durable { seq: (at % (produced.len() + 2)) as u64 }),
            _ => relayed.insert(
                i,
                Frame::Open {
                    stream_id: "s".into(),
                    from: (at % (produced.len() + 1)) as u64,
                    seq: produced.len() as u64,
                    durable_seq: 0,
                    ended: false,
                },
            ),
        }
    }
    relayed
}

/// A production relayed with replays, overlaps, gaps, drops, duplicates and reordering (never a
/// forged text, see [`relay_mutations`]), through conform and into a reader: the reader never
/// holds text that is not a prefix of the produced text, an `end` that conform passes means the
/// whole text arrived, and conform's output is a legal subscription.
pub fn relay_scenario(data: &[u8]) -> Result<(), String> {
    const PIECES: [&[u16]; 8] =
        [&[0x61], &[0x62, 0x63], &[0x6F22], &[0xD83D, 0xDE00], &[0xD800], &[0xDC00], &[0x20, 0x3042], &[0xD83D]];
    let mut b = Bytes { data, at: 0 };
    let mut produced = Text::new();
    let mut truth = Vec::new();
    for _ in 0..1 + b.below(12) {
        let from = produced.len() as u64;
        let mut delta = Text::new();
        for _ in 0..1 + b.below(3) {
            delta.push_units(PIECES[b.below(PIECES.len())]);
        }
        produced.push_units(delta.units());
        truth.push(Frame::chunk(from, delta).map_err(|e| e.to_string())?);
        if b.below(3) == 0 {
            truth.push(Frame::Durable { seq: b.below(produced.len() + 1) as u64 });
        }
    }
    let total = produced.len();
    truth.push(Frame::End { seq: total as u64, status: StreamStatus::Complete, error: None });
    let join = b.below(total + 1);
    let ops: Vec<(u8, usize)> = (0..b.below(24)).map(|_| (b.byte(), b.below(1 << 16))).collect();
    let relayed = relay_mutations(&truth, produced.units(), ops);
    let mut conform = RelayConform::new("s".into(), join as u64);
    let mut reader = TextReader::new("s".into(), Text::from_slice(&produced.units()[..join]));
    let mut out = Vec::new();
    let mut deliver = |frames: Vec<Frame>, out: &mut Vec<Frame>| -> Result<(), String> {
        for f in frames {
            reader.feed(&f);
            if !produced.units().starts_with(reader.text().units()) {
                return Err(format!("reader holds {:?}, not a prefix of {produced:?}", reader.text()));
            }
            if matches!(f, Frame::End { .. }) && reader.text() != &produced {
                return Err(format!("end passed with only {:?} of {produced:?}", reader.text()));
            }
            out.push(f);
        }
        Ok(())
    };
    for f in relayed {
        deliver(conform.feed(f).frames, &mut out)?;
    }
    let closing = if b.done() || b.below(2) == 0 { conform.end() } else { conform.fail() };
    deliver(closing.frames, &mut out)?;
    check_subscription(&out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_hold_on_simple_inputs() {
        for seed in 0u8..=255 {
            let data: Vec<u8> = (0u8..64).map(|i| seed.wrapping_mul(31).wrapping_add(i.wrapping_mul(7))).collect();
            relay_scenario(&data).unwrap();
            sse_scenario(&data).unwrap();
            frame_json_scenario(&data).unwrap();
        }
        frame_json_scenario(br#"{"type":"chunk","from":1,"seq":2,"text":"\ud800"}"#).unwrap();
        sse_scenario(b"\x03data: a\r\n\r\nid: 1\rdata: b\n\n").unwrap();
    }

    #[test]
    fn the_subscription_checker_catches_broken_contracts() {
        let open = Frame::Open { stream_id: "s".into(), from: 0, seq: 0, durable_seq: 0, ended: false };
        let gap = Frame::chunk(2, "x".into()).unwrap();
        assert!(check_subscription(&[open.clone(), gap, Frame::Absent], true).is_err());
        assert!(check_subscription(std::slice::from_ref(&open), true).is_err());
        assert!(check_subscription(&[Frame::Absent, Frame::Absent], true).is_err());
        assert!(check_subscription(&[Frame::Absent], true).is_ok());
        let end = Frame::End { seq: 3, status: StreamStatus::Complete, error: None };
        assert!(check_subscription(&[open, end], true).is_err());
    }
}
