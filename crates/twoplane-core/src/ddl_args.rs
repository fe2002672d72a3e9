//! The arguments of JavaScript's `streamChunkTableDdl(tables, dialect)` (docs/contract.md §6),
//! checked once for every binding.
//!
//! A binding reads the few properties the function looks at, reduces each to its JavaScript type
//! and, for a string, its UTF-16 code units ([`JsArg`]), and hands them to [`ddl_of_js_args`],
//! which decides everything else: which argument is refused with which [`ErrorKind`], which
//! dialect a name picks, and the DDL itself. So the Node addon and the WebAssembly build accept
//! and refuse exactly the same calls (the shared vectors in `tests/vectors/ddl.json` pin it).
//!
//! Guarantees:
//! - `tables` must be an object (`invalid_argument`), `dialect` a string or an object
//!   (`invalid_argument`); `tables.chunks` must be present (`missing_field`); `tables.columns`,
//!   when present, an object (`invalid_field`); every name a string (`invalid_field`).
//! - A name holding an unpaired surrogate is refused as `invalid_identifier`, never replaced: SQL
//!   text is UTF-8 and cannot carry it faithfully.
//! - A dialect name of exactly `"postgres"` (the string, or an object's `name`) picks PostgreSQL
//!   types; any other name picks SQLite's, as the function this replaces decides.

use crate::coded::coded_enum;
use crate::error::{Error, ErrorKind, Result};
use crate::sql::{stream_chunk_table_ddl, Dialect, StreamColumns, StreamTables};

coded_enum! {
    /// A JavaScript value's type, as `typeof` tells it apart (with `null` on its own). The numeric
    /// values (0 to 8, in this order) are what a binding passes when it crosses as numbers
    /// ([`JsType::from_code`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum JsType;
    /// What `typeof` says (`"null"` for null, which `typeof` calls an object), for messages.
    fn name;
    {
        Undefined => "undefined",
        Null => "null",
        Boolean => "boolean",
        Number => "number",
        String => "string",
        Symbol => "symbol",
        BigInt => "bigint",
        Object => "object",
        Function => "function",
    }
}

impl JsType {
    /// The type of code `code`; an unknown code reads as `undefined` (only a caller bypassing its
    /// binding's adapter can send one).
    pub fn from_code(code: u32) -> JsType {
        JsType::ALL.get(code as usize).copied().unwrap_or(JsType::Undefined)
    }

    fn is_absent(self) -> bool {
        matches!(self, JsType::Undefined | JsType::Null)
    }
}

/// One argument or property as a binding read it: its type, and its code units when it is a
/// string (empty otherwise).
#[derive(Clone, Copy, Debug)]
pub struct JsArg<'a> {
    pub ty: JsType,
    pub text: &'a [u16],
}

impl<'a> JsArg<'a> {
    /// `undefined`: an absent property.
    pub const ABSENT: JsArg<'static> = JsArg { ty: JsType::Undefined, text: &[] };

    pub fn of_type(ty: JsType) -> JsArg<'static> {
        JsArg { ty, text: &[] }
    }

    pub fn string(text: &'a [u16]) -> JsArg<'a> {
        JsArg { ty: JsType::String, text }
    }
}

/// What `streamChunkTableDdl(tables, dialect)` reads. The nested members are read only when their
/// parent is an object; a binding leaves the others [`JsArg::ABSENT`].
#[derive(Clone, Copy, Debug)]
pub struct DdlArgs<'a> {
    pub tables: JsArg<'a>,
    pub dialect: JsArg<'a>,
    /// `dialect.name`, when `dialect` is an object.
    pub dialect_name: JsArg<'a>,
    /// `tables.chunks`.
    pub chunks: JsArg<'a>,
    /// `tables.columns`.
    pub columns: JsArg<'a>,
    /// `tables.columns.chunkKey`, `.chunkStream`, `.chunkSeq`, `.chunkText`.
    pub chunk_key: JsArg<'a>,
    pub chunk_stream: JsArg<'a>,
    pub chunk_seq: JsArg<'a>,
    pub chunk_text: JsArg<'a>,
}

impl Default for DdlArgs<'_> {
    fn default() -> Self {
        let a = JsArg::ABSENT;
        DdlArgs {
            tables: a,
            dialect: a,
            dialect_name: a,
            chunks: a,
            columns: a,
            chunk_key: a,
            chunk_stream: a,
            chunk_seq: a,
            chunk_text: a,
        }
    }
}

/// The chunk table's migration for the arguments as JavaScript passed them, or the error every
/// binding throws for them (see the module's guarantees for which).
pub fn ddl_of_js_args(args: &DdlArgs<'_>) -> Result<Vec<String>> {
    if args.tables.ty != JsType::Object {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("tables must be an object, not {}", args.tables.ty.name()),
        ));
    }
    let dialect_name = match args.dialect.ty {
        JsType::String => Some(args.dialect.text),
        JsType::Object if args.dialect_name.ty == JsType::String => Some(args.dialect_name.text),
        JsType::Object => None,
        t => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("dialect must be an object with a name, not {}", t.name()),
            ))
        }
    };
    let postgres = dialect_name.is_some_and(|n| n.iter().copied().eq("postgres".encode_utf16()));
    let dialect = if postgres { Dialect::Postgres } else { Dialect::Sqlite };

    if args.chunks.ty.is_absent() {
        return Err(Error::new(ErrorKind::MissingField, "tables.chunks is required"));
    }
    let chunks = identifier("tables.chunks", args.chunks)?.unwrap_or_default();
    let mut columns = StreamColumns::default();
    match args.columns.ty {
        t if t.is_absent() => {}
        JsType::Object => {
            columns.chunk_key = identifier("columns.chunkKey", args.chunk_key)?;
            columns.chunk_stream = identifier("columns.chunkStream", args.chunk_stream)?;
            columns.chunk_seq = identifier("columns.chunkSeq", args.chunk_seq)?;
            columns.chunk_text = identifier("columns.chunkText", args.chunk_text)?;
        }
        t => {
            return Err(Error::new(
                ErrorKind::InvalidField,
                format!("tables.columns must be an object, not {}", t.name()),
            ))
        }
    }
    // The message table plays no part in the chunk table's DDL.
    let tables = StreamTables { message: String::new(), chunks, columns };
    stream_chunk_table_ddl(&tables, dialect)
}

