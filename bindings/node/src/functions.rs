//! The pure functions of the backend interface: splice point, assembly order, chunk id, the chunk
//! table's DDL and the subscribe request. Conversion only; each calls one core function.

use napi::bindgen_prelude::{Float64Array, JsValue, Object, Uint32Array, Unknown};
use napi::{Env, JsString, ValueType};
use napi_derive::napi;
use twoplane_core::jsnum::as_offset;
use twoplane_core::request::stream_request_from_http;
use twoplane_core::splice::{assembly_order, splice_point, stream_chunk_id_units};
use twoplane_core::sql::{stream_chunk_table_ddl, Dialect, StreamColumns, StreamTables};
use twoplane_core::ErrorKind;

use crate::error::{err, from_core, from_napi, Kind};
use crate::text::{checked_string, js_string, units_of};
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

/// What a JavaScript property holds, for the few shapes read here.
enum Prop {
    Absent,
    Text(Vec<u16>),
    Object(Object<'static>),
    Other(ValueType),
}

fn prop(obj: &Object<'_>, name: &str) -> Result<Prop, Kind> {
    let Some(v) = obj.get::<Unknown>(name).map_err(from_napi)? else {
        return Ok(Prop::Absent);
    };
    Ok(match v.get_type().map_err(from_napi)? {
        ValueType::Undefined | ValueType::Null => Prop::Absent,
        ValueType::String => {
            // SAFETY: the type was checked just above.
            let s: JsString = unsafe { v.cast() }.map_err(from_napi)?;
            Prop::Text(units_of(&s)?)
        }
        ValueType::Object => {
            let raw = v.value();
            Prop::Object(Object::from_raw(raw.env, raw.value))
        }
        other => Prop::Other(other),
    })
}

/// An identifier: a string that converts to UTF-8 without loss. A lone surrogate in a table or
/// column name is refused rather than replaced, since SQL text cannot carry it faithfully.
fn ident(field: &'static str, p: Prop, default: Option<&str>) -> Result<Option<String>, Kind> {
    match p {
        Prop::Absent => Ok(default.map(str::to_owned)),
        Prop::Text(units) => checked_string(&units)
            .map(Some)
            .ok_or_else(|| err(ErrorKind::InvalidIdentifier, format!("{field} holds an unpaired surrogate"))),
        Prop::Object(_) => Err(err(ErrorKind::InvalidField, format!("{field} must be a string, not an object"))),
        Prop::Other(t) => Err(err(ErrorKind::InvalidField, format!("{field} must be a string, not {t}"))),
    }
}

/// The chunk table's migration for `tables` (`{ message, chunks, columns? }`) in `dialect`
/// (`{ name }`, or the name itself): `name === "postgres"` picks Postgres types, any other name
/// SQLite's, as the function this replaces decides.
#[napi(catch_unwind)]
pub fn stream_chunk_table_ddl_of(tables: Unknown, dialect: Unknown) -> Result<Vec<String>, Kind> {
    let tables = match tables.get_type().map_err(from_napi)? {
        ValueType::Object => {
            let raw = tables.value();
            Object::from_raw(raw.env, raw.value)
        }
        t => return Err(err(ErrorKind::InvalidArgument, format!("tables must be an object, not {t}"))),
    };
    let dialect_name = match dialect.get_type().map_err(from_napi)? {
        ValueType::String => {
            // SAFETY: checked above.
            let s: JsString = unsafe { dialect.cast() }.map_err(from_napi)?;
            Some(units_of(&s)?)
        }
        ValueType::Object => {
            let raw = dialect.value();
            match prop(&Object::from_raw(raw.env, raw.value), "name")? {
                Prop::Text(units) => Some(units),
                _ => None,
            }
        }
        t => return Err(err(ErrorKind::InvalidArgument, format!("dialect must be an object with a name, not {t}"))),
    };
    let postgres: Vec<u16> = "postgres".encode_utf16().collect();
    let dialect = if dialect_name.as_deref() == Some(&postgres[..]) { Dialect::Postgres } else { Dialect::Sqlite };

    let chunks = match prop(&tables, "chunks")? {
        Prop::Absent => return Err(err(ErrorKind::MissingField, "tables.chunks is required")),
        p => ident("tables.chunks", p, None)?.unwrap_or_default(),
    };
    let message = match prop(&tables, "message")? {
        Prop::Text(units) => checked_string(&units).unwrap_or_default(),
        _ => String::new(),
    };
    let mut columns = StreamColumns::default();
    match prop(&tables, "columns")? {
        Prop::Absent => {}
        Prop::Object(cols) => {
            columns.chunk_key = ident("columns.chunkKey", prop(&cols, "chunkKey")?, None)?;
            columns.chunk_stream = ident("columns.chunkStream", prop(&cols, "chunkStream")?, None)?;
            columns.chunk_seq = ident("columns.chunkSeq", prop(&cols, "chunkSeq")?, None)?;
            columns.chunk_text = ident("columns.chunkText", prop(&cols, "chunkText")?, None)?;
        }
        _ => return Err(err(ErrorKind::InvalidField, "tables.columns must be an object")),
    }
    let tables = StreamTables { message, chunks, columns };
    stream_chunk_table_ddl(&tables, dialect).map_err(from_core)
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
pub fn stream_request_of(url: JsString, last_event_id: Option<JsString>) -> Result<StreamRequest, Kind> {
    let url = String::from_utf16_lossy(&units_of(&url)?);
    let header = match last_event_id {
        Some(h) => Some(String::from_utf16_lossy(&units_of(&h)?)),
        None => None,
    };
    let r = stream_request_from_http(&url, header.as_deref());
    Ok(StreamRequest { stream_id: r.stream_id, from: r.from })
}
