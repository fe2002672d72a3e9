//! The durable plane's SQL (docs/contract.md §6), for SQLite and Postgres, in one place. This
//! file only declares and re-exports; the modules depend one way, each only on those before it:
//! - `names.rs`: the dialect, the table mapping and its defaults, identifier quoting;
//! - `statement.rs`: statements and their parameters;
//! - `schema.rs`: every table's shape and migrations ([`TableShape`]): the chunk table, the
//!   columns the plane adds to the application's message table, the message table of a store
//!   twoplane owns, and the host lease table;
//! - `mapped.rs`: the statements on the mapped tables ([`MappedSql`]);
//! - `reopen.rs`: the statements of a stream that goes on (its stored message read back, its row
//!   claimed again at its durable end), as more of [`MappedSql`];
//! - `host_lease.rs`: the statements of the host lease ([`HostLeaseSql`]).
//!
//! Guarantees:
//! - Every identifier is double-quoted, and a name that cannot be quoted safely (one holding `"`
//!   or NUL, or an empty one) is refused with [`ErrorKind::InvalidIdentifier`](crate::ErrorKind::InvalidIdentifier) instead of escaped:
//!   names come from the application's configuration, where a quote character is a typo to
//!   report at startup, not something to paper over with escaping.
//! - [`MappedSql::new`] checks every name once; after that no method can fail, so a checkpoint
//!   never discovers a bad mapping halfway through a stream.
//! - Values never appear in SQL text: they travel as numbered parameters ([`SqlValue`]).
//! - Every statement is idempotent under replay (a chunk id is deterministic, and the insert
//!   lands only where the compare-and-swap left the row at the slice's end), so a commit whose
//!   acknowledgement was lost can simply be retried; the read-back decides what happened.
//! - Every producer write after the open is fenced: it requires the row to be `streaming` and to
//!   name the writer's host (when a host column is mapped), so once a sweep released the row the
//!   database refuses a stale producer ([`MappedSql`] says how).
//! - The optional `cancel`, `error` and `host` columns appear in SQL only when they are named.

#[cfg(test)]
mod fixtures;
mod host_lease;
mod mapped;
mod names;
mod reopen;
mod schema;
mod statement;

pub use host_lease::{HostLeaseSql, DEFAULT_HOST_LEASE_TABLE};
pub use mapped::MappedSql;
pub use names::{quote_ident, Dialect, ResolvedColumns, StreamColumns, StreamTables};
pub use schema::{
    host_lease_table, owned_message_table, stream_chunk_table, stream_chunk_table_ddl, stream_message_columns,
    stream_parts_migration, stream_schema, CatalogColumn, Column, ColumnDefault, ColumnType, Index, OwnedColumns,
    TableShape,
};
pub use statement::{SqlValue, Statement};

#[cfg(test)]
mod tests {
    use super::fixtures::{full_tables, t, tables};
    use super::names::json_quoted;
    use super::*;
    use crate::error::ErrorKind;
    use crate::frame::StreamStatus;