/// A table or column name: absent, or a string without unpaired surrogates.
fn identifier(field: &str, arg: JsArg<'_>) -> Result<Option<String>> {
    match arg.ty {
        t if t.is_absent() => Ok(None),
        JsType::String => String::from_utf16(arg.text)
            .map(Some)
            .map_err(|_| Error::new(ErrorKind::InvalidIdentifier, format!("{field} holds an unpaired surrogate"))),
        t => Err(Error::new(ErrorKind::InvalidField, format!("{field} must be a string, not {}", t.name()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    fn kind(args: &DdlArgs<'_>) -> Option<&'static str> {
        ddl_of_js_args(args).err().map(|e| e.kind().as_str())
    }

    #[test]
    fn well_formed_arguments_give_the_ddl_of_the_named_dialect() {
        let (chunks, pg) = (u("message_chunks"), u("postgres"));
        let obj = JsArg::of_type(JsType::Object);
        let base = DdlArgs { tables: obj, dialect: obj, chunks: JsArg::string(&chunks), ..Default::default() };
        let sqlite = ddl_of_js_args(&base).unwrap();
        assert!(sqlite[0].contains("\"seq\" INTEGER NOT NULL"), "{sqlite:?}");
        let named = ddl_of_js_args(&DdlArgs { dialect_name: JsArg::string(&pg), ..base }).unwrap();
        let bare = ddl_of_js_args(&DdlArgs { dialect: JsArg::string(&pg), ..base }).unwrap();
        assert_eq!(named, bare);
        assert_eq!(
            named,
            stream_chunk_table_ddl(
                &StreamTables {
                    message: String::new(),
                    chunks: "message_chunks".into(),
                    columns: StreamColumns::default()
                },
                Dialect::Postgres
            )
            .unwrap()
        );
        assert_ne!(named, sqlite);
        // Any other name, or a name that is not a string, is SQLite.
        let other = u("Postgres");
        assert_eq!(ddl_of_js_args(&DdlArgs { dialect: JsArg::string(&other), ..base }).unwrap(), sqlite);
        assert_eq!(ddl_of_js_args(&DdlArgs { dialect_name: JsArg::of_type(JsType::Number), ..base }).unwrap(), sqlite);
    }

    #[test]
    fn each_refusal_has_its_kind() {
        let (chunks, lone) = (u("c"), vec![0x61, 0xD800]);
        let obj = JsArg::of_type(JsType::Object);
        let base = DdlArgs { tables: obj, dialect: obj, chunks: JsArg::string(&chunks), ..Default::default() };
        assert_eq!(kind(&base), None);
        for t in [JsType::Undefined, JsType::Null, JsType::String, JsType::Number, JsType::Function] {
            assert_eq!(kind(&DdlArgs { tables: JsArg::of_type(t), ..base }), Some("invalid_argument"), "{t:?}");
        }
        for t in [JsType::Undefined, JsType::Null, JsType::Number, JsType::Boolean, JsType::Symbol] {
            assert_eq!(kind(&DdlArgs { dialect: JsArg::of_type(t), ..base }), Some("invalid_argument"), "{t:?}");
        }
        assert_eq!(kind(&DdlArgs { chunks: JsArg::ABSENT, ..base }), Some("missing_field"));
        assert_eq!(kind(&DdlArgs { chunks: JsArg::of_type(JsType::Null), ..base }), Some("missing_field"));
        assert_eq!(kind(&DdlArgs { chunks: obj, ..base }), Some("invalid_field"));
        assert_eq!(kind(&DdlArgs { chunks: JsArg::string(&lone), ..base }), Some("invalid_identifier"));
        assert_eq!(kind(&DdlArgs { columns: JsArg::of_type(JsType::String), ..base }), Some("invalid_field"));
        let with_cols = DdlArgs { columns: obj, ..base };
        assert_eq!(kind(&with_cols), None);
        assert_eq!(kind(&DdlArgs { chunk_text: JsArg::of_type(JsType::Number), ..with_cols }), Some("invalid_field"));
        assert_eq!(kind(&DdlArgs { chunk_key: JsArg::string(&lone), ..with_cols }), Some("invalid_identifier"));
        // Column members are not read when `columns` is absent.
        assert_eq!(kind(&DdlArgs { chunk_key: JsArg::string(&lone), ..base }), None);
        // The core's own identifier rules still apply (a quote in a name).
        let quoted = u("a\"b");
        assert_eq!(kind(&DdlArgs { chunks: JsArg::string(&quoted), ..base }), Some("invalid_identifier"));
    }

    #[test]
    fn type_codes_round_trip_and_unknown_codes_read_as_undefined() {
        for t in JsType::ALL {
            assert_eq!(JsType::from_code(t as u32), t);
        }
        assert_eq!(JsType::from_code(99), JsType::Undefined);
        assert_eq!(JsType::from_code(u32::MAX), JsType::Undefined);
    }
}
