//! The pure functions of the backend interface: splice point, assembly order, chunk id, the chunk
//! table's DDL, the subscribe request and the subscribe URL. Conversion only; each calls one core
//! function.

use napi::bindgen_prelude::{Float64Array, JsValue, Object, Uint32Array, Unknown};
use napi::{Env, JsString, ValueType};
use napi_derive::napi;
use twoplane_core::ddl_args::{ddl_of_js_args, DdlArgs, JsArg, JsType};
use twoplane_core::jsnum::{as_offset, offset_arg};
use twoplane_core::request::{stream_request_from_fetch, stream_request_from_http, subscribe_url_units};
use twoplane_core::splice::{assembly_order, splice_point, stream_chunk_id_units};
use twoplane_core::ErrorKind;

use crate::error::{err, from_core, from_napi, Kind};
use crate::text::{js_string, units_of};
use napi::Result;

/// A length as JavaScript hands it (`string.length`): a non-negative integer.
fn length_arg(name: &str, x: f64) -> Result<usize, Kind> {
    as_offset(x).and_then(|v| usize::try_from(v).ok()).ok_or_else(|| {
        err(ErrorKind::InvalidArgument, format!("{name} {} is not a length", twoplane_core::jsnum::format(x)))
    })
}

/// `-1` when the durable text wins whole, else where the produced tail starts.
#[napi(catch_unwind)]
pub fn splice_point_of(durable_len: f64, produced_len: f64) -> Result<f64, Kind> {
    let (d, p) = (length_arg("durableLen", durable_len)?, length_arg("producedLen", produced_len)?);
    Ok(splice_point(d, p).map_or(-1.0, |at| at as f64))
}

/// Chunk indices in assembly order: ascending `seq`, input order kept for equal `seq`.
#[napi(catch_unwind)]
pub fn assembly_order_of(seqs: Float64Array) -> Uint32Array {
    Uint32Array::new(assembly_order(&seqs))
}

/// `"<streamId>:<seq>"`, the id keeping every unit of `streamId` and printing `seq` as
/// `String(seq)` does.
#[napi(catch_unwind)]
pub fn stream_chunk_id<'e>(env: &'e Env, stream_id: JsString, seq: f64) -> Result<JsString<'e>, Kind> {
    let id = units_of(&stream_id)?;
    js_string(env, stream_chunk_id_units(&id, seq).units())
}

/// `"<streamId>:<seqText>"` for a `seq` that was not a number, already printed by JavaScript
/// (`undefined` reaches here as the text `"undefined"`).
#[napi(catch_unwind)]
pub fn stream_chunk_id_text<'e>(env: &'e Env, stream_id: JsString, seq_text: JsString) -> Result<JsString<'e>, Kind> {
    let id = units_of(&stream_id)?;
    js_string(env, twoplane_core::splice::stream_chunk_id_text(&id, &units_of(&seq_text)?).units())
}

/// A value as the core's argument checks read it: its JavaScript type, its code units when it is
/// a string, and the object itself when it is one (to read its properties next).
struct Read {
    ty: JsType,
    text: Vec<u16>,
    object: Option<Object<'static>>,
}

impl Read {
    const ABSENT: Read = Read { ty: JsType::Undefined, text: Vec::new(), object: None };

    fn arg(&self) -> JsArg<'_> {
        JsArg { ty: self.ty, text: &self.text }
    }

    /// Property `name`, when this is an object; absent otherwise.
    fn prop(&self, name: &str) -> Result<Read, Kind> {
        match &self.object {
            Some(obj) => read(obj.get::<Unknown>(name).map_err(from_napi)?),
            None => Ok(Read::ABSENT),
        }
    }
}

