//! Messages made of parts (docs/contract.md §8) across the wasm boundary: the relay conform pass,
//! the numeric reader, and the helpers the text half ([`crate::message_text`]) shares. Conversion
//! only, as in the rest of this crate: every rule is `twoplane_core::message`'s.
//!
//! Guarantees, and why:
//! - **The per-frame calls take numbers** (`messageConformFeed`, `messageReaderCoreFeed`: the
//!   kind code plus 256 when the stream id matches, the three offsets, `part` and `at`, NaN when
//!   absent), exactly as the six-frame calls do; frames, text and JSON values stay in JavaScript,
//!   which applies the reader's actions to the message it holds (npm/twoplane/src/message-state.js).
//! - **Nothing panics**: a stale handle gets a sentinel answer, bad input a `"<kind>: ..."` error.
//!
//! Why the text half is not in by default: the JSON codec, the durable message and the reader
//! that holds one bring the core's JSON reader, its float parser and the fold, about 41 KB
//! gzipped, which the shipped module's budget (tests/browser/size.test.mjs) cannot hold. The
//! package does not need them: it parses with `JSON.parse` and asks the numeric reader here. The
//! text half builds with the `message-text` feature; the Node addon always has it.

use std::cell::{Cell, RefCell};

use twoplane_core::conform::RawPieces;
use twoplane_core::message::{FrameNumbers, MessageAction, MessageConform, MessageReaderCore, MessageViolation};
use wasm_bindgen::prelude::*;

use crate::{Slab, NO_INSTANCE};

/// The id match travels with the kind code as one number, as in the six-frame calls, but on a
/// higher bit: message kind codes run past 8 (`part-end` is 8).
pub(crate) const ID_MATCHES: u32 = 256;

thread_local! {
    /// Where `messageReaderCoreFeed` leaves the part its action names and a splice's body offset
    /// (NaN when none), for JavaScript to read through a `Float64Array` over the module's memory
    /// (`messageReaderCoreOut`): the numbers of a splice come back without a second call.
    static OUT: Cell<[f64; 2]> = const { Cell::new([f64::NAN, f64::NAN]) };
}

