//! Messages made of parts (docs/contract.md §8) as JavaScript classes and functions: the frame
//! codec, the relay conform pass, the numeric reader, the durable message and the reader that
//! holds one. Conversion only; every rule is `twoplane_core::message`'s.
//!
//! Guarantees, and why:
//! - **Per frame, numbers**: the conform pass and the readers take the kind code, whether the
//!   stream id matches, the three offsets, `part` and `at` (NaN when absent), as the six-frame
//!   classes do; the frame objects stay in JavaScript. The package's reader is the numeric
//!   [`NapiMessageReaderCore`]: JavaScript keeps the message and applies its actions. The durable
//!   message and its folding reader are the core's own, which the package's tests hold the
//!   JavaScript fold to.
//! - **Text in as UTF-16 code units** ([`units_of`]), so a lone surrogate is refused by the core
//!   (`invalid_json`) instead of being replaced on the way in; what comes out is JSON the core
//!   wrote, which escapes lone surrogates, so it crosses as UTF-16 unchanged too.
//! - **No panic**: every failure is an error whose `code` is the core's kind.

use napi::bindgen_prelude::Float64Array;
use napi::{Env, JsString};
use napi_derive::napi;
use twoplane_core::jsnum::offset_arg;
use twoplane_core::message::{
    assemble_durable_message, decode_message_frame_units, encode_message_event, encode_message_frame,
    message_resume_point, FrameNumbers, Message, MessageAction, MessageChunkRow, MessageConform, MessageReaderCore,
    MessageViolation,
};
use twoplane_core::Text;

use crate::conform::stream_reason;
use crate::error::{from_core, Kind};
use crate::text::{js_string, units_of};
use napi::Result;

/// A message kind code as the adapter passes it: anything that is not a small integer is
/// "unknown" (`MessageKind::from_code` reads every code past the last kind as unknown).
fn kind_code(kind: f64) -> u32 {
    if (0.0..64.0).contains(&kind) && kind.trunc() == kind {
        kind as u32
    } else {
        u32::MAX
    }
}

#[allow(clippy::too_many_arguments)]
fn numbers(kind: f64, id_matches: bool, a: f64, b: f64, c: f64, part: f64, at: f64) -> FrameNumbers {
    FrameNumbers { kind: kind_code(kind), id_matches, a, b, c, part, at }
}

fn out_string<'e>(env: &'e Env, s: &str) -> Result<JsString<'e>, Kind> {
    let units: Vec<u16> = s.encode_utf16().collect();
    js_string(env, &units)
}

/// `JSON.stringify(frame)` decoded strictly and written back by the core: the frame's JSON, or
/// its SSE event when `asEvent`.
#[napi(catch_unwind)]
pub fn message_frame_encode<'e>(env: &'e Env, json: JsString, as_event: bool) -> Result<JsString<'e>, Kind> {
    let frame = decode_message_frame_units(&units_of(&json)?).map_err(from_core)?;
    let out = if as_event { encode_message_event(&frame) } else { encode_message_frame(&frame) };
    out_string(env, &out)
}

/// The field a refused frame's decode error names, null when it names none or the frame
/// decodes: asked once a decode failed, so the error can carry it.
#[napi(catch_unwind)]
pub fn message_frame_error_field(json: JsString) -> Result<Option<String>, Kind> {
    Ok(decode_message_frame_units(&units_of(&json)?).err().and_then(|e| e.field_name()).map(str::to_owned))
}

/// The SSE `id:` of a frame given as JSON text, or -1 when it has none.
#[napi(catch_unwind)]
pub fn message_frame_resume_point(json: JsString) -> Result<f64, Kind> {
    let frame = decode_message_frame_units(&units_of(&json)?).map_err(from_core)?;
    Ok(message_resume_point(&frame).map_or(-1.0, |id| id as f64))
}

#[napi(js_name = "MessageConform")]
pub struct NapiMessageConform {
    core: MessageConform,
}

#[napi]
impl NapiMessageConform {
    #[napi(constructor, catch_unwind)]
    pub fn new(from: f64) -> Self {
        NapiMessageConform { core: MessageConform::new(from) }
    }

