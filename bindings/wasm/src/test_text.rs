//! Text for the binding's unit tests: what JavaScript would pass, as UTF-16 code units.

/// `s` as UTF-16 code units.
pub(crate) fn u(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}
