//! The part rules of docs/contract.md §8, once, over numbers: what a chunk or a structural event
//! does to a message whose state is reduced to its length and each part's body length and end.
//!
//! [`Tally`] is shared by the relay conform pass, the numeric reader, the Rust reader and durable
//! assembly, so they cannot disagree. Numbers are `f64` and follow JavaScript, as in the
//! six-frame conform pass: a value that is not a number is NaN and fails every integer check.
//! The checks come in the order of §8: the frame's own shape, then the global coordinate (gap,
//! replay), then the part it names, so a replay is absorbed before its part is looked at.

use super::frame::MessageKind;
use crate::jsnum::is_integer;

/// The largest offset JavaScript holds exactly.
const MAX: f64 = crate::jsnum::MAX_SAFE_INTEGER as f64;

/// A message reduced to numbers: its length in the coordinate, and per part the body length and
/// whether it ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Tally {
    pos: f64,
    lens: Vec<f64>,
    ended: Vec<bool>,
}

/// What an accepted frame does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    /// Everything in it is already held (a replay): nothing changes.
    Held,
    /// Body text for `part`: the body becomes `body[..at] ++ text`; its first `held` units were
    /// already held.
    Body {
        part: u32,
        at: f64,
        held: f64,
    },
    Start {
        part: u32,
    },
    End {
        part: u32,
    },
    Set {
        part: u32,
    },
    Meta,
    Finish,
    Transient,
}

impl Decision {
    /// The part the decision touches, if one.
    pub fn part(self) -> Option<u32> {
        match self {
            Decision::Body { part, .. }
            | Decision::Start { part }
            | Decision::End { part }
            | Decision::Set { part } => Some(part),
            _ => None,
        }
    }
}

/// Which rule a frame broke.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Breach {
    /// Offsets that are not integers, a part number that is not one, an event not one unit wide.
    Malformed,
    /// A chunk's text does not span exactly its offsets.
    Span,
    /// The frame starts past what is held.
    Gap { from: f64, pos: f64 },
    /// The frame names a part that has not started.
    UnknownPart { part: f64 },
    /// A `part` that does not start the next part (a second start, or a change of kind).
    NotNext { part: f64, count: f64 },
    /// A chunk whose body offset does not continue its part's body of `len` units.
    BodyBreak { part: f64, at: f64, len: f64 },
    /// A chunk for a part that has ended.
    AfterEnd { part: f64 },
}

impl Tally {
    /// A message of `pos` units that had nothing structural: part 0 holds all of it.
    pub fn new(pos: f64) -> Self {
        Tally { pos, lens: vec![pos], ended: vec![false] }
    }

    /// A message of `pos` units whose parts have the body lengths `lens` (part 0 first; an empty
    /// list is read as `[pos]`), none of them known to have ended.
    pub fn with_parts(pos: f64, lens: &[f64]) -> Self {
        if lens.is_empty() {
            return Tally::new(pos);
        }
        Tally { pos, lens: lens.to_vec(), ended: vec![false; lens.len()] }
    }

    pub fn pos(&self) -> f64 {
        self.pos
    }

    pub fn part_count(&self) -> usize {
        self.lens.len()
    }

    pub fn body_len(&self, part: usize) -> Option<f64> {
        self.lens.get(part).copied()
    }

    pub fn is_ended(&self, part: usize) -> bool {
        self.ended.get(part).copied().unwrap_or(false)
    }

    /// Whether `lens` is a part table a relay may claim at `pos`: integers, part 0 included, whose
    /// bodies fit in `pos` (every other unit is a structural event).
    pub fn table_fits(pos: f64, lens: &[f64]) -> bool {
        !lens.is_empty() && lens.iter().all(|&l| is_integer(l) && l >= 0.0) && lens.iter().sum::<f64>() <= pos
    }

    /// Decide one frame without changing anything. `kind` is a chunk or an event (anything else
    /// is [`Breach::Malformed`]); `len` is a chunk's text length (NaN when not a string); `part`
    /// and `at` are NaN when absent, which for a chunk means part 0 at `from`.
    pub fn decide(
        &self,
        kind: MessageKind,
        from: f64,
        seq: f64,
        len: f64,
        part: f64,
        at: f64,
    ) -> Result<Decision, Breach> {
        if kind == MessageKind::Chunk {
            return self.decide_chunk(from, seq, len, part, at);
        }
        if !kind.is_event() {
            return Err(Breach::Malformed);
        }
        if !(is_integer(from) && from >= 0.0 && seq == from + 1.0 && seq <= MAX) {
            return Err(Breach::Malformed);
        }
        if kind.names_part() && !is_part(part) {
            return Err(Breach::Malformed);
        }
        if from > self.pos {
            return Err(Breach::Gap { from, pos: self.pos });
        }
        if seq <= self.pos {
            return Ok(Decision::Held);
        }
        let count = self.lens.len() as f64;
        let p = part as u32;
        match kind {
            MessageKind::Part if part != count => Err(Breach::NotNext { part, count }),
            MessageKind::Part => Ok(Decision::Start { part: p }),
            MessageKind::PartEnd | MessageKind::Set if part >= count => Err(Breach::UnknownPart { part }),
            MessageKind::PartEnd => Ok(Decision::End { part: p }),
            MessageKind::Set => Ok(Decision::Set { part: p }),
            MessageKind::Meta => Ok(Decision::Meta),
            MessageKind::Finish => Ok(Decision::Finish),
            _ => Ok(Decision::Transient),
        }
    }