    #[test]
    fn placeholders_and_names() {
        assert_eq!(Dialect::Sqlite.placeholder(1), "?1");
        assert_eq!(Dialect::Postgres.placeholder(12), "$12");
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            assert_eq!(Dialect::from_name(d.name()), Some(d));
        }
        assert_eq!(Dialect::from_name("mysql"), None);
    }

    #[test]
    fn chunk_table_ddl() {
        // (mapping, dialect, the table, the index): the defaults in both dialects, and every
        // chunk column mapped.
        let cases = [
            (
                tables(),
                Dialect::Sqlite,
                r#"CREATE TABLE IF NOT EXISTS "chunks" ("id" TEXT PRIMARY KEY, "streamId" TEXT NOT NULL, "seq" INTEGER NOT NULL, "text" TEXT NOT NULL)"#,
                r#"CREATE INDEX IF NOT EXISTS "chunks_stream_seq" ON "chunks" ("streamId", "seq")"#,
            ),
            (
                tables(),
                Dialect::Postgres,
                r#"CREATE TABLE IF NOT EXISTS "chunks" ("id" text PRIMARY KEY, "streamId" text NOT NULL, "seq" bigint NOT NULL, "text" text NOT NULL)"#,
                r#"CREATE INDEX IF NOT EXISTS "chunks_stream_seq" ON "chunks" ("streamId", "seq")"#,
            ),
            (
                full_tables(),
                Dialect::Postgres,
                r#"CREATE TABLE IF NOT EXISTS "msg_chunks" ("cid" text PRIMARY KEY, "message_uid" text NOT NULL, "end_at" bigint NOT NULL, "slice" text NOT NULL)"#,
                r#"CREATE INDEX IF NOT EXISTS "msg_chunks_stream_seq" ON "msg_chunks" ("message_uid", "end_at")"#,
            ),
        ];
        for (mapping, dialect, table, index) in cases {
            assert_eq!(stream_chunk_table_ddl(&mapping, dialect).unwrap(), vec![table, index]);
        }
    }

    #[test]
    fn bad_identifiers_are_refused() {
        assert_eq!(quote_ident("a b").unwrap(), "\"a b\"");
        for bad in ["a\"b", "", "x\0y"] {
            let err = quote_ident(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidIdentifier);
            assert!(err.message().contains(&json_quoted(bad)), "{}", err.message());
        }
        let mut bad_table = tables();
        bad_table.chunks = "ch\"unks".into();
        assert_eq!(
            stream_chunk_table_ddl(&bad_table, Dialect::Sqlite).unwrap_err().kind(),
            ErrorKind::InvalidIdentifier
        );
        assert_eq!(MappedSql::new(&bad_table, Dialect::Sqlite).unwrap_err().kind(), ErrorKind::InvalidIdentifier);
        let mut bad_column = tables();
        bad_column.columns.chunk_text = Some("te\"xt".into());
        assert_eq!(
            stream_chunk_table_ddl(&bad_column, Dialect::Sqlite).unwrap_err().kind(),
            ErrorKind::InvalidIdentifier
        );
        // Optional columns are checked up front too, even though they are used only sometimes.
        for set in [
            |c: &mut StreamColumns| c.cancel = Some("c\"".into()),
            |c: &mut StreamColumns| c.error = Some("".into()),
            |c: &mut StreamColumns| c.host = Some("h\"".into()),
            |c: &mut StreamColumns| c.key = Some("k\"".into()),
        ] {
            let mut tb = tables();
            set(&mut tb.columns);
            let err = MappedSql::new(&tb, Dialect::Postgres).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidIdentifier);
        }
        let mut bad_message = tables();
        bad_message.message = String::new();
        assert!(MappedSql::new(&bad_message, Dialect::Sqlite).is_err());
    }

    #[test]
    fn resolved_defaults() {
        let c = StreamColumns::default().resolve();
        assert_eq!(
            (c.key.as_str(), c.body.as_str(), c.status.as_str(), c.seq.as_str()),
            ("id", "body", "status", "seq")
        );
        assert_eq!(
            (c.chunk_key.as_str(), c.chunk_stream.as_str(), c.chunk_seq.as_str(), c.chunk_text.as_str()),
            ("id", "streamId", "seq", "text")
        );
        assert_eq!((c.cancel, c.error, c.host), (None, None, None));
        let sql = MappedSql::new(&tables(), Dialect::Sqlite).unwrap();
        assert!(!sql.has_cancel() && !sql.has_host());
        assert_eq!(sql.columns().chunk_stream, "streamId");
        assert_eq!(sql.dialect(), Dialect::Sqlite);
    }

    #[test]
    fn statements_with_default_columns_sqlite() {
        let sql = MappedSql::new(&tables(), Dialect::Sqlite).unwrap();
        assert_eq!(sql.probe_open(), r#"SELECT "seq" AS seq, "status" AS status FROM "messages" WHERE "id" = ?1"#);
        assert_eq!(
            sql.mark_streaming("m1", "host-a"),
            Statement {
                sql: r#"UPDATE "messages" SET "status" = ?1 WHERE "id" = ?2"#.into(),
                params: vec![t("streaming"), t("m1")],
            }
        );
        assert_eq!(sql.probe_host(), None);
        let [cas, insert] = sql.append("m1", "host-a", 5, 9, "abcd");
        assert_eq!(
            cas,
            Statement {
                sql: r#"UPDATE "messages" SET "seq" = ?1 WHERE "id" = ?2 AND "seq" = ?3 AND "status" = ?4"#.into(),
                params: vec![SqlValue::Int(9), t("m1"), SqlValue::Int(5), t("streaming")],
            }
        );
        // The insert's guard is the slice's END: it lands only where the compare-and-swap (this
        // one, or a replayed one) left the row.
        assert_eq!(
            insert,
            Statement {
                sql: r#"INSERT INTO "chunks" ("id", "streamId", "seq", "text") SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM "messages" WHERE "id" = ?5 AND "seq" = ?6 AND "status" = ?7) ON CONFLICT DO NOTHING"#.into(),
                params: vec![t("m1:9"), t("m1"), SqlValue::Int(9), t("abcd"), t("m1"), SqlValue::Int(9), t("streaming")],
            }
        );
        let [update, delete] =
            sql.compact("m1", "host-a", "hello😀", 7, StreamStatus::Complete, Some("ignored: no column"));
        assert_eq!(
            update,
            Statement {
                sql:
                    r#"UPDATE "messages" SET "body" = ?1, "seq" = ?2, "status" = ?3 WHERE "id" = ?4 AND "status" = ?5"#
                        .into(),
                params: vec![t("hello😀"), SqlValue::Int(7), t("complete"), t("m1"), t("streaming")],
            }
        );
        assert_eq!(
            delete,
            Statement { sql: r#"DELETE FROM "chunks" WHERE "streamId" = ?1"#.into(), params: vec![t("m1")] }
        );
        assert_eq!(sql.probe_state(), r#"SELECT "seq" AS seq, "status" AS status FROM "messages" WHERE "id" = ?1"#);
        assert_eq!(sql.probe_chunk(), r#"SELECT 1 FROM "chunks" WHERE "streamId" = ?1 LIMIT 1"#);
        assert_eq!(sql.sweep_interrupted("host-a"), None);
    }

    #[test]
    fn statements_with_every_column_postgres() {
        let sql = MappedSql::new(&full_tables(), Dialect::Postgres).unwrap();
        assert!(sql.has_cancel() && sql.has_host());
        assert_eq!(sql.probe_open(), r#"SELECT "len" AS seq, "state" AS status FROM "msg" WHERE "uid" = $1"#);
        assert_eq!(
            sql.mark_streaming("m1", "host-a"),
            Statement {
                sql: r#"UPDATE "msg" SET "state" = $1, "owner" = $2 WHERE "uid" = $3 AND ("state" IS NULL OR "state" <> $4)"#.into(),
                params: vec![t("streaming"), t("host-a"), t("m1"), t("streaming")],
            }
        );
        assert_eq!(sql.probe_host().as_deref(), Some(r#"SELECT "owner" AS host FROM "msg" WHERE "uid" = $1"#));
        let [cas, insert] = sql.append("m1", "host-a", 0, 3, "abc");
        assert_eq!(
            cas.sql,
            r#"UPDATE "msg" SET "len" = $1 WHERE "uid" = $2 AND "len" = $3 AND "state" = $4 AND "owner" = $5"#
        );
        assert_eq!(cas.params, vec![SqlValue::Int(3), t("m1"), SqlValue::Int(0), t("streaming"), t("host-a")]);
        assert_eq!(
            insert.sql,
            r#"INSERT INTO "msg_chunks" ("cid", "message_uid", "end_at", "slice") SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM "msg" WHERE "uid" = $5 AND "len" = $6 AND "state" = $7 AND "owner" = $8) ON CONFLICT DO NOTHING"#
        );
        assert_eq!(
            insert.params,
            vec![
                t("m1:3"),
                t("m1"),
                SqlValue::Int(3),
                t("abc"),
                t("m1"),
                SqlValue::Int(3),
                t("streaming"),
                t("host-a")
            ]
        );

        let [update, delete] = sql.compact("m1", "host-a", "abc", 3, StreamStatus::Error, Some("boom"));
        assert_eq!(
            update.sql,
            r#"UPDATE "msg" SET "content" = $1, "len" = $2, "state" = $3, "err" = $4 WHERE "uid" = $5 AND "state" = $6 AND "owner" = $7"#
        );
        assert_eq!(
            update.params,
            vec![t("abc"), SqlValue::Int(3), t("error"), t("boom"), t("m1"), t("streaming"), t("host-a")]
        );
        assert_eq!(delete.sql, r#"DELETE FROM "msg_chunks" WHERE "message_uid" = $1"#);
        assert_eq!(delete.params, vec![t("m1")]);
        // No error: the mapped column is cleared with NULL, not left as it was.
        let [update, _] = sql.compact("m1", "h", "", 0, StreamStatus::Cancelled, None);
        assert_eq!(
            update.params,
            vec![t(""), SqlValue::Int(0), t("cancelled"), SqlValue::Null, t("m1"), t("streaming"), t("h")]
        );

        assert_eq!(
            sql.probe_state(),
            r#"SELECT "len" AS seq, "stop" AS cancel, "state" AS status, "owner" AS host FROM "msg" WHERE "uid" = $1"#
        );
        assert_eq!(sql.probe_chunk(), r#"SELECT 1 FROM "msg_chunks" WHERE "message_uid" = $1 LIMIT 1"#);
        assert_eq!(
            sql.sweep_interrupted("host-a"),
            Some(Statement {
                sql: r#"UPDATE "msg" SET "state" = $1 WHERE "owner" = $2 AND "state" = $3"#.into(),
                params: vec![t("interrupted"), t("host-a"), t("streaming")],
            })
        );
    }

    #[test]
    fn optional_columns_are_independent() {
        // Only `error` mapped: compaction numbers the key after it; nothing else changes.
        let mut tb = tables();
        tb.columns.error = Some("error".into());
        let sql = MappedSql::new(&tb, Dialect::Sqlite).unwrap();
        let [update, _] = sql.compact("s", "h", "x", 1, StreamStatus::Interrupted, None);
        assert_eq!(
            update.sql,
            r#"UPDATE "messages" SET "body" = ?1, "seq" = ?2, "status" = ?3, "error" = ?4 WHERE "id" = ?5 AND "status" = ?6"#
        );
        assert_eq!(
            update.params,
            vec![t("x"), SqlValue::Int(1), t("interrupted"), SqlValue::Null, t("s"), t("streaming")]
        );
        assert_eq!(sql.probe_state(), r#"SELECT "seq" AS seq, "status" AS status FROM "messages" WHERE "id" = ?1"#);
        assert!(sql.probe_host().is_none());

        // Only `cancel` mapped.
        let mut tb = tables();
        tb.columns.cancel = Some("cancel".into());
        let sql = MappedSql::new(&tb, Dialect::Sqlite).unwrap();
        assert_eq!(
            sql.probe_state(),
            r#"SELECT "seq" AS seq, "cancel" AS cancel, "status" AS status FROM "messages" WHERE "id" = ?1"#
        );
        let [update, _] = sql.compact("s", "h", "x", 1, StreamStatus::Complete, Some("e"));
        assert_eq!(update.params.len(), 5);

        // Only `host` mapped, SQLite placeholders.
        let mut tb = tables();
        tb.columns.host = Some("host".into());
        let sql = MappedSql::new(&tb, Dialect::Sqlite).unwrap();
        assert_eq!(
            sql.mark_streaming("s", "tok").sql,
            r#"UPDATE "messages" SET "status" = ?1, "host" = ?2 WHERE "id" = ?3 AND ("status" IS NULL OR "status" <> ?4)"#
        );
        assert_eq!(
            sql.sweep_interrupted("tok").unwrap().sql,
            r#"UPDATE "messages" SET "status" = ?1 WHERE "host" = ?2 AND "status" = ?3"#
        );
    }

    #[test]
    fn placeholders_match_parameter_counts() {
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            for tb in [tables(), full_tables()] {
                let sql = MappedSql::new(&tb, d).unwrap();
                let mut stmts = vec![sql.mark_streaming("s", "h")];
                stmts.extend(sql.append("s", "h", 1, 2, "x"));
                stmts.extend(sql.compact("s", "h", "ab", 2, StreamStatus::Complete, None));
                stmts.extend(sql.sweep_interrupted("h"));
                for st in stmts {
                    for i in 1..=st.params.len() {
                        assert!(st.sql.contains(&d.placeholder(i)), "{} lacks {}", st.sql, d.placeholder(i));
                    }
                    assert!(!st.sql.contains(&d.placeholder(st.params.len() + 1)), "{}", st.sql);
                }
            }
        }
    }

    #[test]
    fn parts_columns_when_named() {
        let mut tb = tables();
        tb.columns = tb.columns.with_parts();
        assert_eq!(
            stream_chunk_table_ddl(&tb, Dialect::Postgres).unwrap()[0],
            r#"CREATE TABLE IF NOT EXISTS "chunks" ("id" text PRIMARY KEY, "streamId" text NOT NULL, "seq" bigint NOT NULL, "text" text NOT NULL, "parts" text)"#
        );
        let migration = stream_parts_migration(&tb, Dialect::Sqlite).unwrap();
        assert_eq!(
            migration.iter().map(|(_, _, sql)| sql.as_str()).collect::<Vec<_>>(),
            vec![
                r#"ALTER TABLE "messages" ADD COLUMN "parts" TEXT"#,
                r#"ALTER TABLE "chunks" ADD COLUMN "parts" TEXT"#
            ]
        );
        assert_eq!(
            stream_parts_migration(&tb, Dialect::Postgres).unwrap()[1].2,
            r#"ALTER TABLE "chunks" ADD COLUMN IF NOT EXISTS "parts" text"#
        );
        assert!(stream_parts_migration(&tables(), Dialect::Sqlite).unwrap().is_empty());

        let sql = MappedSql::new(&tb, Dialect::Sqlite).unwrap();
        assert!(sql.has_parts());
        let [cas, insert] = sql.append_parts("m1", "h", 5, 9, "[]").unwrap();
        assert_eq!(cas, sql.append("m1", "h", 5, 9, "")[0]);
        assert_eq!(
            insert.sql,
            r#"INSERT INTO "chunks" ("id", "streamId", "seq", "text", "parts") SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM "messages" WHERE "id" = ?6 AND "seq" = ?7 AND "status" = ?8) ON CONFLICT DO NOTHING"#
        );
        assert_eq!(
            insert.params,
            vec![t("m1:9"), t("m1"), SqlValue::Int(9), t(""), t("[]"), t("m1"), SqlValue::Int(9), t("streaming")]
        );
        let [update, delete] = sql.compact_message("m1", "h", "ab", 4, "{}", StreamStatus::Complete, None).unwrap();
        assert_eq!(
            update.sql,
            r#"UPDATE "messages" SET "body" = ?1, "seq" = ?2, "status" = ?3, "parts" = ?4 WHERE "id" = ?5 AND "status" = ?6"#
        );
        assert_eq!(update.params, vec![t("ab"), SqlValue::Int(4), t("complete"), t("{}"), t("m1"), t("streaming")]);
        assert_eq!(delete, sql.compact("m1", "h", "ab", 4, StreamStatus::Complete, None)[1]);

        // With every optional column: the document sits before the key and the fence.
        let mut full = full_tables();
        full.columns.parts = Some("doc".into());
        full.columns.chunk_parts = Some("frames".into());
        let sql = MappedSql::new(&full, Dialect::Postgres).unwrap();
        let [update, _] = sql.compact_message("m1", "h", "ab", 4, "{}", StreamStatus::Error, Some("e")).unwrap();
        assert_eq!(
            update.sql,
            r#"UPDATE "msg" SET "content" = $1, "len" = $2, "state" = $3, "err" = $4, "doc" = $5 WHERE "uid" = $6 AND "state" = $7 AND "owner" = $8"#
        );
        assert_eq!(
            update.params,
            vec![t("ab"), SqlValue::Int(4), t("error"), t("e"), t("{}"), t("m1"), t("streaming"), t("h")]
        );
        assert!(sql.append_parts("m1", "h", 0, 1, "[]").unwrap()[1].sql.contains(r#""frames") SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM "msg" WHERE "uid" = $6 AND "len" = $7 AND "state" = $8 AND "owner" = $9)"#));

        // Without them there are no parts statements; one alone is a mapping error.
        let plain = MappedSql::new(&tables(), Dialect::Sqlite).unwrap();
        assert!(!plain.has_parts() && plain.append_parts("m", "h", 0, 1, "[]").is_none());
        let mut half = tables();
        half.columns.parts = Some("parts".into());
        assert_eq!(MappedSql::new(&half, Dialect::Sqlite).unwrap_err().kind(), ErrorKind::InvalidArgument);
        let mut bad = tables();
        bad.columns = bad.columns.with_parts();
        bad.columns.chunk_parts = Some("p\"".into());
        assert_eq!(MappedSql::new(&bad, Dialect::Sqlite).unwrap_err().kind(), ErrorKind::InvalidIdentifier);
        assert_eq!(stream_chunk_table_ddl(&bad, Dialect::Sqlite).unwrap_err().kind(), ErrorKind::InvalidIdentifier);
    }

    #[test]
    fn huge_offsets_saturate_instead_of_wrapping() {
        let sql = MappedSql::new(&tables(), Dialect::Sqlite).unwrap();
        let [cas, _] = sql.append("s", "h", u64::MAX - 1, u64::MAX, "");
        assert_eq!(cas.params[0], SqlValue::Int(i64::MAX));
        assert_eq!(cas.params[2], SqlValue::Int(i64::MAX));
    }
}
