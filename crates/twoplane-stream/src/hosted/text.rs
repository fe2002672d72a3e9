//! The produced text of one hosted stream, as far as it is still held in memory.
//!
//! Owns: the held units, the offset of the first of them (the floor: a join below it is
//! `stale`), and the produced length.
//!
//! Guarantees:
//! - Text only grows at the end and is never altered: no unit is replaced, dropped or reordered,
//!   and unpaired surrogates stay as they came.
//! - Trimming only goes below a floor the caller names (the durable length less the retained
//!   allowance), so everything past the durable length is always held: a checkpoint can always
//!   cut its slice, and the seal can always write the whole body.
//! - [`Produced::writable_end`] never cuts a surrogate pair (the core's cut rule), except at the
//!   seal, which writes the text whole.

use twoplane_core::text::pair_safe_cut;

pub(crate) struct Produced {
    /// The text still held; its first unit is at offset `from` of the stream.
    buf: Vec<u16>,
    from: u64,
    /// Produced length.
    seq: u64,
}

impl Produced {
    pub fn new() -> Produced {
        Produced { buf: Vec::new(), from: 0, seq: 0 }
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
    pub fn append(&mut self, units: &[u16], seq: u64) {
        self.buf.extend_from_slice(units);
        self.seq = seq;
    }

    /// The units in `[from, to)`; `from` is at or above the floor.
    pub fn range(&self, from: u64, to: u64) -> &[u16] {
        &self.buf[(from - self.from) as usize..(to - self.from) as usize]
    }

    /// The units from `at` (at or above the floor) to the end.
    pub fn since(&self, at: u64) -> &[u16] {
        &self.buf[(at - self.from) as usize..]
    }

    /// Everything held, for the seal's body.
    pub fn held(&self) -> &[u16] {
        &self.buf
    }

    /// Release the units below `floor`, if any are still held.
    pub fn release_below(&mut self, floor: u64) {
        if floor > self.from {
            self.buf.drain(..(floor - self.from) as usize);
            self.from = floor;
        }
    }

    /// The end of the text a checkpoint may write now, `durable` being the store's length: the
    /// core's cut rule ([`twoplane_core::text::pair_safe_cut`]) applied to the produced text.
    /// With `whole` (the seal) the whole text is written, lone surrogate or not; the durable
    /// length never goes backwards.
    pub fn writable_end(&self, durable: u64, whole: bool) -> u64 {
        if whole || self.seq <= durable {
            return self.seq;
        }
        // Everything past `durable` is still in the buffer (trimming only goes below it).
        let held = (self.seq - self.from) as usize;
        let cut = self.from + pair_safe_cut(&self.buf, held) as u64;
        cut.max(durable)
    }
}