    fn decide_chunk(&self, from: f64, seq: f64, len: f64, part: f64, at: f64) -> Result<Decision, Breach> {
        // NaN (no string) never equals anything, so it fails the span check as it should.
        // An offset past 2^53 - 1 cannot round-trip through JavaScript: malformed, as the text
        // reader has it.
        if !(is_integer(from) && is_integer(seq) && from >= 0.0 && seq <= MAX && len == seq - from) {
            return Err(Breach::Span);
        }
        let (part, at) = match (part.is_nan(), at.is_nan()) {
            (true, true) => (0.0, from),
            _ if is_part(part) && is_integer(at) && (0.0..=MAX).contains(&at) => (part, at),
            _ => return Err(Breach::Malformed),
        };
        if from > self.pos {
            return Err(Breach::Gap { from, pos: self.pos });
        }
        if seq <= self.pos {
            return Ok(Decision::Held);
        }
        let Some(&body) = self.lens.get(part as usize).filter(|_| part < self.lens.len() as f64) else {
            return Err(Breach::UnknownPart { part });
        };
        if self.is_ended(part as usize) {
            return Err(Breach::AfterEnd { part });
        }
        let held = self.pos - from;
        if at + held != body {
            return Err(Breach::BodyBreak { part, at, len: body });
        }
        Ok(Decision::Body { part: part as u32, at, held })
    }

    /// Apply an accepted decision for a frame ending at `seq`.
    pub fn commit(&mut self, decision: Decision, seq: f64) {
        match decision {
            Decision::Held => return,
            Decision::Body { part, .. } => {
                if let Some(len) = self.lens.get_mut(part as usize) {
                    *len += seq - self.pos;
                }
            }
            Decision::Start { .. } => {
                self.lens.push(0.0);
                self.ended.push(false);
            }
            Decision::End { part } => {
                if let Some(e) = self.ended.get_mut(part as usize) {
                    *e = true;
                }
            }
            Decision::Set { .. } | Decision::Meta | Decision::Finish | Decision::Transient => {}
        }
        self.pos = seq;
    }
}

