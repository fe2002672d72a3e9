//! Generators that more than one property test draws from (a module of the test targets, not a
//! test of its own).

use proptest::prelude::*;
use twoplane_core::Text;

/// One or two pieces drawn from `piece`, joined into one text: a delta of the text stream or a
/// body delta of a message, so a lone surrogate piece can land beside another piece or alone.
pub fn joined(piece: impl Strategy<Value = Text>) -> impl Strategy<Value = Text> {
    prop::collection::vec(piece, 1..3).prop_map(|pieces| {
        let mut t = Text::new();
        for p in pieces {
            t.push_units(p.units());
        }
        t
    })
}
