//! twoplane-core: every rule of the twoplane contract, once.
//!
//! Pure and synchronous: no I/O, no async, no JavaScript types, and it builds for
//! `wasm32-unknown-unknown`. The native plane, the WebAssembly build and the Node addon all call
//! into this crate, so a rule fixed here is fixed everywhere. Nothing in it panics on input that
//! crosses a boundary: bad input is an [`Error`] with a stable [`ErrorKind`].
//!
//! Offsets and lengths are UTF-16 code units ([`Text`]), the unit JavaScript counts in.

mod coded;
pub mod conform;
pub mod ddl_args;
pub mod error;
pub mod frame;
pub mod jsnum;
pub mod json;
#[cfg(feature = "testing")]
pub mod jsview;
pub mod message;
pub mod reader;
pub mod request;
#[cfg(feature = "testing")]
pub mod scenarios;
pub mod splice;
pub mod sql;
pub mod sse;
pub mod text;
pub mod ui;

pub use conform::{Conform, ConformInput, Verdict, Violation};
pub use error::{Error, ErrorKind, Result};
pub use frame::{frame_resume_point, Frame, FrameKind, StreamStatus, STREAM_STATUS_STREAMING};
pub use reader::{Reader, ReaderAction, TextReader};
pub use request::{
    is_absolute_url, stream_request_from_fetch, stream_request_from_http, subscribe_url, subscribe_url_units,
    StreamRequest,
};
pub use splice::{assemble_durable_text, splice_stream_text, stream_chunk_id, ChunkRow};
pub use sql::{
    stream_chunk_table_ddl, Dialect, HostLeaseSql, MappedSql, StreamColumns, StreamTables, DEFAULT_HOST_LEASE_TABLE,
};
pub use sse::{SseDecoder, SseEvent, STREAM_SSE_HEADERS};
pub use text::Text;
