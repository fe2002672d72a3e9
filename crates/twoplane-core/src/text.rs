//! UTF-16 text, the unit of every offset in twoplane.
//!
//! [`Text`] holds UTF-16 code units exactly as JavaScript does: unpaired surrogates are kept, and
//! slicing is allowed at any code-unit offset, including between the two halves of a pair. No
//! operation here replaces, drops or reorders a code unit; only the explicitly lossy
//! [`Text::to_string_lossy`] does, and it is never used on a path that feeds text back out.

use std::fmt;

use crate::error::{Error, ErrorKind, Result};

/// An owned UTF-16 string whose length and offsets are code units.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text {
    units: Vec<u16>,
}

impl Text {
    pub const fn new() -> Self {
        Text { units: Vec::new() }
    }

    pub fn with_capacity(units: usize) -> Self {
        Text { units: Vec::with_capacity(units) }
    }

    /// Wrap code units as they are (any sequence is legal, unpaired surrogates included).
    pub fn from_units(units: Vec<u16>) -> Self {
        Text { units }
    }

    pub fn from_slice(units: &[u16]) -> Self {
        Text { units: units.to_vec() }
    }

    /// Length in UTF-16 code units (JavaScript's `length`).
    pub fn len(&self) -> usize {
        self.units.len()
    }

    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    pub fn units(&self) -> &[u16] {
        &self.units
    }

    pub fn into_units(self) -> Vec<u16> {
        self.units
    }

    /// The units in `start..end`, or an error when the range is reversed or past the end.
    pub fn slice(&self, start: usize, end: usize) -> Result<&[u16]> {
        if start > end || end > self.units.len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("range {start}..{end} is outside a text of {} code units", self.units.len()),
            ));
        }
        Ok(&self.units[start..end])
    }

    /// The units from `start` to the end; empty when `start` is at or past the end (like
    /// JavaScript's `slice`, which never throws).
    pub fn tail(&self, start: usize) -> &[u16] {
        &self.units[start.min(self.units.len())..]
    }

    pub fn push_str(&mut self, s: &str) {
        self.units.extend(s.encode_utf16());
    }

    pub fn push_units(&mut self, units: &[u16]) {
        self.units.extend_from_slice(units);
    }

    /// Keep the first `len` units (no-op when already shorter).
    pub fn truncate(&mut self, len: usize) {
        self.units.truncate(len);
    }

    /// Whether every surrogate is paired (the text converts to a Rust `String` without loss).
    pub fn is_well_formed(&self) -> bool {
        char::decode_utf16(self.units.iter().copied()).all(|c| c.is_ok())
    }

    /// The text as UTF-8, or `None` when it holds an unpaired surrogate.
    pub fn to_string_checked(&self) -> Option<String> {
        String::from_utf16(&self.units).ok()
    }

    /// The text as UTF-8 with unpaired surrogates replaced by U+FFFD. For display and logs only.
    pub fn to_string_lossy(&self) -> String {
        String::from_utf16_lossy(&self.units)
    }

    /// Where a checkpoint of this text may end, at or before `at`. See [`pair_safe_cut`].
    pub fn pair_safe_cut(&self, at: usize) -> usize {
        pair_safe_cut(&self.units, at)
    }
}

/// The cut rule for checkpoints (docs/contract.md §0, §6): the end of a write of `units[..at]`,
/// where `units` is the text produced so far and may still grow.
///
/// No write may hold half of a surrogate pair, because a database stores text, not code units,
/// and rejects or mangles a lone half. So the cut moves back by one unit when the unit before it
/// is a high surrogate that could be the first half of a pair: either the unit after the cut is
/// a low surrogate (the cut is inside a pair), or the cut is at the end of `units`, where the
/// partner may still be pushed. A high surrogate followed by anything else is unpaired and is
/// written as it is. `at` past the end counts as the end.
///
/// The seal is not a cut: it writes the whole text, a trailing lone surrogate included, because
/// nothing can follow it.
pub fn pair_safe_cut(units: &[u16], at: usize) -> usize {
    let at = at.min(units.len());
    let pair_may_follow =
        at > 0 && is_high_surrogate(units[at - 1]) && units.get(at).is_none_or(|&u| is_low_surrogate(u));
    if pair_may_follow {
        at - 1
    } else {
        at
    }
}

pub fn is_high_surrogate(u: u16) -> bool {
    (0xD800..=0xDBFF).contains(&u)
}

pub fn is_low_surrogate(u: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&u)
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text { units: s.encode_utf16().collect() }
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text::from(s.as_str())
    }
}

impl From<&[u16]> for Text {
    fn from(units: &[u16]) -> Self {
        Text::from_slice(units)
    }
}

