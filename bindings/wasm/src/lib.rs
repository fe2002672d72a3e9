//! twoplane-wasm: the twoplane kernel as a WebAssembly module for the npm package `twoplane`.
//!
//! This crate converts and nothing else: every rule lives in `twoplane-core`, and every export
//! here is one call into it. The JavaScript adapter (`npm/twoplane/src/backend-wasm.js`) turns
//! these exports into the backend object of `docs/js-backend.md`.
//!
//! Boundary rules, and why:
//! - **Per-frame calls take and return numbers only** (`conformFeed`, `readerFeed` and the
//!   getters), on instances addressed by integer handles. Strings and frame objects stay in
//!   JavaScript: a numbers-only wasm call costs a few nanoseconds, while copying a string in costs
//!   about a nanosecond and a half per byte.
//! - **Text crosses as UTF-16 code units** (`&[u16]` in, `Vec<u16>` out), never as `&str` or
//!   `String`, because wasm-bindgen's string conversion replaces unpaired surrogates. The only
//!   `&str` inputs are URLs (the URL and `Last-Event-ID` of `streamRequestFromHttp`, the endpoint
//!   of `subscribeUrl`), where the URL standard itself turns a lone surrogate into U+FFFD, so
//!   nothing is lost.
//! - **Nothing panics.** `panic = "abort"` makes a panic an unrecoverable trap that would poison
//!   the module for the whole page, so no input is unwrapped: numbers are taken as JavaScript
//!   numbers (the core handles NaN and fractions), and failures come back as errors whose message
//!   starts with the stable `kind` (`"invalid_identifier: ..."`, the core's `Display`).

use std::cell::RefCell;
use twoplane_core::conform::{self, RawPieces};
use twoplane_core::ddl_args::{ddl_of_js_args, DdlArgs, JsArg, JsType};
use twoplane_core::reader::{self, ReaderAction, ReaderInput};
use twoplane_core::{jsnum, splice};

use wasm_bindgen::prelude::*;

/// Messages made of parts (docs/contract.md §8): the conform pass.
pub mod message;
/// Their text half (codec, durable message, reader), with the `message-text` feature.
#[cfg(feature = "message-text")]
pub mod message_text;
#[cfg(test)]
mod test_text;
/// The AI SDK's UI message stream in bulk, with the `ui` feature (the full build).
#[cfg(feature = "ui")]
pub mod ui;

/// Live instances, addressed by the handles JavaScript holds (the adapter frees a slot when its
/// object is collected; freed slots are reused). Cheaper per call than wasm-bindgen's exported
/// classes, which add a reference count and a generated wrapper to every call: on the per-frame
/// path that measured ~15% of the call. A stale or forged handle finds nothing and gets a
/// sentinel answer instead of touching freed memory.
struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Slab<T> {
    const fn new() -> Self {
        Slab { items: Vec::new(), free: Vec::new() }
    }

    fn insert(&mut self, value: T) -> u32 {
        if let Some(h) = self.free.pop() {
            if let Some(slot) = self.items.get_mut(h as usize) {
                *slot = Some(value);
                return h;
            }
        }
        self.items.push(Some(value));
        (self.items.len() - 1) as u32
    }

    fn get_mut(&mut self, h: u32) -> Option<&mut T> {
        self.items.get_mut(h as usize)?.as_mut()
    }

    fn remove(&mut self, h: u32) {
        if let Some(slot) = self.items.get_mut(h as usize) {
            if slot.take().is_some() {
                self.free.push(h);
            }
        }
    }
}

/// A conform pass (it keeps its last violation, so the reason text is built only when asked).
struct ConformState {
    core: conform::Conform,
}

/// A reader.
struct ReaderState {
    core: reader::Reader,
}

thread_local! {
    // wasm32 without the atomics feature has one thread: these are plain statics.
    static CONFORMS: RefCell<Slab<ConformState>> = const { RefCell::new(Slab::new()) };
    static READERS: RefCell<Slab<ReaderState>> = const { RefCell::new(Slab::new()) };
}

/// What every per-instance export answers for a handle that names no live instance (only a
/// caller bypassing the adapter can produce one).
const NO_INSTANCE: u32 = u32::MAX;

/// The frame kind and whether the stream id matches travel as one number (`kind | 8` when it
/// matches): one parameter fewer on the per-frame call, and no boolean to convert.
const ID_MATCHES: u32 = 8;

