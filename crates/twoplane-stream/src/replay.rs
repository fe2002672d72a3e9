//! A join's replay: the few frames a subscriber gets before the live log, with its text kept as
//! a view of the stream's own blocks and cut into `chunk` pieces only as the subscriber drains.
//!
//! Owns: [`Block`] (a run of produced units shared by the stream and every replay that covers
//! it), [`TextSpan`] (a replay's text: shared blocks, the part whose body they are and how far
//! they have been handed out) and [`Replay`] (the queue of frames and spans, in order: a
//! single text's replay has one span, a message's one per run of a part's body).
//!
//! Why: a join at offset 0 of a long stream used to copy the whole text under the stream's lock
//! and encode it as one event per subscriber, so 1,000 joins held 1,000 copies. A span holds
//! reference counts, not units; each piece is copied out (and encoded) as it is taken, so a
//! subscriber holds at most one piece at a time.
//!
//! Guarantees:
//! - The pieces of a span are `chunk` frames that join up exactly: the first starts at the
//!   span's start, each next one at the previous one's `seq`, the last ends at the span's end;
//!   their text is the produced units, none replaced, dropped or reordered; each names the
//!   span's part and its body offset, moved with it (a part 0 span whose body offset is its
//!   coordinate gives today's chunks, written in the shorthand).
//! - A piece's SSE event is at most the byte limit it was cut for, unless one character does not
//!   fit (a piece always holds at least one unit, or a whole surrogate pair): the size is counted
//!   exactly as the core's JSON writer writes each unit.
//! - No cut falls between the halves of a surrogate pair (the core's cut rule,
//!   [`twoplane_core::text::pair_safe_cut`]); a lone surrogate stays as it came. The span's own
//!   end is where the join snapshot ended, as a single chunk's end was.
//! - A span that fits in one piece is one chunk, byte for byte the coalesced chunk a join gave
//!   before pieces existed.
//! - Consumed blocks are released as the span moves past them.

use std::collections::VecDeque;
use std::sync::Arc;

use twoplane_core::message::encode_message_event_into;
use twoplane_core::message::MessageFrame;
use twoplane_core::text::{is_high_surrogate, is_low_surrogate, pair_safe_cut};
use twoplane_core::Text;

/// A run of produced units, shared (reference counted) by the stream's text and the replays
/// that cover it. A stream's blocks are never changed once shared: the stream copies a shared
/// tail before it appends to it (`hosted/text.rs`).
pub(crate) type Block = Arc<Vec<u16>>;

/// The byte limit of a piece taken as a frame (`next`, `try_next`), where the reader names no
/// batch size: the SSE endpoint's default batch, so either way of reading cuts the same pieces
/// by default.
pub(crate) const FRAME_PIECE_BYTES: usize = 32 * 1024;

/// A replay's text: `[at, end)` of the stream, held as shared blocks: the body of part `part`
/// from body offset `body_at`.
pub(crate) struct TextSpan {
    /// Blocks covering `[at, end)`; the first starts at `base`.
    blocks: VecDeque<Block>,
    base: u64,
    at: u64,
    end: u64,
    part: u32,
    /// The body offset of the unit at `at`.
    body_at: u64,
}

impl TextSpan {
    /// The units `[at, end)` of `blocks`, whose first unit is at offset `base` (the caller
    /// checked that the blocks cover the range).
    pub fn new(blocks: VecDeque<Block>, base: u64, at: u64, end: u64) -> TextSpan {
        let mut span = TextSpan { blocks, base, at, end, part: 0, body_at: at };
        span.release_consumed();
        span
    }

    /// The span as the body of `part` from body offset `body_at` (a message's run).
    pub fn of_part(mut self, part: u32, body_at: u64) -> TextSpan {
        self.part = part;
        self.body_at = body_at;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.at >= self.end
    }

    /// The unit at offset `pos` (`pos` in `[at, end)`), and where it is.
    fn locate(&self, pos: u64) -> Option<(usize, usize)> {
        let mut first = self.base;
        for (i, block) in self.blocks.iter().enumerate() {
            let len = block.len() as u64;
            if pos < first + len {
                return Some((i, (pos - first) as usize));
            }
            first += len;
        }
        None
    }

    /// Drop the blocks wholly below `at`: nothing will read them again.
    fn release_consumed(&mut self) {
        while let Some(first) = self.blocks.front() {
            let len = first.len() as u64;
            if self.base + len > self.at {
                break;
            }
            self.base += len;
            self.blocks.pop_front();
        }
    }

