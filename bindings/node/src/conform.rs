//! The numeric conform pass (docs/contract.md §3) as a JavaScript class. JavaScript keeps the frame
//! objects; per frame it passes the kind code and the numbers the rules read, and gets a verdict
//! code back (`Verdict::code`). The core remembers the violation that ended the pass, so the
//! reason text is built only when one happened.

use napi::{Env, JsString};
use napi_derive::napi;
use twoplane_core::conform::{RawPieces, Violation};
use twoplane_core::Conform as CoreConform;

use crate::error::Kind;
use crate::text::{js_string, units_of};
use napi::Result;

/// A kind code as the backend interface passes it: 0..=5 are frame kinds, anything else
/// (including NaN or a fraction, which a correct adapter never sends) is "unknown".
pub(crate) fn kind_code(kind: f64) -> u32 {
    if (0.0..6.0).contains(&kind) && kind.trunc() == kind {
        kind as u32
    } else {
        6
    }
}

#[napi(js_name = "Conform")]
pub struct NapiConform {
    core: CoreConform,
}

#[napi]
impl NapiConform {
    /// Any number is accepted, as the JavaScript class it replaces accepts it.
    #[napi(constructor, catch_unwind)]
    pub fn new(from: f64) -> Self {
        NapiConform { core: CoreConform::new(from) }
    }

    /// One frame, reduced to numbers (see `docs/js-backend.md`); returns the verdict code.
    #[napi(catch_unwind)]
    pub fn feed(&mut self, kind: f64, id_matches: bool, a: f64, b: f64, c: f64) -> u32 {
        self.core.feed_code(kind_code(kind), id_matches, a, b, c)
    }

    /// The source finished without a terminal frame.
    #[napi(catch_unwind)]
    pub fn end(&mut self) -> u32 {
        self.core.end().code()
    }

    /// The source threw or the reader is being dropped.
    #[napi(catch_unwind)]
    pub fn fail(&mut self) -> u32 {
        self.core.fail().code()
    }

    #[napi(catch_unwind)]
    pub fn pos(&self) -> f64 {
        self.core.pos()
    }

    #[napi(catch_unwind)]
    pub fn last_durable(&self) -> f64 {
        self.core.last_durable()
    }

    #[napi(catch_unwind)]
    pub fn requested(&self) -> f64 {
        self.core.requested()
    }

    /// The code of the last violation, or -1 when none happened.
    #[napi(catch_unwind)]
    pub fn violation(&self) -> i32 {
        self.core.last_violation().map_or(-1, |v| v.code() as i32)
    }

    /// The reason text of the last violation, built from the offending frame's own values as
    /// JavaScript prints them (any of which may hold unpaired surrogates, kept as they are).
    #[napi(catch_unwind)]
    pub fn reason<'e>(
        &self,
        env: &'e Env,
        stream_id_json: JsString,
        from: JsString,
        seq: JsString,
        type_json: JsString,
    ) -> Result<JsString<'e>, Kind> {
        match self.core.last_violation() {
            None => js_string(env, &[]),
            Some(violation) => stream_reason(env, &violation, &stream_id_json, &from, &seq, &type_json),
        }
    }
}

/// The reason text of a six-frame rule's violation, from the offending frame's values as
/// JavaScript printed them, read as UTF-16 so unpaired surrogates stay as they are. Both
/// conform passes (this one and `MessageConform`'s) answer a stream rule's reason with it.
pub(crate) fn stream_reason<'e>(
    env: &'e Env,
    violation: &Violation,
    stream_id_json: &JsString,
    from: &JsString,
    seq: &JsString,
    type_json: &JsString,
) -> Result<JsString<'e>, Kind> {
    let (id, from, seq, ty) = (units_of(stream_id_json)?, units_of(from)?, units_of(seq)?, units_of(type_json)?);
    let raw = RawPieces { stream_id_json: &id, from: &from, seq: &seq, type_json: &ty };
    js_string(env, violation.reason(&raw).units())
}
