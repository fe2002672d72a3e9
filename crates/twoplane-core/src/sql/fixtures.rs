//! The mappings the module's tests build statements and shapes for (test-only).

use super::names::{StreamColumns, StreamTables};
use super::statement::SqlValue;

pub(super) fn tables() -> StreamTables {
    StreamTables { message: "messages".into(), chunks: "chunks".into(), columns: StreamColumns::default() }
}

pub(super) fn full_tables() -> StreamTables {
    StreamTables {
        message: "msg".into(),
        chunks: "msg_chunks".into(),
        columns: StreamColumns {
            key: Some("uid".into()),
            body: Some("content".into()),
            status: Some("state".into()),
            seq: Some("len".into()),
            cancel: Some("stop".into()),
            error: Some("err".into()),
            host: Some("owner".into()),
            chunk_key: Some("cid".into()),
            chunk_stream: Some("message_uid".into()),
            chunk_seq: Some("end_at".into()),
            chunk_text: Some("slice".into()),
            parts: None,
            chunk_parts: None,
        },
    }
}

pub(super) fn t(s: &str) -> SqlValue {
    SqlValue::Text(s.into())
}
