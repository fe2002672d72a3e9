//! The reader state machine (docs/contract.md §4) as a JavaScript class over numbers: JavaScript keeps
//! the accumulated text and applies the action code (0 ignore, 1 splice at `at()`, 2 stop).

use napi_derive::napi;
use twoplane_core::reader::ReaderInput;
use twoplane_core::{Reader as CoreReader, ReaderAction};

use crate::conform::kind_code;
use crate::error::{from_core, Kind};
use napi::Result;

#[napi(js_name = "Reader")]
pub struct NapiReader {
    core: CoreReader,
    at: f64,
}

#[napi]
impl NapiReader {
    /// `durableLen` is the length of the durable text the reader joined with: an offset.
    #[napi(constructor, catch_unwind)]
    pub fn new(durable_len: f64) -> Result<Self, Kind> {
        Ok(NapiReader { core: CoreReader::from_js_len(durable_len).map_err(from_core)?, at: 0.0 })
    }

    #[napi(catch_unwind)]
    pub fn feed(&mut self, kind: f64, id_matches: bool, a: f64, b: f64, c: f64) -> u32 {
        let action = self.core.feed(ReaderInput::from_code(kind_code(kind), id_matches, a, b, c));
        if let ReaderAction::Splice { at } = action {
            self.at = at as f64;
        }
        action.code()
    }

    /// The splice offset of the last splice action.
    #[napi(catch_unwind)]
    pub fn at(&self) -> f64 {
        self.at
    }

    /// `StopReason::code` after a stop, -1 while the reader is live.
    #[napi(catch_unwind)]
    pub fn stop_code(&self) -> i32 {
        self.core.stopped().map_or(-1, |r| r.code() as i32)
    }

    #[napi(catch_unwind)]
    pub fn acc_len(&self) -> f64 {
        self.core.acc_len() as f64
    }

    #[napi(catch_unwind)]
    pub fn resume_from(&self) -> f64 {
        self.core.resume_from() as f64
    }
}