fn with_conform<R>(h: u32, missing: R, f: impl FnOnce(&mut ConformState) -> R) -> R {
    CONFORMS.with(|slab| match slab.try_borrow_mut() {
        Ok(mut slab) => match slab.get_mut(h) {
            Some(state) => f(state),
            None => missing,
        },
        Err(_) => missing,
    })
}

fn with_reader<R>(h: u32, missing: R, f: impl FnOnce(&mut ReaderState) -> R) -> R {
    READERS.with(|slab| match slab.try_borrow_mut() {
        Ok(mut slab) => match slab.get_mut(h) {
            Some(state) => f(state),
            None => missing,
        },
        Err(_) => missing,
    })
}

/// A conform pass for a reader that asked to join at `from` (any number: the core keeps
/// JavaScript semantics for NaN and fractions). Returns its handle.
#[wasm_bindgen(js_name = conformNew)]
pub fn conform_new(from: f64) -> u32 {
    let state = ConformState { core: conform::Conform::new(from) };
    CONFORMS.with(|slab| slab.try_borrow_mut().map_or(NO_INSTANCE, |mut slab| slab.insert(state)))
}

#[wasm_bindgen(js_name = conformDrop)]
pub fn conform_drop(h: u32) {
    CONFORMS.with(|slab| {
        if let Ok(mut slab) = slab.try_borrow_mut() {
            slab.remove(h);
        }
    });
}

/// One frame, as numbers (`docs/js-backend.md`; `kind_id` is the kind code, plus 8 when the
/// stream id matches). Returns the verdict code.
#[wasm_bindgen(js_name = conformFeed)]
pub fn conform_feed(h: u32, kind_id: u32, a: f64, b: f64, c: f64) -> u32 {
    with_conform(h, NO_INSTANCE, |s| s.core.feed_code(kind_id & !ID_MATCHES, kind_id & ID_MATCHES != 0, a, b, c))
}

/// The source finished without a terminal frame.
#[wasm_bindgen(js_name = conformEnd)]
pub fn conform_end(h: u32) -> u32 {
    with_conform(h, NO_INSTANCE, |s| s.core.end().code())
}

/// The source threw, or the reader is being dropped.
#[wasm_bindgen(js_name = conformFail)]
pub fn conform_fail(h: u32) -> u32 {
    with_conform(h, NO_INSTANCE, |s| s.core.fail().code())
}

#[wasm_bindgen(js_name = conformPos)]
pub fn conform_pos(h: u32) -> f64 {
    with_conform(h, f64::NAN, |s| s.core.pos())
}

#[wasm_bindgen(js_name = conformLastDurable)]
pub fn conform_last_durable(h: u32) -> f64 {
    with_conform(h, f64::NAN, |s| s.core.last_durable())
}

#[wasm_bindgen(js_name = conformRequested)]
pub fn conform_requested(h: u32) -> f64 {
    with_conform(h, f64::NAN, |s| s.core.requested())
}

/// The code of the last violation (`Violation::code`), or -1 when there was none.
#[wasm_bindgen(js_name = conformViolation)]
pub fn conform_violation(h: u32) -> i32 {
    with_conform(h, -1, |s| s.core.last_violation().map_or(-1, |v| v.code() as i32))
}

/// The reason text of the last violation, from the offending frame's printed values (UTF-16, so
/// an unpaired surrogate in a stream id survives). Empty when there was no violation.
#[wasm_bindgen(js_name = conformReason)]
pub fn conform_reason(h: u32, stream_id_json: &[u16], from: &[u16], seq: &[u16], type_json: &[u16]) -> Vec<u16> {
    with_conform(h, Vec::new(), |s| match s.core.last_violation() {
        Some(v) => v.reason(&RawPieces { stream_id_json, from, seq, type_json }).into_units(),
        None => Vec::new(),
    })
}

/// A reader that joined holding `durable_len` code units; anything that is not an offset is the
/// core's `invalid_offset` error, as in every binding. Returns its handle.
#[wasm_bindgen(js_name = readerNew)]
pub fn reader_new(durable_len: f64) -> Result<u32, String> {
    let state = ReaderState { core: reader::Reader::from_js_len(durable_len).map_err(|e| e.to_string())? };
    Ok(READERS.with(|slab| slab.try_borrow_mut().map_or(NO_INSTANCE, |mut slab| slab.insert(state))))
}

#[wasm_bindgen(js_name = readerDrop)]
pub fn reader_drop(h: u32) {
    READERS.with(|slab| {
        if let Ok(mut slab) = slab.try_borrow_mut() {
            slab.remove(h);
        }
    });
}

