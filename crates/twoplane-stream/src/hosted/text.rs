//! The produced text of one hosted stream, as far as it is still held in memory.
//!
//! Owns: the held units, the offset of the first of them (the floor: a join below it is
//! `stale`), and the produced length.
//!
//! The units are held as a sequence of reference-counted blocks ([`crate::replay::Block`]) of at
//! most [`BLOCK_UNITS`] each: full blocks, then the growing tail. A join's replay takes a
//! [`TextSpan`] of them (reference counts, not units), so any number of joiners share one copy
//! of the text.
//!
//! Guarantees:
//! - Text only grows at the end and is never altered: no unit is replaced, dropped or reordered,
//!   and unpaired surrogates stay as they came. A block a replay shares is never changed: the
//!   tail is copied (at most [`BLOCK_UNITS`] units, once per append after a join) before it grows.
//! - Trimming only goes below a floor the caller names (the durable length less the retained
//!   allowance), so everything past the durable length is always held: a checkpoint can always
//!   cut its slice, and the seal can always write the whole body. Memory is given back a whole
//!   block at a time, so up to one block below the floor may stay held (never readable).
//! - [`Produced::writable_end`] never cuts a surrogate pair (the core's cut rule), except at the
//!   seal, which writes the text whole.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use twoplane_core::text::pair_safe_cut;

use crate::replay::{Block, TextSpan};

/// Units per block. Small enough that copying a shared tail is cheap; large enough that a span
/// of a long text is few reference counts (a million units: 62).
pub(crate) const BLOCK_UNITS: usize = 16 * 1024;

pub(crate) struct Produced {
    /// Full blocks, oldest first; the first starts at `start`.
    blocks: VecDeque<Block>,
    start: u64,
    /// The units after the full blocks (fewer than [`BLOCK_UNITS`]).
    tail: Block,
    /// The floor: the first unit still readable.
    from: u64,
    /// Produced length.
    seq: u64,
}

impl Produced {
    pub fn new() -> Produced {
        Produced { blocks: VecDeque::new(), start: 0, tail: Arc::new(Vec::new()), from: 0, seq: 0 }
    }

    /// Produced length.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Offset of the first unit still held.
    pub fn floor(&self) -> u64 {
        self.from
    }

    /// Append `units`, making the produced length `seq` (the caller checked it against the
    /// frame limit).
    pub fn append(&mut self, mut units: &[u16], seq: u64) {
        while !units.is_empty() {
            let tail = Arc::make_mut(&mut self.tail);
            let room = BLOCK_UNITS - tail.len();
            let (now, rest) = units.split_at(room.min(units.len()));
            if tail.capacity() < tail.len() + now.len() {
                // Grow by doubling, but never past one block: a full block keeps no slack.
                let want = (tail.capacity() * 2).max(tail.len() + now.len()).min(BLOCK_UNITS);
                tail.reserve_exact(want - tail.len());
            }
            tail.extend_from_slice(now);
            if tail.len() == BLOCK_UNITS {
                let full = std::mem::replace(&mut self.tail, Arc::new(Vec::new()));
                self.blocks.push_back(full);
            }
            units = rest;
        }
        self.seq = seq;
    }

    /// The held parts, oldest first, each with the offset of its first unit.
    fn parts(&self) -> impl Iterator<Item = (u64, &Block)> {
        let mut at = self.start;
        self.blocks.iter().chain(std::iter::once(&self.tail)).map(move |b| {
            let first = at;
            at += b.len() as u64;
            (first, b)
        })
    }