    /// One frame other than an `open` with a part table; returns the verdict code.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn feed(&mut self, kind: f64, id_matches: bool, a: f64, b: f64, c: f64, part: f64, at: f64) -> u32 {
        self.core.feed_numbers(numbers(kind, id_matches, a, b, c, part, at)).code()
    }

    /// An `open` whose `parts` member is present (its elements as numbers, NaN for others).
    #[napi(catch_unwind)]
    pub fn open(&mut self, id_matches: bool, from: f64, seq: f64, durable_seq: f64, parts: Float64Array) -> u32 {
        self.core.feed_open(id_matches, from, seq, durable_seq, Some(&parts[..])).code()
    }

    #[napi(catch_unwind)]
    pub fn end(&mut self) -> u32 {
        self.core.end().code()
    }

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

    #[napi(catch_unwind)]
    pub fn violation(&self) -> i32 {
        self.core.last_violation().map_or(-1, |v| v.code() as i32)
    }

    /// The last violation's reason: a six-frame rule's quotes the frame's printed values, a part
    /// rule's is built from numbers alone.
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
            Some(MessageViolation::Part(p)) => js_string(env, p.reason().units()),
            Some(MessageViolation::Stream(v)) => stream_reason(env, &v, &stream_id_json, &from, &seq, &type_json),
        }
    }
}

/// A durable message, as assembled from its row and chunk rows.
#[napi(js_name = "DurableMessage")]
pub struct NapiMessage {
    message: Message,
}

#[napi]
impl NapiMessage {
    #[napi(catch_unwind)]
    pub fn document<'e>(&self, env: &'e Env) -> Result<JsString<'e>, Kind> {
        js_string(env, self.message.document().units())
    }

    /// The length in the coordinate (`len` is taken by clippy's convention for collections).
    #[napi(js_name = "len", catch_unwind)]
    pub fn coordinate_len(&self) -> f64 {
        self.message.len() as f64
    }

    /// Every part's body length (an `open`'s `parts`), empty when nothing structural happened.
    #[napi(catch_unwind)]
    pub fn part_table(&self) -> Vec<f64> {
        self.message.part_table().unwrap_or_default().into_iter().map(|l| l as f64).collect()
    }

    /// A reader holding a copy of this message.
    #[napi(catch_unwind)]
    pub fn reader(&self) -> NapiMessageReader {
        let message = self.message.clone();
        NapiMessageReader {
            core: MessageReaderCore::new(message.tally().clone()),
            message,
            part: f64::NAN,
            at: f64::NAN,
        }
    }
}

/// The durable message from its row (`body`, the stored document `stored`: null when not a
/// string; the row's `seq`) and its chunk rows packed as `MessageChunkRow::from_js_packed` reads
/// them.
#[napi(catch_unwind)]
#[allow(clippy::too_many_arguments)]
pub fn assemble_durable_message_of(
    body: Option<JsString>,
    stored: Option<JsString>,
    seq: f64,
    seqs: Float64Array,
    texts: JsString,
    text_lens: Float64Array,
    parts: JsString,
    parts_lens: Float64Array,
) -> Result<NapiMessage, Kind> {
    let seq = offset_arg("seq", seq).map_err(from_core)?;
    let (texts, parts) = (units_of(&texts)?, units_of(&parts)?);
    let rows = MessageChunkRow::from_js_packed(&seqs, &texts, &text_lens, &parts, &parts_lens).map_err(from_core)?;
    let body = body.as_ref().map(|s| units_of(s)).transpose()?.map(Text::from_units);
    let stored = stored.as_ref().map(|s| units_of(s)).transpose()?.map(Text::from_units);
    let message = assemble_durable_message(body.as_ref(), stored.as_ref(), seq, &rows).map_err(from_core)?;
    Ok(NapiMessage { message })
}

/// A message's reader: the numeric core decides; the adapter hands over the frames whose action
/// changed the message, so the message held (and its document) is the core's.
#[napi(js_name = "MessageReader")]
pub struct NapiMessageReader {
    core: MessageReaderCore,
    message: Message,
    part: f64,
    at: f64,
}