/// What the reader does with one frame, as one number so a splice needs one call: the splice
/// offset (>= 0) for a splice, -1 to ignore, -2 to stop (the adapter maps these onto the action
/// codes of `docs/js-backend.md`), -3 for an unknown handle.
#[wasm_bindgen(js_name = readerFeed)]
pub fn reader_feed(h: u32, kind_id: u32, a: f64, b: f64, c: f64) -> f64 {
    with_reader(h, -3.0, |s| {
        match s.core.feed(ReaderInput::from_code(kind_id & !ID_MATCHES, kind_id & ID_MATCHES != 0, a, b, c)) {
            ReaderAction::Ignore => -1.0,
            ReaderAction::Splice { at } => at as f64,
            ReaderAction::Stop(_) => -2.0,
        }
    })
}

/// `StopReason::code` once stopped, -1 while live.
#[wasm_bindgen(js_name = readerStopCode)]
pub fn reader_stop_code(h: u32) -> i32 {
    with_reader(h, -1, |s| s.core.stopped().map_or(-1, |r| r.code() as i32))
}

#[wasm_bindgen(js_name = readerAccLen)]
pub fn reader_acc_len(h: u32) -> f64 {
    with_reader(h, f64::NAN, |s| s.core.acc_len() as f64)
}

#[wasm_bindgen(js_name = readerResumeFrom)]
pub fn reader_resume_from(h: u32) -> f64 {
    with_reader(h, f64::NAN, |s| s.core.resume_from() as f64)
}

/// `-1` when the durable text wins a splice, else where the produced tail starts.
#[wasm_bindgen(js_name = splicePoint)]
pub fn splice_point(durable_len: f64, produced_len: f64) -> f64 {
    // Lengths of JavaScript strings: non-negative integers far below usize::MAX on wasm32 too
    // (a string cannot exceed 2^29 units in V8); `as` saturates and never traps.
    splice::splice_point(durable_len as usize, produced_len as usize).map_or(-1.0, |at| at as f64)
}

/// Chunk indices in assembly order (ascending `seq`, stable; NaN after every number).
#[wasm_bindgen(js_name = assemblyOrder)]
pub fn assembly_order(seqs: &[f64]) -> Vec<u32> {
    splice::assembly_order(seqs)
}

/// `"<streamId>:<seq>"` with `seq` printed as `String(seq)`, in UTF-16.
#[wasm_bindgen(js_name = streamChunkId)]
pub fn stream_chunk_id(stream_id: &[u16], seq: f64) -> Vec<u16> {
    splice::stream_chunk_id_units(stream_id, seq).into_units()
}

/// `"<streamId>:<seqText>"` for a `seq` that was not a number, already printed by JavaScript.
#[wasm_bindgen(js_name = streamChunkIdText)]
pub fn stream_chunk_id_text(stream_id: &[u16], seq_text: &[u16]) -> Vec<u16> {
    splice::stream_chunk_id_text(stream_id, seq_text).into_units()
}

/// How many values `streamChunkTableDdl` reads, in `DdlArgs` order: tables, dialect,
/// dialect.name, tables.chunks, tables.columns, columns.chunkKey, .chunkStream, .chunkSeq,
/// .chunkText.
const DDL_VALUES: usize = 9;

/// The chunk table's DDL for `streamChunkTableDdl(tables, dialect)`. The adapter reads the values
/// the core's checks look at (`twoplane_core::ddl_args`), in `DdlArgs` order: `types[i]` is the
/// `JsType` code of value `i`, and the code units of the strings among them are concatenated in
/// `texts`, `lens[i]` units each (0 for a value that is not a string). The core decides what is
/// refused, with which kind, and which dialect a name picks. Malformed arrays (only a caller
/// bypassing the adapter sends them) read as absent values, never as a trap.
#[wasm_bindgen(js_name = streamChunkTableDdl)]
pub fn stream_chunk_table_ddl(types: &[u32], texts: &[u16], lens: &[u32]) -> Result<Vec<String>, String> {
    let mut values = [JsArg::ABSENT; DDL_VALUES];
    let mut at = 0usize;
    for (i, value) in values.iter_mut().enumerate() {
        let len = lens.get(i).map_or(0, |&n| n as usize);
        let text = at.checked_add(len).and_then(|end| texts.get(at..end)).unwrap_or(&[]);
        at = at.saturating_add(len);
        *value = JsArg { ty: JsType::from_code(types.get(i).copied().unwrap_or(0)), text };
    }
    let [tables, dialect, dialect_name, chunks, columns, chunk_key, chunk_stream, chunk_seq, chunk_text] = values;
    let args =
        DdlArgs { tables, dialect, dialect_name, chunks, columns, chunk_key, chunk_stream, chunk_seq, chunk_text };
    ddl_of_js_args(&args).map_err(|e| e.to_string())
}