impl From<Vec<u16>> for Text {
    fn from(units: Vec<u16>) -> Self {
        Text::from_units(units)
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.units.iter().copied().eq(other.encode_utf16())
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl fmt::Display for Text {
    /// Lossy: unpaired surrogates print as U+FFFD. Use the JSON codec to keep them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in char::decode_utf16(self.units.iter().copied()) {
            fmt::Write::write_char(f, c.unwrap_or(char::REPLACEMENT_CHARACTER))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Text {
    /// Shows unpaired surrogates as `\u{d800}` so tests that fail say exactly what differed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for c in char::decode_utf16(self.units.iter().copied()) {
            match c {
                Ok(c) => write!(f, "{}", c.escape_debug())?,
                Err(e) => write!(f, "\\u{{{:x}}}", e.unpaired_surrogate())?,
            }
        }
        f.write_str("\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_utf16_units() {
        assert_eq!(Text::from("a😀b").len(), 4);
        assert_eq!(Text::from("漢字").len(), 2);
    }

    #[test]
    fn unpaired_surrogates_survive() {
        let t = Text::from_units(vec![0x61, 0xD800, 0x62, 0xDC00]);
        assert!(!t.is_well_formed());
        assert_eq!(t.to_string_checked(), None);
        assert_eq!(Text::from_slice(t.units()).units(), &[0x61, 0xD800, 0x62, 0xDC00]);
        assert_eq!(format!("{t:?}"), "\"a\\u{d800}b\\u{dc00}\"");
    }

    #[test]
    fn slicing_between_pair_halves_is_allowed() {
        let t = Text::from("😀");
        assert_eq!(t.slice(0, 1).unwrap(), &[0xD83D]);
        assert_eq!(t.slice(1, 2).unwrap(), &[0xDE00]);
        assert!(t.slice(1, 3).is_err());
        assert!(t.slice(2, 1).is_err());
        assert_eq!(t.tail(5), &[] as &[u16]);
    }

    #[test]
    fn pair_safe_cut_snaps_back_one_unit() {
        let t = Text::from("a😀b");
        assert_eq!(t.pair_safe_cut(2), 1);
        assert_eq!(t.pair_safe_cut(1), 1);
        assert_eq!(t.pair_safe_cut(3), 3);
        assert_eq!(t.pair_safe_cut(9), 4);
        assert_eq!(t.pair_safe_cut(0), 0);
    }

    #[test]
    fn pair_safe_cut_holds_back_a_high_surrogate_at_the_live_end() {
        // The partner of a trailing high surrogate may be the next push.
        assert_eq!(pair_safe_cut(&[0x61, 0xD800], 2), 1);
        assert_eq!(pair_safe_cut(&[0x61, 0xD800], 7), 1);
        assert_eq!(pair_safe_cut(&[0xD800], 1), 0);
        // Followed by something other than a low half, it is unpaired for good: write it.
        assert_eq!(pair_safe_cut(&[0xD800, 0x61], 1), 1);
        assert_eq!(pair_safe_cut(&[0xD800, 0xD800], 1), 1);
        // A trailing low surrogate, paired or not, ends nothing that could still grow.
        assert_eq!(pair_safe_cut(&[0x61, 0xDC00], 2), 2);
        assert_eq!(pair_safe_cut(&[0xD83D, 0xDE00], 2), 2);
        assert_eq!(pair_safe_cut(&[], 0), 0);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// Units biased towards surrogates, where the rule has something to decide.
        fn unit() -> impl Strategy<Value = u16> {
            prop_oneof![Just(0x61u16), 0xD800u16..=0xDBFF, 0xDC00u16..=0xDFFF, any::<u16>()]
        }

        proptest! {
            /// Whatever is pushed next, the write `units[..cut]` never ends between the two halves
            /// of a pair of the grown text, and it gives up at most the one unit that could.
            #[test]
            fn a_cut_never_splits_a_pair_of_any_continuation(
                units in proptest::collection::vec(unit(), 0..12),
                more in proptest::collection::vec(unit(), 0..3),
                at in 0usize..14,
            ) {
                let cut = pair_safe_cut(&units, at);
                let want = at.min(units.len());
                prop_assert!(cut == want || cut + 1 == want);
                let grown: Vec<u16> = units.iter().chain(&more).copied().collect();
                let splits = cut > 0 && cut < grown.len()
                    && is_high_surrogate(grown[cut - 1]) && is_low_surrogate(grown[cut]);
                prop_assert!(!splits, "cut {} of {:?} + {:?}", cut, units, more);
                // It backs off only for a high surrogate that a low one may follow.
                if cut < want {
                    prop_assert!(is_high_surrogate(units[cut]));
                    prop_assert!(units.get(want).is_none_or(|&u| is_low_surrogate(u)));
                }
                // A cut that is already safe is kept.
                prop_assert_eq!(pair_safe_cut(&units, cut), cut);
            }
        }
    }
}