thread_local! {
    static CONFORMS: RefCell<Slab<MessageConform>> = const { RefCell::new(Slab::new()) };
    static READER_CORES: RefCell<Slab<MessageReaderCore>> = const { RefCell::new(Slab::new()) };
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

// ------------------------------------------------------------------ the numeric reader

/// A reader holding a durable message of `len` units whose part table is `parts` (empty: nothing
/// structural happened) and whose parts numbered in `ended` have ended
/// (`twoplane_core::message::MessageReaderCore::from_js`). Returns its handle; a
/// length, table or end that cannot be is the core's `"<kind>: ..."` error.
#[wasm_bindgen(js_name = messageReaderCoreNew)]
pub fn message_reader_core_new(len: f64, parts: &[f64], ended: &[f64]) -> Result<u32, String> {
    let core = MessageReaderCore::from_js(len, parts, ended).map_err(|e| e.to_string())?;
    Ok(insert(&READER_CORES, core))
}

#[wasm_bindgen(js_name = messageReaderCoreDrop)]
pub fn message_reader_core_drop(h: u32) {
    remove(&READER_CORES, h);
}

/// One frame as numbers (as `messageConformFeed`). Returns the `MessageAction::code` (-1 for an
/// unknown handle) and leaves the part it names and a splice's body offset in the out slot.
#[wasm_bindgen(js_name = messageReaderCoreFeed)]
pub fn message_reader_core_feed(h: u32, kind_id: u32, a: f64, b: f64, c: f64, part: f64, at: f64) -> i32 {
    let action = with(&READER_CORES, h, None, |core| Some(core.feed_numbers(numbers(kind_id, a, b, c, part, at))));
    let part = action.and_then(MessageAction::part).map_or(f64::NAN, f64::from);
    let at = match action {
        Some(MessageAction::Splice { at, .. }) => at as f64,
        _ => f64::NAN,
    };
    OUT.with(|out| out.set([part, at]));
    action.map_or(-1, |a| a.code() as i32)
}

/// The address of the out slot (two `f64`: part, body offset) in the module's memory. It never
/// moves; the memory may grow, after which JavaScript makes a new view of it.
#[wasm_bindgen(js_name = messageReaderCoreOut)]
pub fn message_reader_core_out() -> u32 {
    OUT.with(|out| out.as_ptr() as usize as u32)
}

/// `StopReason::code` once stopped, -1 while live.
#[wasm_bindgen(js_name = messageReaderCoreStopCode)]
pub fn message_reader_core_stop_code(h: u32) -> i32 {
    with(&READER_CORES, h, -1, |core| core.stopped().map_or(-1, |r| r.code() as i32))
}

/// Where a reconnect resumes: the length of the message held.
#[wasm_bindgen(js_name = messageReaderCoreResumeFrom)]
pub fn message_reader_core_resume_from(h: u32) -> f64 {
    with(&READER_CORES, h, f64::NAN, |core| core.resume_from() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_text::u;

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

    /// The part and body offset the last feed left in the out slot.
    fn out() -> [f64; 2] {
        OUT.with(Cell::get)
    }

    #[test]
    fn reader_core_decides_from_numbers() {
        let nan = f64::NAN;
        // A message of 3 units: part 0 empty, part 1 ("reasoning", 2 units) started at 0.
        let r = message_reader_core_new(3.0, &[0.0, 2.0], &[]).unwrap();
        // A splice (code 1) of part 1 at 2.
        assert_eq!(message_reader_core_feed(r, 1, 3.0, 5.0, 2.0, 1.0, 2.0), 1);
        assert_eq!(out(), [1.0, 2.0]);
        // A part-end (code 8) whose stream-id bit is set stays a part-end: action 4, part 1.
        assert_eq!(message_reader_core_feed(r, 8 | ID_MATCHES, 5.0, 6.0, nan, 1.0, nan), 4);
        assert_eq!(out()[0], 1.0);
        assert!(out()[1].is_nan());
        // Meta (action 6) names no part.
        assert_eq!(message_reader_core_feed(r, 10, 6.0, 7.0, nan, nan, nan), 6);
        assert!(out()[0].is_nan());
        assert_eq!(message_reader_core_resume_from(r), 7.0);
        // A chunk for the part that ended stops it (action 2) as malformed (code 5).
        assert_eq!(message_reader_core_feed(r, 1, 7.0, 8.0, 1.0, 1.0, 4.0), 2);
        assert_eq!((message_reader_core_stop_code(r), message_reader_core_resume_from(r)), (5, 7.0));
        message_reader_core_drop(r);
        assert_eq!(message_reader_core_feed(r, 1, 0.0, 1.0, 1.0, nan, nan), -1);
        assert!(out()[0].is_nan() && out()[1].is_nan());
        assert_eq!(message_reader_core_stop_code(r), -1);
    }

    #[test]
    fn reader_core_knows_the_ends_it_is_given() {
        // Part 0 of a two-unit message ended (a stored document's text part): no more body.
        let r = message_reader_core_new(2.0, &[], &[0.0]).unwrap();
        assert_eq!(message_reader_core_feed(r, 1, 2.0, 3.0, 1.0, f64::NAN, f64::NAN), 2);
        assert_eq!(message_reader_core_stop_code(r), 5);
        let open = message_reader_core_new(2.0, &[], &[]).unwrap();
        assert_eq!(message_reader_core_feed(open, 1, 2.0, 3.0, 1.0, f64::NAN, f64::NAN), 1);
        assert_eq!(out(), [0.0, 2.0]);
        for (len, parts, ended, kind) in [
            (f64::NAN, &[][..], &[][..], "invalid_offset: "),
            (1.0, &[2.0][..], &[][..], "invalid_argument: "),
            (2.0, &[1.0, 1.0][..], &[2.0][..], "invalid_argument: "),
            (2.0, &[][..], &[0.5][..], "invalid_argument: "),
            (2.0, &[][..], &[-1.0][..], "invalid_argument: "),
        ] {
            let err = message_reader_core_new(len, parts, ended).unwrap_err();
            assert!(err.starts_with(kind), "{err}");
        }
    }
}