/// The URL a reader subscribes with (`twoplane_core::request::subscribe_url_units`). The endpoint
/// comes as `&str` (a URL, where the URL standard itself replaces lone surrogates); the stream id
/// as code units, so the core decides what a lone surrogate becomes. `from` must be an offset.
#[wasm_bindgen(js_name = subscribeUrl)]
pub fn subscribe_url(endpoint: &str, stream_id: &[u16], from: f64) -> Result<String, String> {
    let from = jsnum::offset_arg("from", from).map_err(|e| e.to_string())?;
    Ok(twoplane_core::request::subscribe_url_units(endpoint, stream_id, from))
}

/// A parsed subscribe request; the adapter copies both fields into a plain object.
#[wasm_bindgen]
pub struct StreamRequest {
    stream_id: String,
    from: f64,
}

#[wasm_bindgen]
impl StreamRequest {
    #[wasm_bindgen(getter, js_name = streamId)]
    pub fn stream_id(&self) -> String {
        self.stream_id.clone()
    }

    #[wasm_bindgen(getter)]
    pub fn from(&self) -> f64 {
        self.from
    }
}

/// `streamId` and the join offset of a subscribe GET; `last_event_id` is `None` when the header
/// is absent (present but empty still wins over `?from`). With `require_absolute` (a fetch-style
/// request) a relative URL is an `invalid_url` error, as in the TypeScript original.
#[wasm_bindgen(js_name = streamRequestFromHttp)]
pub fn stream_request_from_http(
    url: &str,
    last_event_id: Option<String>,
    require_absolute: bool,
) -> Result<StreamRequest, String> {
    let header = last_event_id.as_deref();
    let r = if require_absolute {
        twoplane_core::request::stream_request_from_fetch(url, header).map_err(|e| e.to_string())?
    } else {
        twoplane_core::request::stream_request_from_http(url, header)
    };
    Ok(StreamRequest { stream_id: r.stream_id, from: r.from })
}

/// The core's incremental SSE decoder (`twoplane_core::SseDecoder`). The package's reader decodes
/// SSE in JavaScript (`npm/twoplane/src/sse.js`, see there why); this export is the second,
/// independent implementation that the differential test (`tests/js/sse-differential.test.mjs`)
/// holds it to, and is there for apps that prefer the core's decoder. Event text is well-formed
/// (invalid UTF-8 already became U+FFFD), so `String` loses nothing here.
#[wasm_bindgen(js_name = CoreSseDecoder)]
pub struct CoreSseDecoder {
    core: twoplane_core::SseDecoder,
}

impl Default for CoreSseDecoder {
    fn default() -> Self {
        CoreSseDecoder::new()
    }
}

#[wasm_bindgen(js_class = CoreSseDecoder)]
impl CoreSseDecoder {
    #[wasm_bindgen(constructor)]
    pub fn new() -> CoreSseDecoder {
        CoreSseDecoder { core: twoplane_core::SseDecoder::new() }
    }

