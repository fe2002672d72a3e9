//! Messages made of parts (docs/contract.md §8) across the wasm boundary: the relay conform pass,
//! and the helpers the text half ([`crate::message_text`]) shares. Conversion only, as in the rest
//! of this crate: every rule is `twoplane_core::message`'s.
//!
//! Guarantees, and why:
//! - **The per-frame calls take numbers** (`messageConformFeed`: the kind code plus 256 when the
//!   stream id matches, the three offsets, `part` and `at`, NaN when absent), exactly as the
//!   six-frame calls do; frames and text stay in JavaScript.
//! - **Nothing panics**: a stale handle gets a sentinel answer, bad input a `"<kind>: ..."` error.
//!
//! Why the conform pass is all of it by default: the text half (the JSON codec, the durable
//! message and its reader) brings the core's JSON reader, its float parser and the fold, about
//! 41 KB gzipped, which the shipped module's budget (tests/browser/size.test.mjs) cannot hold.
//! It builds with the `message-text` feature; the Node addon always has it.

use std::cell::RefCell;

use twoplane_core::conform::RawPieces;
use twoplane_core::message::{FrameNumbers, MessageConform, MessageViolation};
use wasm_bindgen::prelude::*;

use crate::{Slab, NO_INSTANCE};

/// The id match travels with the kind code as one number, as in the six-frame calls, but on a
/// higher bit: message kind codes run past 8 (`part-end` is 8).
pub(crate) const ID_MATCHES: u32 = 256;

thread_local! {
    static CONFORMS: RefCell<Slab<MessageConform>> = const { RefCell::new(Slab::new()) };
}

pub(crate) type Pool<T> = std::thread::LocalKey<RefCell<Slab<T>>>;

pub(crate) fn with<T: 'static, R>(pool: &'static Pool<T>, h: u32, missing: R, f: impl FnOnce(&mut T) -> R) -> R {
    pool.with(|slab| match slab.try_borrow_mut() {
        Ok(mut slab) => match slab.get_mut(h) {
            Some(state) => f(state),
            None => missing,
        },
        Err(_) => missing,
    })
}

pub(crate) fn insert<T: 'static>(pool: &'static Pool<T>, value: T) -> u32 {
    pool.with(|slab| slab.try_borrow_mut().map_or(NO_INSTANCE, |mut slab| slab.insert(value)))
}

pub(crate) fn remove<T: 'static>(pool: &'static Pool<T>, h: u32) {
    pool.with(|slab| {
        if let Ok(mut slab) = slab.try_borrow_mut() {
            slab.remove(h);
        }
    });
}

pub(crate) fn numbers(kind_id: u32, a: f64, b: f64, c: f64, part: f64, at: f64) -> FrameNumbers {
    FrameNumbers { kind: kind_id & !ID_MATCHES, id_matches: kind_id & ID_MATCHES != 0, a, b, c, part, at }
}

// ------------------------------------------------------------------ the conform pass

#[wasm_bindgen(js_name = messageConformNew)]
pub fn message_conform_new(from: f64) -> u32 {
    insert(&CONFORMS, MessageConform::new(from))
}

#[wasm_bindgen(js_name = messageConformDrop)]
pub fn message_conform_drop(h: u32) {
    remove(&CONFORMS, h);
}

/// One frame other than an `open` with a part table, as numbers. Returns the verdict code.
#[wasm_bindgen(js_name = messageConformFeed)]
pub fn message_conform_feed(h: u32, kind_id: u32, a: f64, b: f64, c: f64, part: f64, at: f64) -> u32 {
    with(&CONFORMS, h, NO_INSTANCE, |s| s.feed_numbers(numbers(kind_id, a, b, c, part, at)).code())
}

/// An `open` whose `parts` member is present: `parts` holds its elements as numbers (NaN for a
/// non-number; a single NaN when `parts` is not an array, which fails the table check).
#[wasm_bindgen(js_name = messageConformOpen)]
pub fn message_conform_open(h: u32, id_matches: bool, from: f64, seq: f64, durable_seq: f64, parts: &[f64]) -> u32 {
    with(&CONFORMS, h, NO_INSTANCE, |s| s.feed_open(id_matches, from, seq, durable_seq, Some(parts)).code())
}

#[wasm_bindgen(js_name = messageConformEnd)]
pub fn message_conform_end(h: u32) -> u32 {
    with(&CONFORMS, h, NO_INSTANCE, |s| s.end().code())
}

#[wasm_bindgen(js_name = messageConformFail)]
pub fn message_conform_fail(h: u32) -> u32 {
    with(&CONFORMS, h, NO_INSTANCE, |s| s.fail().code())
}

#[wasm_bindgen(js_name = messageConformPos)]
pub fn message_conform_pos(h: u32) -> f64 {
    with(&CONFORMS, h, f64::NAN, |s| s.pos())
}

#[wasm_bindgen(js_name = messageConformLastDurable)]
pub fn message_conform_last_durable(h: u32) -> f64 {
    with(&CONFORMS, h, f64::NAN, |s| s.last_durable())
}

#[wasm_bindgen(js_name = messageConformRequested)]
pub fn message_conform_requested(h: u32) -> f64 {
    with(&CONFORMS, h, f64::NAN, |s| s.requested())
}

/// The code of the last violation (a six-frame `Violation::code` or a `PartViolation::code`),
/// or -1.
#[wasm_bindgen(js_name = messageConformViolation)]
pub fn message_conform_violation(h: u32) -> i32 {
    with(&CONFORMS, h, -1, |s| s.last_violation().map_or(-1, |v| v.code() as i32))
}

/// The reason text of the last violation. A six-frame rule's reason quotes the frame's printed
/// values (passed as code units); a part rule's is built from numbers alone.
#[wasm_bindgen(js_name = messageConformReason)]
pub fn message_conform_reason(
    h: u32,
    stream_id_json: &[u16],
    from: &[u16],
    seq: &[u16],
    type_json: &[u16],
) -> Vec<u16> {
    with(&CONFORMS, h, Vec::new(), |s| match s.last_violation() {
        Some(MessageViolation::Stream(v)) => v.reason(&RawPieces { stream_id_json, from, seq, type_json }).into_units(),
        Some(MessageViolation::Part(p)) => p.reason().into_units(),
        None => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    #[test]
    fn conform_reports_part_violations() {
        let c = message_conform_new(0.0);
        assert_eq!(message_conform_feed(c, 7, 0.0, 1.0, f64::NAN, 1.0, f64::NAN), 2);
        assert_eq!(message_conform_feed(c, 1, 1.0, 2.0, 1.0, 2.0, 0.0), 3);
        assert_eq!(message_conform_violation(c), 10);
        assert_eq!(message_conform_reason(c, &[], &[], &[], &[]), u("relay chunk for part 2 at 1 names no known part"));
        assert_eq!((message_conform_pos(c), message_conform_last_durable(c)), (1.0, 0.0));
        message_conform_drop(c);
        assert_eq!(message_conform_feed(c, 1, 0.0, 1.0, 1.0, f64::NAN, f64::NAN), NO_INSTANCE);
        let o = message_conform_new(5.0);
        assert_eq!(message_conform_open(o, true, 5.0, 9.0, 5.0, &[4.0, 2.0]), 3);
        // `part-end` is code 8: the id match sits on its own bit, so it stays a part-end.
        let e = message_conform_new(0.0);
        assert_eq!(message_conform_feed(e, 8 | ID_MATCHES, 0.0, 1.0, f64::NAN, 0.0, f64::NAN), 2);
        assert_eq!(message_conform_violation(e), -1);
    }
}