#[napi]
impl NapiMessageReader {
    /// One frame as numbers; returns the `MessageAction::code`.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn feed(&mut self, kind: f64, id_matches: bool, a: f64, b: f64, c: f64, part: f64, at: f64) -> u32 {
        let action = self.core.feed_numbers(numbers(kind, id_matches, a, b, c, part, at));
        self.part = action.part().map_or(f64::NAN, f64::from);
        self.at = match action {
            MessageAction::Splice { at, .. } => at as f64,
            _ => f64::NAN,
        };
        action.code()
    }

    /// The part of the last action (NaN when it named none).
    #[napi(catch_unwind)]
    pub fn part(&self) -> f64 {
        self.part
    }

    /// The splice offset of the last action (NaN when it was no splice).
    #[napi(catch_unwind)]
    pub fn at(&self) -> f64 {
        self.at
    }

    /// Fold the frame (its JSON text) whose action changed the message into the message held.
    #[napi(catch_unwind)]
    pub fn apply(&mut self, json: JsString) -> Result<(), Kind> {
        let frame = decode_message_frame_units(&units_of(&json)?).map_err(from_core)?;
        self.message.apply(&frame).map(|_| ()).map_err(from_core)
    }

    #[napi(catch_unwind)]
    pub fn document<'e>(&self, env: &'e Env) -> Result<JsString<'e>, Kind> {
        js_string(env, self.message.document().units())
    }

    #[napi(catch_unwind)]
    pub fn resume_from(&self) -> f64 {
        // The held message's length: the core's resume point whenever every change was folded,
        // and still what is held when the adapter could not fold one (it stops the reader then).
        self.message.len() as f64
    }

    #[napi(catch_unwind)]
    pub fn stop_code(&self) -> i32 {
        self.core.stopped().map_or(-1, |r| r.code() as i32)
    }
}

/// The numeric reader (`twoplane_core::message::MessageReaderCore`): JavaScript keeps the message
/// and applies the action each frame's numbers get.
#[napi(js_name = "MessageReaderCore")]
pub struct NapiMessageReaderCore {
    core: MessageReaderCore,
    at: f64,
}

#[napi]
impl NapiMessageReaderCore {
    /// A reader holding a durable message of `len` units whose part table is `parts` (empty:
    /// nothing structural happened) and whose parts numbered in `ended` have ended.
    #[napi(constructor, catch_unwind)]
    pub fn new(len: f64, parts: Float64Array, ended: Float64Array) -> Result<Self, Kind> {
        Ok(NapiMessageReaderCore {
            core: MessageReaderCore::from_js(len, &parts, &ended).map_err(from_core)?,
            at: f64::NAN,
        })
    }

    /// One frame as numbers. Returns the action and its part in one number (one call fewer per
    /// frame): `MessageAction::code`, plus `16 * (part + 1)` when the action names a part.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn feed(&mut self, kind: f64, id_matches: bool, a: f64, b: f64, c: f64, part: f64, at: f64) -> f64 {
        let action = self.core.feed_numbers(numbers(kind, id_matches, a, b, c, part, at));
        self.at = match action {
            MessageAction::Splice { at, .. } => at as f64,
            _ => f64::NAN,
        };
        f64::from(action.code()) + action.part().map_or(0.0, |p| 16.0 * (f64::from(p) + 1.0))
    }

    /// The splice offset of the last action (NaN when it was no splice).
    #[napi(catch_unwind)]
    pub fn at(&self) -> f64 {
        self.at
    }

    #[napi(catch_unwind)]
    pub fn stop_code(&self) -> i32 {
        self.core.stopped().map_or(-1, |r| r.code() as i32)
    }

    #[napi(catch_unwind)]
    pub fn resume_from(&self) -> f64 {
        self.core.resume_from() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_core_packs_the_part_and_knows_the_ends() {
        let nan = f64::NAN;
        let core = MessageReaderCore::from_js(3.0, &[0.0, 2.0], &[1.0]).unwrap();
        let mut r = NapiMessageReaderCore { core, at: nan };
        // Part 1 ended: a set is fine (action 5, part 1), a chunk is not.
        assert_eq!(r.feed(9.0, false, 3.0, 4.0, nan, 1.0, nan), 5.0 + 32.0);
        assert_eq!(r.feed(1.0, false, 4.0, 5.0, 1.0, 1.0, 2.0), 2.0);
        assert_eq!((r.stop_code(), r.resume_from()), (5, 4.0));
        let mut fresh = NapiMessageReaderCore { core: MessageReaderCore::from_js(0.0, &[], &[]).unwrap(), at: nan };
        assert_eq!(fresh.feed(1.0, false, 0.0, 2.0, 2.0, nan, nan), 1.0 + 16.0);
        assert_eq!(fresh.at(), 0.0);
        assert_eq!(
            MessageReaderCore::from_js(1.0, &[], &[1.0]).unwrap_err().kind(),
            twoplane_core::ErrorKind::InvalidArgument
        );
        assert_eq!(
            MessageReaderCore::from_js(-1.0, &[], &[]).unwrap_err().kind(),
            twoplane_core::ErrorKind::InvalidOffset
        );
    }
}