    /// The next piece, its SSE event at most `max_bytes` (see the module guarantees), or `None`
    /// when the span is handed out.
    pub fn next_piece(&mut self, max_bytes: usize) -> Option<MessageFrame> {
        if self.is_empty() {
            return None;
        }
        let budget = max_bytes.saturating_sub(self.piece_overhead());
        let (mut bi, mut off) = self.locate(self.at)?;
        let mut units: Vec<u16> = Vec::new();
        let mut used = 0usize;
        let mut pos = self.at;
        // `next` is the unit after the one being priced (a pair's low half), when the span has
        // it: within the span, not past its end.
        while pos < self.end {
            let Some(block) = self.blocks.get(bi) else { break };
            let Some(&unit) = block.get(off) else {
                bi += 1;
                off = 0;
                continue;
            };
            let next = if pos + 1 < self.end { self.unit_after(bi, off) } else { None };
            let cost = unit_json_len(unit, next, units.last().copied());
            if used + cost > budget && !units.is_empty() {
                break;
            }
            used += cost;
            units.push(unit);
            pos += 1;
            off += 1;
        }
        if units.is_empty() {
            // The blocks do not cover the span (the stream's text guarantees they do): end it
            // rather than hand out an empty piece for ever.
            self.at = self.end;
            self.blocks.clear();
            return None;
        }
        if pos < self.end {
            // An inner cut: never between the halves of a pair (the core's rule, on the two
            // units around the cut). Moved back it would leave the piece empty, so a pair that
            // alone exceeds the limit goes whole.
            if let (Some(&before), Some(after)) = (units.last(), self.unit_at(pos)) {
                if pair_safe_cut(&[before, after], 1) == 0 {
                    if units.len() > 1 {
                        units.pop();
                        pos -= 1;
                    } else {
                        units.push(after);
                        pos += 1;
                    }
                }
            }
        }
        let (from, at) = (self.at, self.body_at);
        self.body_at += pos - from;
        self.at = pos;
        self.release_consumed();
        Some(MessageFrame::Chunk { from, seq: pos, part: self.part, at, text: Text::from_units(units) })
    }

    /// The bytes of a piece's event from here besides its text's JSON content: `seq` (and a
    /// part's body offset) are written with the digits of the most they can be, so the count
    /// never falls short.
    fn piece_overhead(&self) -> usize {
        let (from, end) = (self.at, self.end);
        let at = if self.part == 0 && self.body_at == from { from } else { self.body_at + (end - from) };
        let mut s = String::new();
        encode_message_event_into(
            &mut s,
            &MessageFrame::Chunk { from, seq: end, part: self.part, at, text: Text::new() },
        );
        s.len()
    }

    fn unit_after(&self, bi: usize, off: usize) -> Option<u16> {
        let block = self.blocks.get(bi)?;
        match block.get(off + 1) {
            Some(&u) => Some(u),
            None => self.blocks.get(bi + 1).and_then(|b| b.first().copied()),
        }
    }

    fn unit_at(&self, pos: u64) -> Option<u16> {
        if pos >= self.end {
            return None;
        }
        let (bi, off) = self.locate(pos)?;
        self.blocks.get(bi)?.get(off).copied()
    }
}

/// Bytes the core's JSON writer (`write_json_string`) spends on `unit`, given the unit after it
/// and the one before it in the same string: a pair is four bytes, two per half; an unpaired
/// surrogate is a six-byte `\u` escape.
fn unit_json_len(unit: u16, next: Option<u16>, prev: Option<u16>) -> usize {
    match unit {
        0x22 | 0x5C | 0x08 | 0x0C | 0x0A | 0x0D | 0x09 => 2,
        0x00..=0x1F => 6,
        0x20..=0x7F => 1,
        0x80..=0x7FF => 2,
        0xD800..=0xDBFF if next.is_some_and(is_low_surrogate) => 2,
        0xDC00..=0xDFFF if prev.is_some_and(is_high_surrogate) => 2,
        0xD800..=0xDFFF => 6,
        _ => 3,
    }
}

enum Item {
    MessageFrame(Arc<MessageFrame>),
    Text(TextSpan),
}

/// What a subscriber gets before the log: frames, and the join's text as spans among them.
///
/// The queue is boxed and made only while there is something in it: every subscriber's slot in
/// its fan-out holds a replay for as long as the subscriber lives, and an idle subscriber's is
/// empty (one word instead of a queue's four).
#[derive(Default)]
pub(crate) struct Replay {
    #[allow(clippy::box_collection)] // the box is the point: one word in every slot, not four
    items: Option<Box<VecDeque<Item>>>,
}

impl Replay {
    fn queue(&mut self) -> &mut VecDeque<Item> {
        self.items.get_or_insert_with(Box::default)
    }

    pub fn push_frame(&mut self, frame: Arc<MessageFrame>) {
        self.queue().push_back(Item::MessageFrame(frame));
    }