/// A part number: an integer in `0..=2^32-1`.
fn is_part(x: f64) -> bool {
    is_integer(x) && (0.0..=f64::from(u32::MAX)).contains(&x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use MessageKind as K;

    const NAN: f64 = f64::NAN;

    // Every caller decides and commits apart (the reader and the conform pass commit only what
    // changes something, after their own checks; the fold after applying the frame), so one call
    // doing both is the tests' shorthand and no part of the API.
    impl Tally {
        fn step(&mut self, kind: K, from: f64, seq: f64, len: f64, part: f64, at: f64) -> Result<Decision, Breach> {
            let decision = self.decide(kind, from, seq, len, part, at)?;
            self.commit(decision, seq);
            Ok(decision)
        }
    }

    #[test]
    fn a_single_text_is_part_0_at_from() {
        let mut t = Tally::new(0.0);
        assert_eq!(t.step(K::Chunk, 0.0, 2.0, 2.0, NAN, NAN), Ok(Decision::Body { part: 0, at: 0.0, held: 0.0 }));
        assert_eq!(t.step(K::Chunk, 1.0, 4.0, 3.0, NAN, NAN), Ok(Decision::Body { part: 0, at: 1.0, held: 1.0 }));
        assert_eq!(t.step(K::Chunk, 0.0, 3.0, 3.0, NAN, NAN), Ok(Decision::Held));
        assert_eq!(t.step(K::Chunk, 5.0, 6.0, 1.0, NAN, NAN), Err(Breach::Gap { from: 5.0, pos: 4.0 }));
        assert_eq!(t.body_len(0), Some(4.0));
    }

    #[test]
    fn parts_start_in_order_and_bodies_continue() {
        let mut t = Tally::new(0.0);
        assert_eq!(t.step(K::Part, 0.0, 1.0, NAN, 2.0, NAN), Err(Breach::NotNext { part: 2.0, count: 1.0 }));
        assert_eq!(t.step(K::Part, 0.0, 1.0, NAN, 1.0, NAN), Ok(Decision::Start { part: 1 }));
        assert_eq!(t.step(K::Part, 0.0, 1.0, NAN, 1.0, NAN), Ok(Decision::Held));
        assert_eq!(t.step(K::Part, 1.0, 2.0, NAN, 1.0, NAN), Err(Breach::NotNext { part: 1.0, count: 2.0 }));
        assert_eq!(t.step(K::Chunk, 1.0, 3.0, 2.0, 2.0, 0.0), Err(Breach::UnknownPart { part: 2.0 }));
        assert_eq!(t.step(K::Chunk, 1.0, 3.0, 2.0, 1.0, 1.0), Err(Breach::BodyBreak { part: 1.0, at: 1.0, len: 0.0 }));
        // A shorthand chunk is part 0 at `from`, which no longer continues part 0.
        assert_eq!(t.step(K::Chunk, 1.0, 3.0, 2.0, NAN, NAN), Err(Breach::BodyBreak { part: 0.0, at: 1.0, len: 0.0 }));
        assert_eq!(t.step(K::Chunk, 1.0, 3.0, 2.0, 1.0, 0.0), Ok(Decision::Body { part: 1, at: 0.0, held: 0.0 }));
        assert_eq!(t.step(K::Chunk, 2.0, 4.0, 2.0, 1.0, 1.0), Ok(Decision::Body { part: 1, at: 1.0, held: 1.0 }));
        assert_eq!(t.step(K::PartEnd, 4.0, 5.0, NAN, 1.0, NAN), Ok(Decision::End { part: 1 }));
        assert_eq!(t.step(K::Chunk, 5.0, 6.0, 1.0, 1.0, 3.0), Err(Breach::AfterEnd { part: 1.0 }));
        assert_eq!(t.step(K::Set, 5.0, 6.0, NAN, 3.0, NAN), Err(Breach::UnknownPart { part: 3.0 }));
        assert_eq!(t.step(K::Set, 5.0, 6.0, NAN, 1.0, NAN), Ok(Decision::Set { part: 1 }));
        assert_eq!(t.step(K::Chunk, 6.0, 7.0, 1.0, 0.0, 0.0), Ok(Decision::Body { part: 0, at: 0.0, held: 0.0 }));
        assert_eq!(t.pos(), 7.0);
        assert_eq!((t.body_len(0), t.body_len(1)), (Some(1.0), Some(3.0)));
    }

    #[test]
    fn shapes_are_checked_first() {
        let t = Tally::new(3.0);
        assert_eq!(t.decide(K::Meta, 3.0, 5.0, NAN, NAN, NAN), Err(Breach::Malformed));
        assert_eq!(t.decide(K::Set, 3.0, 4.0, NAN, 0.5, NAN), Err(Breach::Malformed));
        assert_eq!(t.decide(K::Set, 3.0, 4.0, NAN, -1.0, NAN), Err(Breach::Malformed));
        assert_eq!(t.decide(K::Chunk, 3.0, 4.0, 1.0, 0.0, NAN), Err(Breach::Malformed));
        assert_eq!(t.decide(K::Chunk, 3.0, 4.0, NAN, NAN, NAN), Err(Breach::Span));
        assert_eq!(t.decide(K::Open, 3.0, 4.0, NAN, NAN, NAN), Err(Breach::Malformed));
        assert_eq!(t.decide(K::Finish, 9.0, 10.0, NAN, NAN, NAN), Err(Breach::Gap { from: 9.0, pos: 3.0 }));
        assert_eq!(t.decide(K::Transient, 3.0, 4.0, NAN, NAN, NAN), Ok(Decision::Transient));
        assert!(Tally::table_fits(3.0, &[1.0, 1.0]));
        assert!(!Tally::table_fits(3.0, &[2.0, 2.0]));
        assert!(!Tally::table_fits(3.0, &[]));
        assert!(!Tally::table_fits(3.0, &[0.5]));
        assert_eq!(Tally::with_parts(2.0, &[]), Tally::new(2.0));
        // Offsets past 2^53 - 1 are malformed, as for the text reader.
        let big = 9_007_199_254_740_994.0;
        assert_eq!(t.decide(K::Chunk, big, big + 2.0, 2.0, NAN, NAN), Err(Breach::Span));
        assert_eq!(t.decide(K::Meta, big, big + 1.0, NAN, NAN, NAN), Err(Breach::Malformed));
        assert_eq!(t.decide(K::Chunk, 3.0, 4.0, 1.0, 0.0, big), Err(Breach::Malformed));
    }
}