    /// The units in `[from, to)`; `from` is at or above the floor. Borrowed when they lie in
    /// one block, copied when they span several.
    pub fn range(&self, from: u64, to: u64) -> Cow<'_, [u16]> {
        let mut pieces = self.parts().filter_map(|(first, b)| {
            let end = first + b.len() as u64;
            (end > from && first < to).then(|| {
                let lo = (from.max(first) - first) as usize;
                let hi = (to.min(end) - first) as usize;
                &b[lo..hi]
            })
        });
        let Some(one) = pieces.next() else { return Cow::Borrowed(&[]) };
        match pieces.next() {
            None => Cow::Borrowed(one),
            Some(two) => {
                let mut all = Vec::with_capacity((to - from) as usize);
                all.extend_from_slice(one);
                all.extend_from_slice(two);
                pieces.for_each(|p| all.extend_from_slice(p));
                Cow::Owned(all)
            }
        }
    }

    /// Everything readable, for the seal's body.
    pub fn held(&self) -> Cow<'_, [u16]> {
        self.range(self.from, self.seq)
    }

    /// The text from `at` (at or above the floor) to the end, shared: what a join replays.
    pub fn span(&self, at: u64) -> TextSpan {
        self.span_range(at, self.seq)
    }

    /// The text `[at, end)` (at or above the floor), shared: one run of a message's replay.
    pub fn span_range(&self, at: u64, end: u64) -> TextSpan {
        let mut base = None;
        let blocks = self
            .parts()
            .filter(|(first, b)| first + b.len() as u64 > at && *first < end)
            .map(|(first, b)| {
                base.get_or_insert(first);
                b.clone()
            })
            .collect();
        TextSpan::new(blocks, base.unwrap_or(at), at, end)
    }

    /// Release the units below `floor`, if any are still held (whole blocks only).
    pub fn release_below(&mut self, floor: u64) {
        if floor <= self.from {
            return;
        }
        self.from = floor;
        while let Some(first) = self.blocks.front() {
            let end = self.start + first.len() as u64;
            if end > floor {
                break;
            }
            self.start = end;
            self.blocks.pop_front();
        }
    }

    /// The last unit produced, if it is still held.
    fn last_unit(&self) -> Option<u16> {
        self.tail.last().or_else(|| self.blocks.back().and_then(|b| b.last())).copied()
    }

    /// The end of the text a checkpoint may write now, `durable` being the store's length: the
    /// core's cut rule ([`twoplane_core::text::pair_safe_cut`]) applied to the produced text.
    /// With `whole` (the seal) the whole text is written, lone surrogate or not; the durable
    /// length never goes backwards.
    pub fn writable_end(&self, durable: u64, whole: bool) -> u64 {
        if whole || self.seq <= durable {
            return self.seq;
        }
        // The rule looks only at the last unit when the cut is at the end of the text, and
        // everything past `durable` is still held (trimming only goes below it).
        let Some(last) = self.last_unit() else { return self.seq };
        let cut = self.seq - 1 + pair_safe_cut(&[last], 1) as u64;
        cut.max(durable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn produced(units: &[u16], step: usize) -> Produced {
        let mut p = Produced::new();
        let mut seq = 0;
        for part in units.chunks(step) {
            seq += part.len() as u64;
            p.append(part, seq);
        }
        p
    }

    #[test]
    fn blocks_hold_the_text_exactly_and_ranges_span_them() {
        let units: Vec<u16> = (0..(3 * BLOCK_UNITS + 17)).map(|i| (i % 50_000) as u16).collect();
        let p = produced(&units, 5_000);
        assert_eq!(p.blocks.len(), 3);
        assert!(p.blocks.iter().all(|b| b.len() == BLOCK_UNITS && b.capacity() == BLOCK_UNITS));
        assert_eq!(&*p.held(), &units[..]);
        for (from, to) in [(0, 1), (10, BLOCK_UNITS as u64), (100, 2 * BLOCK_UNITS as u64 + 3), (5, 5)] {
            assert_eq!(&*p.range(from, to), &units[from as usize..to as usize]);
        }
        assert!(matches!(p.range(1, 9), Cow::Borrowed(_)), "within one block: no copy");
    }

    #[test]
    fn a_shared_tail_is_copied_before_it_grows_and_trimming_keeps_the_floor() {
        let mut p = produced(&[0x61; 100], 100);
        let span = p.span(0);
        let shared = p.tail.clone();
        p.append(&[0x62; 10], 110);
        assert_eq!(shared.len(), 100, "the replay's view did not change");
        drop(span);
        assert_eq!(
            &*p.range(95, 110),
            &[0x61, 0x61, 0x61, 0x61, 0x61, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62][..]
        );
        let mut big = produced(&vec![0x61; 2 * BLOCK_UNITS + 5], 999);
        big.release_below(BLOCK_UNITS as u64 + 1);
        assert_eq!(big.floor(), BLOCK_UNITS as u64 + 1);
        assert_eq!(big.blocks.len(), 1, "the block wholly below the floor is released");
        assert_eq!(big.held().len(), BLOCK_UNITS + 4);
    }

    #[test]
    fn the_writable_end_follows_the_cut_rule() {
        let p = produced(&[0x61, 0xD83D], 1);
        assert_eq!(p.writable_end(0, false), 1, "a trailing high half waits for its partner");
        assert_eq!(p.writable_end(0, true), 2, "the seal writes it whole");
        assert_eq!(p.writable_end(2, false), 2);
        let q = produced(&[0x61, 0xDC00], 1);
        assert_eq!(q.writable_end(0, false), 2);
    }
}