fn read(v: Option<Unknown>) -> Result<Read, Kind> {
    let Some(v) = v else {
        return Ok(Read::ABSENT);
    };
    let ty = match v.get_type().map_err(from_napi)? {
        ValueType::Undefined => JsType::Undefined,
        // Without Node-API 6 (not enabled here) a BigInt has no type of its own: `napi_typeof`'s
        // bigint comes back as Unknown, and it is the only value that does.
        ValueType::Unknown => JsType::BigInt,
        ValueType::Null => JsType::Null,
        ValueType::Boolean => JsType::Boolean,
        ValueType::Number => JsType::Number,
        ValueType::String => JsType::String,
        ValueType::Symbol => JsType::Symbol,
        ValueType::Object | ValueType::External => JsType::Object,
        ValueType::Function => JsType::Function,
    };
    let mut out = Read { ty, text: Vec::new(), object: None };
    match ty {
        JsType::String => {
            // SAFETY: the type was checked just above.
            let s: JsString = unsafe { v.cast() }.map_err(from_napi)?;
            out.text = units_of(&s)?;
        }
        JsType::Object => {
            let raw = v.value();
            out.object = Some(Object::from_raw(raw.env, raw.value));
        }
        _ => {}
    }
    Ok(out)
}

/// The chunk table's migration for `tables` (`{ chunks, columns? }`) in `dialect` (`{ name }`, or
/// the name itself). Reads the properties the core's checks look at; the core
/// (`twoplane_core::ddl_args`) decides what is refused and which dialect a name picks.
#[napi(catch_unwind)]
pub fn stream_chunk_table_ddl_of(tables: Unknown, dialect: Unknown) -> Result<Vec<String>, Kind> {
    let (tables, dialect) = (read(Some(tables))?, read(Some(dialect))?);
    let dialect_name = dialect.prop("name")?;
    let chunks = tables.prop("chunks")?;
    let columns = tables.prop("columns")?;
    let (key, stream, seq, text) = (
        columns.prop("chunkKey")?,
        columns.prop("chunkStream")?,
        columns.prop("chunkSeq")?,
        columns.prop("chunkText")?,
    );
    ddl_of_js_args(&DdlArgs {
        tables: tables.arg(),
        dialect: dialect.arg(),
        dialect_name: dialect_name.arg(),
        chunks: chunks.arg(),
        columns: columns.arg(),
        chunk_key: key.arg(),
        chunk_stream: stream.arg(),
        chunk_seq: seq.arg(),
        chunk_text: text.arg(),
    })
    .map_err(from_core)
}

/// The URL a reader subscribes with (`twoplane_core::request::subscribe_url_units`). The endpoint
/// is a URL, where the URL standard itself replaces lone surrogates, so a lossy conversion loses
/// nothing; the stream id crosses as code units and the core decides what a lone surrogate
/// becomes. `from` must be an offset (`invalid_offset`).
#[napi(catch_unwind)]
pub fn subscribe_url_of(endpoint: JsString, stream_id: JsString, from: f64) -> Result<String, Kind> {
    let from = offset_arg("from", from).map_err(from_core)?;
    let endpoint = String::from_utf16_lossy(&units_of(&endpoint)?);
    Ok(subscribe_url_units(&endpoint, &units_of(&stream_id)?, from))
}

/// A subscribe request: `{ streamId, from }`.
#[napi(object)]
pub struct StreamRequest {
    pub stream_id: String,
    pub from: f64,
}

/// Read `streamId` and the join offset from a GET's URL and its `Last-Event-ID` header (`null` or
/// `undefined` when absent). URLs and header values are `USVString`s and `ByteString`s in the
/// fetch API, so a lossy conversion replaces exactly what the URL parser itself would.
#[napi(catch_unwind)]
pub fn stream_request_of(
    url: JsString,
    last_event_id: Option<JsString>,
    require_absolute: bool,
) -> Result<StreamRequest, Kind> {
    let url = String::from_utf16_lossy(&units_of(&url)?);
    let header = match last_event_id {
        Some(h) => Some(String::from_utf16_lossy(&units_of(&h)?)),
        None => None,
    };
    let r = if require_absolute {
        stream_request_from_fetch(&url, header.as_deref()).map_err(from_core)?
    } else {
        stream_request_from_http(&url, header.as_deref())
    };
    Ok(StreamRequest { stream_id: r.stream_id, from: r.from })
}