    /// The next bytes of the stream; the events they complete, flat: `[event, data, lastEventId,
    /// ...]` (one array crossing instead of an object per event).
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        self.core.feed(bytes, &mut events);
        events.into_iter().flat_map(|e| [e.event, e.data, e.last_event_id]).collect()
    }

    /// The end of the stream: an incomplete event is discarded (`lastEventId` and `retry` stay).
    pub fn finish(&mut self) {
        self.core.finish(&mut Vec::new());
    }

    #[wasm_bindgen(getter, js_name = lastEventId)]
    pub fn last_event_id(&self) -> String {
        self.core.last_event_id().to_owned()
    }

    /// The reconnection time in milliseconds, or undefined when no valid `retry` came.
    #[wasm_bindgen(getter)]
    pub fn retry(&self) -> Option<f64> {
        self.core.retry_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_text::u;

    #[test]
    fn conform_reports_codes_and_reasons() {
        let c = conform_new(0.0);
        assert_eq!(conform_feed(c, 1, 0.0, 2.0, 2.0), 2);
        assert_eq!(conform_violation(c), -1);
        assert_eq!(conform_feed(c, 1, 5.0, 6.0, 1.0), 3);
        assert_eq!(conform_violation(c), 3);
        assert_eq!(conform_reason(c, &[], &[], &[], &[]), u("relay chunk at 5 leaves a gap after 2"));
        assert_eq!((conform_pos(c), conform_last_durable(c), conform_requested(c)), (2.0, 0.0, 0.0));
        assert_eq!(conform_feed(c, 1, 2.0, 3.0, 1.0), 0);
        let other = conform_new(0.0);
        assert_eq!(conform_feed(other, ID_MATCHES, 0.0, 0.0, 0.0), 1, "an open whose id matches passes");
        conform_drop(c);
        assert_eq!(conform_feed(c, 1, 0.0, 1.0, 1.0), NO_INSTANCE);
        assert_eq!(conform_new(3.0), c, "a dropped slot is reused");
        conform_drop(u32::MAX);
    }

    #[test]
    fn reader_reports_splices_and_stops() {
        let r = reader_new(2.0).unwrap();
        assert_eq!(reader_feed(r, 1, 1.0, 4.0, 3.0), 1.0);
        assert_eq!((reader_acc_len(r), reader_stop_code(r)), (4.0, -1));
        assert_eq!(reader_feed(r, 2, 4.0, f64::NAN, f64::NAN), -1.0);
        assert_eq!(reader_feed(r, 1, 9.0, 10.0, 1.0), -2.0);
        assert_eq!(reader_stop_code(r), 3);
        assert_eq!(reader_resume_from(r), 4.0);
        for bad in [f64::NAN, -1.0, 0.5] {
            assert!(reader_new(bad).unwrap_err().starts_with("invalid_offset: "), "{bad}");
        }
        reader_drop(r);
        assert_eq!(reader_feed(r, 1, 0.0, 1.0, 1.0), -3.0);
    }

    #[test]
    fn text_helpers() {
        assert_eq!(splice_point(2.0, 3.0), 2.0);
        assert_eq!(splice_point(3.0, 3.0), -1.0);
        assert_eq!(assembly_order(&[5.0, 2.0, 5.0]), vec![1, 0, 2]);
        assert_eq!(stream_chunk_id(&[0xD800], 3.0), vec![0xD800, u16::from(b':'), u16::from(b'3')]);
    }

    /// The values of `streamChunkTableDdl` as the adapter packs them.
    fn ddl(values: [(JsType, &str); DDL_VALUES]) -> Result<Vec<String>, String> {
        let types: Vec<u32> = values.iter().map(|(t, _)| *t as u32).collect();
        let texts: Vec<u16> = values.iter().flat_map(|(_, s)| s.encode_utf16()).collect();
        let lens: Vec<u32> = values.iter().map(|(_, s)| s.encode_utf16().count() as u32).collect();
        stream_chunk_table_ddl(&types, &texts, &lens)
    }

    #[test]
    fn ddl_unpacks_the_values_in_order() {
        use JsType::{Object as O, String as S, Undefined as U};
        let ok =
            ddl([(O, ""), (S, "sqlite"), (U, ""), (S, "c"), (O, ""), (U, ""), (U, ""), (U, ""), (S, "t")]).unwrap();
        assert!(ok[0].contains("\"t\" TEXT NOT NULL"), "{ok:?}");
        let pg =
            ddl([(O, ""), (O, ""), (S, "postgres"), (S, "c"), (U, ""), (U, ""), (U, ""), (U, ""), (U, "")]).unwrap();
        assert!(pg[0].contains("\"seq\" bigint NOT NULL"), "{pg:?}");
        let err = ddl([(O, ""), (S, "x"), (U, ""), (U, ""), (U, ""), (U, ""), (U, ""), (U, ""), (U, "")]).unwrap_err();
        assert!(err.starts_with("missing_field: "), "{err}");
        let err = stream_chunk_table_ddl(&[7, 4, 0, 4], &[0xD800], &[0, 0, 0, 1]).unwrap_err();
        assert!(err.starts_with("invalid_identifier: "), "{err}");
        // Arrays that do not add up read as absent values instead of trapping.
        let err = stream_chunk_table_ddl(&[7, 4, 0, 4], &[], &[0, 5, 0, 9]).unwrap_err();
        assert!(err.starts_with("invalid_identifier: "), "{err}");
        assert!(stream_chunk_table_ddl(&[], &[], &[]).unwrap_err().starts_with("invalid_argument: "));
    }

    #[test]
    fn subscribe_url_is_the_cores() {
        assert_eq!(subscribe_url("/s?a=1", &[0x61, 0xD800], 3.0).unwrap(), "/s?a=1&streamId=a%EF%BF%BD&from=3");
        assert!(subscribe_url("/s", &[], -1.0).unwrap_err().starts_with("invalid_offset: "));
    }
}