    pub fn push_text(&mut self, span: TextSpan) {
        if !span.is_empty() {
            self.queue().push_back(Item::Text(span));
        }
    }

    /// Entries still owed, a span counting as one (it is one coalesced chunk, whatever pieces it
    /// is sent in).
    pub fn len(&self) -> usize {
        self.items.as_ref().map_or(0, |items| items.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the next frame would be cut from the text.
    pub fn text_next(&self) -> bool {
        matches!(self.items.as_ref().and_then(|items| items.front()), Some(Item::Text(_)))
    }

    /// The next frame; a piece of the text is cut for `max_bytes` (see [`TextSpan::next_piece`]).
    pub fn pop(&mut self, max_bytes: usize) -> Option<Arc<MessageFrame>> {
        let items = self.items.as_mut()?;
        loop {
            match items.front_mut()? {
                Item::MessageFrame(_) => {
                    let Some(Item::MessageFrame(f)) = items.pop_front() else { return None };
                    return Some(f);
                }
                Item::Text(span) => {
                    if let Some(piece) = span.next_piece(max_bytes) {
                        if span.is_empty() {
                            items.pop_front();
                        }
                        return Some(Arc::new(piece));
                    }
                    items.pop_front();
                }
            }
        }
    }

    /// Give back the queue once it is empty (an idle subscriber holds no storage).
    pub fn release_if_empty(&mut self) {
        if self.is_empty() {
            self.items = None;
        }
    }

    fn of(items: VecDeque<Item>) -> Replay {
        Replay { items: (!items.is_empty()).then(|| Box::new(items)) }
    }
}

impl From<VecDeque<Arc<MessageFrame>>> for Replay {
    fn from(frames: VecDeque<Arc<MessageFrame>>) -> Replay {
        Replay::of(frames.into_iter().map(Item::MessageFrame).collect())
    }
}

impl From<Vec<Arc<MessageFrame>>> for Replay {
    fn from(frames: Vec<Arc<MessageFrame>>) -> Replay {
        Replay::of(frames.into_iter().map(Item::MessageFrame).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(units: &[u16], size: usize) -> VecDeque<Block> {
        units.chunks(size.max(1)).map(|c| Arc::new(c.to_vec())).collect()
    }

    fn event_len(f: &MessageFrame) -> usize {
        let mut s = String::new();
        encode_message_event_into(&mut s, f);
        s.len()
    }

    /// Cut `units[at..]` (held in blocks of `size`) into pieces for `max`, checking each piece.
    fn cut(units: &[u16], size: usize, at: usize, max: usize) -> Vec<MessageFrame> {
        let mut span = TextSpan::new(blocks(units, size), 0, at as u64, units.len() as u64);
        let mut out = Vec::new();
        let mut next_from = at as u64;
        while let Some(piece) = span.next_piece(max) {
            let MessageFrame::Chunk { from, seq, text, .. } = &piece else { panic!("not a chunk: {piece:?}") };
            assert_eq!(*from, next_from, "contiguous");
            assert_eq!(*seq - *from, text.len() as u64);
            assert!(!text.is_empty());
            assert_eq!(text.units(), &units[*from as usize..*seq as usize]);
            let inner = (*seq as usize) < units.len();
            if inner {
                assert_ne!(pair_safe_cut(units, *seq as usize), *seq as usize - 1, "a cut inside a pair at {seq}");
            }
            let one_char = text.len() == 1 || (text.len() == 2 && is_high_surrogate(text.units()[0]));
            assert!(event_len(&piece) <= max || one_char, "piece of {} bytes over {max}", event_len(&piece));
            next_from = *seq;
            out.push(piece);
        }
        assert_eq!(next_from, units.len() as u64, "the pieces reach the end");
        out
    }

    #[test]
    fn a_span_that_fits_is_the_one_chunk_a_join_always_gave() {
        let units: Vec<u16> = "héllo 😀 wörld".encode_utf16().collect();
        let whole = MessageFrame::chunk(0, 0, 0, Text::from_slice(&units)).unwrap();
        assert_eq!(cut(&units, 3, 0, event_len(&whole)), vec![whole.clone()], "exactly at the limit: one piece");
        assert_eq!(cut(&units, 3, 0, event_len(&whole) - 1).len(), 2, "one byte less: two");
    }

    #[test]
    fn sizes_are_counted_as_the_json_writer_writes_them() {
        // Every kind of unit the writer treats apart, lone surrogates at both ends of pairs.
        let mut units: Vec<u16> = "a\"\\\n\t\u{1}\u{7f}é漢😀".encode_utf16().collect();
        units.extend([0xD800, 0x41, 0xDC00, 0xDBFF]);
        for at in 0..units.len() {
            let piece = TextSpan::new(blocks(&units, 2), 0, at as u64, units.len() as u64).next_piece(usize::MAX);
            let piece = piece.unwrap();
            let counted: usize = (at..units.len())
                .map(|i| {
                    let next = units.get(i + 1).copied();
                    let prev = if i > at { Some(units[i - 1]) } else { None };
                    unit_json_len(units[i], next, prev)
                })
                .sum();
            let overhead = TextSpan::new(VecDeque::new(), 0, at as u64, units.len() as u64).piece_overhead();
            assert_eq!(event_len(&piece), overhead + counted, "from {at}");
        }
    }

    #[test]
    fn pieces_never_split_a_pair_and_keep_lone_surrogates() {
        let mut units: Vec<u16> = Vec::new();
        for i in 0..200u16 {
            match i % 5 {
                0 => units.extend("😀".encode_utf16()),
                1 => units.push(0xD800),
                2 => units.push(0xDC01),
                3 => units.extend("ab".encode_utf16()),
                _ => units.push(0xE9),
            }
        }
        for max in [1, 60, 61, 70, 97, 200, 1000] {
            for size in [1, 3, 64] {
                for at in [0, 1, 2, 7] {
                    cut(&units, size, at, max);
                }
            }
        }
    }

    #[test]
    fn consumed_blocks_are_released() {
        let units = vec![0x61u16; 1000];
        let mut span = TextSpan::new(blocks(&units, 100), 0, 250, 1000);
        assert_eq!(span.blocks.len(), 8, "the two blocks below the start are not held");
        span.next_piece(
            event_len(&MessageFrame::Chunk { from: 250, seq: 1000, part: 0, at: 250, text: Text::new() }) + 300,
        );
        assert_eq!(span.at, 550);
        assert_eq!(span.blocks.len(), 5);
    }

    #[test]
    fn a_replay_yields_its_frames_and_pieces_in_order() {
        let open = Arc::new(MessageFrame::Open {
            stream_id: "s".into(),
            from: 0,
            seq: 10,
            durable_seq: 4,
            ended: false,
            parts: None,
        });
        let mut r = Replay::default();
        r.push_frame(open.clone());
        r.push_text(TextSpan::new(blocks(&[0x61; 10], 4), 0, 0, 10));
        r.push_text(TextSpan::new(VecDeque::new(), 0, 3, 3));
        r.push_frame(Arc::new(MessageFrame::Durable { seq: 4 }));
        assert_eq!(r.len(), 3, "an empty span is not queued");
        assert_eq!(r.pop(1).unwrap(), open);
        assert!(r.text_next());
        let mut text = Vec::new();
        while r.text_next() {
            let MessageFrame::Chunk { text: t, .. } = &*r.pop(1).unwrap() else { panic!() };
            text.extend_from_slice(t.units());
        }
        assert_eq!(text, vec![0x61; 10]);
        assert!(matches!(*r.pop(1).unwrap(), MessageFrame::Durable { seq: 4 }));
        assert!(r.pop(1).is_none() && r.is_empty());
    }

    #[test]
    fn a_part_span_names_its_part_and_moves_its_body_offset() {
        let units: Vec<u16> = "abcdefghij".encode_utf16().collect();
        let mut span = TextSpan::new(blocks(&units, 4), 0, 3, 10).of_part(2, 40);
        // Room for exactly three ASCII units after what a piece from 3 to at most 10 costs.
        let limit = span.piece_overhead() + 3;
        let first = span.next_piece(limit).unwrap();
        assert_eq!(first, MessageFrame::chunk(3, 2, 40, "def".into()).unwrap());
        let rest = span.next_piece(usize::MAX).unwrap();
        assert_eq!(rest, MessageFrame::chunk(6, 2, 43, "ghij".into()).unwrap());
        // Part 0 whose body offset is not its coordinate is not the shorthand either.
        let mut span = TextSpan::new(blocks(&units, 4), 0, 0, 2).of_part(0, 1);
        assert_eq!(span.next_piece(usize::MAX).unwrap(), MessageFrame::chunk(0, 0, 1, "ab".into()).unwrap());
        // Every piece's size is within its limit, counted with its part and offset.
        for max in [60, 70, 80, 1000] {
            let mut span = TextSpan::new(blocks(&units, 3), 0, 0, 10).of_part(123, 99_999);
            while let Some(piece) = span.next_piece(max) {
                let MessageFrame::Chunk { text, .. } = &piece else { panic!() };
                assert!(event_len(&piece) <= max || text.len() == 1, "{max}: {piece:?}");
            }
        }
    }
}
