//! Every table twoplane creates or adds columns to, described once per dialect ([`TableShape`]),
//! with the statements that create it and upgrade an older one, and the catalog queries that
//! read back what a database actually holds.
//!
//! Guarantees:
//! - One description per table: its `CREATE TABLE`, its indexes, every `ALTER TABLE ... ADD
//!   COLUMN` of its migrations and what the catalog must report of it are all derived from the
//!   same [`TableShape`], so a table created from empty and one upgraded from an older shape
//!   cannot drift apart without the shape saying so.
//! - A column is either *required* (in the table's first shape: a table without it is not one
//!   twoplane created, and is refused rather than altered) or *added* (a later migration: an
//!   older table gains it, nullable or with a default, so existing rows keep reading as before).
//! - Columns are added in the order the shape lists them, which is the order the migrations
//!   shipped in, so an upgraded table lists its columns as a new one does.
//! - Every name is quoted (and refused when it cannot be) when the shape is built; after that no
//!   method fails.

use super::names::{quote_ident, Dialect, StreamTables};
use super::statement::{SqlValue, Statement};
use crate::error::{Error, ErrorKind, Result};

/// A column's type, which each dialect names in its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// `TEXT` / `text`.
    Text,
    /// `INTEGER` / `bigint`.
    Int,
    /// `INTEGER` (0 or 1) / `boolean`.
    Bool,
    /// A creation-order counter: PostgreSQL's `bigserial` (SQLite tables order by rowid and
    /// have no such column).
    Serial,
}

impl ColumnType {
    /// The type as a `CREATE TABLE` declares it.
    fn declared(self, dialect: Dialect) -> &'static str {
        match (self, dialect) {
            (ColumnType::Text, Dialect::Sqlite) => "TEXT",
            (ColumnType::Text, Dialect::Postgres) => "text",
            (ColumnType::Int | ColumnType::Bool | ColumnType::Serial, Dialect::Sqlite) => "INTEGER",
            (ColumnType::Int, Dialect::Postgres) => "bigint",
            (ColumnType::Bool, Dialect::Postgres) => "boolean",
            (ColumnType::Serial, Dialect::Postgres) => "bigserial",
        }
    }

    /// The type as the catalog reports it: SQLite keeps the declared text, PostgreSQL's
    /// `format_type` turns `bigserial` into `bigint` (with a sequence as its default).
    fn catalogued(self, dialect: Dialect) -> &'static str {
        match (self, dialect) {
            (ColumnType::Serial, Dialect::Postgres) => "bigint",
            _ => self.declared(dialect),
        }
    }
}

/// A column's default, the value an existing row takes when the column is added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnDefault {
    /// `''`.
    EmptyText,
    /// `0`.
    Zero,
    /// `false` (SQLite: `0`).
    False,
}

impl ColumnDefault {
    fn sql(self, dialect: Dialect) -> &'static str {
        match (self, dialect) {
            (ColumnDefault::EmptyText, _) => "''",
            (ColumnDefault::Zero, _) | (ColumnDefault::False, Dialect::Sqlite) => "0",
            (ColumnDefault::False, Dialect::Postgres) => "false",
        }
    }

    /// As the catalog reports it (PostgreSQL's `pg_get_expr` keeps the text literal's cast).
    fn catalogued(self, dialect: Dialect) -> &'static str {
        match (self, dialect) {
            (ColumnDefault::EmptyText, Dialect::Postgres) => "''::text",
            _ => self.sql(dialect),
        }
    }
}

/// One column of a [`TableShape`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
    pub primary_key: bool,
    pub not_null: bool,
    pub default: Option<ColumnDefault>,
    /// Added by a migration after the table first shipped (see the module's guarantees).
    pub added: bool,
    quoted: String,
}

impl Column {
    fn new(name: &str, ty: ColumnType) -> Result<Column> {
        Ok(Column {
            name: name.to_owned(),
            ty,
            primary_key: false,
            not_null: false,
            default: None,
            added: false,
            quoted: quote_ident(name)?,
        })
    }

    fn primary_key(self) -> Column {
        Column { primary_key: true, ..self }
    }

    fn not_null(self) -> Column {
        Column { not_null: true, ..self }
    }

    fn default(self, default: ColumnDefault) -> Column {
        Column { default: Some(default), ..self }
    }

    fn added(self) -> Column {
        Column { added: true, ..self }
    }

    /// `"name" TYPE[ PRIMARY KEY][ NOT NULL][ DEFAULT v]`, as both `CREATE TABLE` and `ADD
    /// COLUMN` write it.
    fn definition(&self, dialect: Dialect) -> String {
        let mut out = format!("{} {}", self.quoted, self.ty.declared(dialect));
        if self.primary_key {
            out.push_str(" PRIMARY KEY");
        }
        if self.not_null {
            out.push_str(" NOT NULL");
        }
        if let Some(default) = self.default {
            out.push_str(" DEFAULT ");
            out.push_str(default.sql(dialect));
        }
        out
    }
}

/// An index of a [`TableShape`] (a plain one: the primary key is the column's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    pub name: String,
    pub columns: Vec<String>,
    quoted: String,
    quoted_columns: Vec<String>,
}

/// One column as a database's catalog reports it ([`TableShape::catalog_columns`] reads it,
/// [`TableShape::expected_columns`] says what it must be).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogColumn {
    pub name: String,
    /// SQLite: the declared type; PostgreSQL: `format_type`'s name.
    pub ty: String,
    pub not_null: bool,
    /// The default's expression as the catalog keeps it.
    pub default: Option<String>,
    pub primary_key: bool,
}

/// One table as one dialect writes it: created by twoplane, or (the application's message
/// table) only given the columns the plane needs. Built by [`stream_chunk_table`],
/// [`stream_message_columns`], [`owned_message_table`] and [`host_lease_table`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableShape {
    dialect: Dialect,
    name: String,
    quoted: String,
    /// Whether twoplane creates the table. The application's message table is not created:
    /// only its added columns are, and it has no required ones.
    created: bool,
    columns: Vec<Column>,
    indexes: Vec<Index>,
}

impl TableShape {
    fn new(name: &str, dialect: Dialect, created: bool, columns: Vec<Column>) -> Result<TableShape> {
        Ok(TableShape {
            dialect,
            name: name.to_owned(),
            quoted: quote_ident(name)?,
            created,
            columns,
            indexes: Vec::new(),
        })
    }

    fn with_index(mut self, name: &str, columns: &[&str]) -> Result<TableShape> {
        self.indexes.push(Index {
            name: name.to_owned(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            quoted: quote_ident(name)?,
            quoted_columns: columns.iter().map(|c| quote_ident(c)).collect::<Result<_>>()?,
        });
        Ok(self)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    pub fn indexes(&self) -> &[Index] {
        &self.indexes
    }

    /// `CREATE TABLE IF NOT EXISTS` with every column, or `None` for a table twoplane does not
    /// create.
    pub fn create_table(&self) -> Option<String> {
        self.created.then(|| {
            let columns = self.columns.iter().map(|c| c.definition(self.dialect)).collect::<Vec<_>>();
            format!("CREATE TABLE IF NOT EXISTS {} ({})", self.quoted, columns.join(", "))
        })
    }

    /// `CREATE INDEX IF NOT EXISTS` of each index. They run after the columns are added, so an
    /// index may name an added column.
    pub fn create_indexes(&self) -> Vec<String> {
        self.indexes
            .iter()
            .map(|i| {
                format!("CREATE INDEX IF NOT EXISTS {} ON {} ({})", i.quoted, self.quoted, i.quoted_columns.join(", "))
            })
            .collect()
    }

    /// The table created from empty: [`TableShape::create_table`], then the indexes.
    pub fn create(&self) -> Vec<String> {
        self.create_table().into_iter().chain(self.create_indexes()).collect()
    }

    /// The migration that adds `column` to a table that lacks it. SQLite has no `IF NOT EXISTS`
    /// for a column, so a runner adds only the columns the catalog lacks
    /// ([`TableShape::add_missing`]); PostgreSQL's statement carries one anyway.
    pub fn add_column(&self, column: &Column) -> String {
        let guard = match self.dialect {
            Dialect::Sqlite => "",
            Dialect::Postgres => "IF NOT EXISTS ",
        };
        format!("ALTER TABLE {} ADD COLUMN {guard}{}", self.quoted, column.definition(self.dialect))
    }

    /// The required columns a table holding `present` lacks: where there is any, the table is
    /// not one twoplane created, and must be refused rather than altered.
    pub fn missing_required(&self, present: &[String]) -> Vec<&str> {
        self.columns.iter().filter(|c| !c.added && !present.contains(&c.name)).map(|c| c.name.as_str()).collect()
    }

    /// The migrations a table holding `present` needs, in the shape's order.
    pub fn add_missing(&self, present: &[String]) -> Vec<String> {
        self.columns.iter().filter(|c| c.added && !present.contains(&c.name)).map(|c| self.add_column(c)).collect()
    }

    /// The catalog's view of the table's columns, in column order, one row per column: name,
    /// type, not null (0 or 1), default (or NULL), primary key (0 or 1). Its first column is
    /// what a runner compares with [`TableShape::missing_required`] and
    /// [`TableShape::add_missing`].
    pub fn catalog_columns(&self) -> Statement {
        let sql = match self.dialect {
            Dialect::Sqlite => {
                "SELECT name, type, \"notnull\", dflt_value, CASE WHEN pk > 0 THEN 1 ELSE 0 END \
                 FROM pragma_table_info(?1) ORDER BY cid"
            }
            Dialect::Postgres => {
                "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), \
                 CASE WHEN a.attnotnull THEN 1 ELSE 0 END, pg_get_expr(d.adbin, d.adrelid), \
                 CASE WHEN EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'p' \
                 AND a.attnum = ANY (k.conkey)) THEN 1 ELSE 0 END \
                 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
                 LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
                 WHERE c.relname = $1 AND c.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema()) \
                 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
            }
        };
        Statement { sql: sql.to_owned(), params: vec![SqlValue::Text(self.name.clone())] }
    }

    /// The catalog's view of the table's plain indexes (not the primary key's), one row per
    /// indexed column: index name, column name, by index name and then the column's place.
    pub fn catalog_indexes(&self) -> Statement {
        let sql = match self.dialect {
            Dialect::Sqlite => {
                "SELECT il.name, ii.name FROM pragma_index_list(?1) il, pragma_index_info(il.name) ii \
                 WHERE il.origin = 'c' ORDER BY il.name, ii.seqno"
            }
            Dialect::Postgres => {
                "SELECT i.relname::text, a.attname::text FROM pg_index x \
                 JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid \
                 CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, place) \
                 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum \
                 WHERE t.relname = $1 AND t.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema()) \
                 AND NOT x.indisprimary ORDER BY 1, k.place"
            }
        };
        Statement { sql: sql.to_owned(), params: vec![SqlValue::Text(self.name.clone())] }
    }

    /// What [`TableShape::catalog_columns`] must read of this table (for a table twoplane does
    /// not create: of its columns twoplane adds, in their order). PostgreSQL reports a primary
    /// key and a `bigserial` as not null, and a `bigserial`'s default as its sequence (named
    /// `<table>_<column>_seq`, written here as PostgreSQL writes a name that needs no quotes).
    pub fn expected_columns(&self) -> Vec<CatalogColumn> {
        let pg = self.dialect == Dialect::Postgres;
        self.columns
            .iter()
            .map(|c| {
                let serial = c.ty == ColumnType::Serial;
                CatalogColumn {
                    name: c.name.clone(),
                    ty: c.ty.catalogued(self.dialect).to_owned(),
                    not_null: c.not_null || (pg && (c.primary_key || serial)),
                    default: match c.default {
                        Some(d) => Some(d.catalogued(self.dialect).to_owned()),
                        None if pg && serial => Some(format!("nextval('{}_{}_seq'::regclass)", self.name, c.name)),
                        None => None,
                    },
                    primary_key: c.primary_key,
                }
            })
            .collect()
    }

    /// What [`TableShape::catalog_indexes`] must read: `(index, column)` pairs in its order.
    pub fn expected_indexes(&self) -> Vec<(String, String)> {
        let mut indexes: Vec<&Index> = self.indexes.iter().collect();
        indexes.sort_by(|a, b| a.name.cmp(&b.name));
        indexes.iter().flat_map(|i| i.columns.iter().map(|c| (i.name.clone(), c.clone()))).collect()
    }
}

/// The chunk table (docs/contract.md §6): key, stream, seq and text, then the parts column when
/// the mapping names it (added: it came with messages with parts, §8), and the `(stream, seq)`
/// index, which serves both reading a stream's chunks in order and compaction's delete by
/// stream.
pub fn stream_chunk_table(tables: &StreamTables, dialect: Dialect) -> Result<TableShape> {
    let c = tables.columns.resolve();
    let mut columns = vec![
        Column::new(&c.chunk_key, ColumnType::Text)?.primary_key(),
        Column::new(&c.chunk_stream, ColumnType::Text)?.not_null(),
        Column::new(&c.chunk_seq, ColumnType::Int)?.not_null(),
        Column::new(&c.chunk_text, ColumnType::Text)?.not_null(),
    ];
    if let Some(parts) = &c.chunk_parts {
        columns.push(Column::new(parts, ColumnType::Text)?.added());
    }
    TableShape::new(&tables.chunks, dialect, true, columns)?
        .with_index(&format!("{}_stream_seq", tables.chunks), &[&c.chunk_stream, &c.chunk_seq])
}

/// What the plane adds to the application's message table: the parts column when the mapping
/// names it (nullable text: existing rows read as messages without a document). The table itself
/// is the application's, so nothing else of it is described, created or required.
pub fn stream_message_columns(tables: &StreamTables, dialect: Dialect) -> Result<TableShape> {
    let parts = tables.columns.resolve().parts;
    let columns = parts.iter().map(|p| Column::new(p, ColumnType::Text).map(Column::added)).collect::<Result<_>>()?;
    TableShape::new(&tables.message, dialect, false, columns)
}

/// What the plane needs of a mapping, in the order to run: the message table's added columns,
/// then the chunk table.
pub fn stream_schema(tables: &StreamTables, dialect: Dialect) -> Result<Vec<TableShape>> {
    Ok(vec![stream_message_columns(tables, dialect)?, stream_chunk_table(tables, dialect)?])
}

/// The names of an owned message table's columns that are not the plane's mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnedColumns<'a> {
    /// Who wrote the message (`user`, `assistant`).
    pub role: &'a str,
    /// The creation order on PostgreSQL, which has no rowid (`bigserial`; SQLite has none).
    pub position: &'a str,
}

/// The message table of a store twoplane owns (`twoplane serve`), as its versions shipped: first
/// key, role, body, status and seq (and, on PostgreSQL, the position); then the host column
/// (several instances), the cancel flag and the parts column, each added to older tables. The
/// mapping must name host, cancel and parts.
pub fn owned_message_table(tables: &StreamTables, owned: OwnedColumns<'_>, dialect: Dialect) -> Result<TableShape> {
    let c = tables.columns.resolve();
    let (Some(host), Some(cancel), Some(parts)) = (&c.host, &c.cancel, &c.parts) else {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "an owned message table has host, cancel and parts columns: the mapping must name them",
        ));
    };
    let mut columns = Vec::new();
    if dialect == Dialect::Postgres {
        columns.push(Column::new(owned.position, ColumnType::Serial)?);
    }
    columns.extend([
        Column::new(&c.key, ColumnType::Text)?.primary_key(),
        Column::new(owned.role, ColumnType::Text)?,
        Column::new(&c.body, ColumnType::Text)?.not_null().default(ColumnDefault::EmptyText),
        Column::new(&c.status, ColumnType::Text)?,
        Column::new(&c.seq, ColumnType::Int)?.not_null().default(ColumnDefault::Zero),
        Column::new(host, ColumnType::Text)?.added(),
        Column::new(cancel, ColumnType::Bool)?.not_null().default(ColumnDefault::False).added(),
        Column::new(parts, ColumnType::Text)?.added(),
    ]);
    TableShape::new(&tables.message, dialect, true, columns)
}

/// The host lease table ([`super::HostLeaseSql`]): a host and the expiry of its lease, in
/// milliseconds since the Unix epoch by the database's clock.
pub fn host_lease_table(lease_table: &str, dialect: Dialect) -> Result<TableShape> {
    let columns = vec![
        Column::new("host", ColumnType::Text)?.primary_key(),
        Column::new("expires_at", ColumnType::Int)?.not_null(),
    ];
    TableShape::new(lease_table, dialect, true, columns)
}

/// The chunk table's migration from empty: the table, then its `(stream, seq)` index
/// ([`stream_chunk_table`]).
pub fn stream_chunk_table_ddl(tables: &StreamTables, dialect: Dialect) -> Result<Vec<String>> {
    Ok(stream_chunk_table(tables, dialect)?.create())
}

/// The migration that gives existing tables the parts columns (docs/contract.md §8): one
/// `ALTER TABLE ... ADD COLUMN` per named parts column, the message table's first, as `(table,
/// column, statement)`. Both columns are nullable text, so existing rows read as text rows and
/// messages without a document. SQLite has no `IF NOT EXISTS` for a column: run a statement only
/// where the column is missing (PostgreSQL's statements carry `IF NOT EXISTS`). The plane's own
/// runner takes the whole [`stream_schema`]; this is the same migration for one's own.
pub fn stream_parts_migration(tables: &StreamTables, dialect: Dialect) -> Result<Vec<(String, String, String)>> {
    let shapes = stream_schema(tables, dialect)?;
    Ok(shapes
        .iter()
        .flat_map(|shape| {
            shape.columns.iter().filter(|c| c.added).map(|c| (shape.name.clone(), c.name.clone(), shape.add_column(c)))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::tables;
    use super::super::names::StreamColumns;
    use super::*;

    fn owned_mapping() -> StreamTables {
        let columns = StreamColumns {
            host: Some("host".into()),
            cancel: Some("cancel".into()),
            ..StreamColumns::default().with_parts()
        };
        StreamTables { message: "messages".into(), chunks: "message_chunks".into(), columns }
    }

    const OWNED: OwnedColumns<'static> = OwnedColumns { role: "role", position: "position" };

    #[test]
    fn owned_message_table_in_both_dialects() {
        let sqlite = owned_message_table(&owned_mapping(), OWNED, Dialect::Sqlite).unwrap();
        assert_eq!(
            sqlite.create(),
            vec![
                r#"CREATE TABLE IF NOT EXISTS "messages" ("id" TEXT PRIMARY KEY, "role" TEXT, "body" TEXT NOT NULL DEFAULT '', "status" TEXT, "seq" INTEGER NOT NULL DEFAULT 0, "host" TEXT, "cancel" INTEGER NOT NULL DEFAULT 0, "parts" TEXT)"#
            ]
        );
        let pg = owned_message_table(&owned_mapping(), OWNED, Dialect::Postgres).unwrap();
        assert_eq!(
            pg.create(),
            vec![
                r#"CREATE TABLE IF NOT EXISTS "messages" ("position" bigserial, "id" text PRIMARY KEY, "role" text, "body" text NOT NULL DEFAULT '', "status" text, "seq" bigint NOT NULL DEFAULT 0, "host" text, "cancel" boolean NOT NULL DEFAULT false, "parts" text)"#
            ]
        );
        // The catalog's view: PostgreSQL's not-null primary key and sequence default.
        let expected = pg.expected_columns();
        assert_eq!(
            (expected[0].ty.as_str(), expected[0].not_null, expected[0].default.as_deref()),
            ("bigint", true, Some("nextval('messages_position_seq'::regclass)"))
        );
        assert_eq!((expected[1].not_null, expected[1].primary_key), (true, true));
        assert_eq!(expected[3].default.as_deref(), Some("''::text"));
        assert!(!sqlite.expected_columns()[0].not_null);
        assert_eq!(
            owned_message_table(&tables(), OWNED, Dialect::Sqlite).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn an_older_table_gains_only_what_it_lacks_in_order() {
        let shape = owned_message_table(&owned_mapping(), OWNED, Dialect::Sqlite).unwrap();
        let first: Vec<String> = ["id", "role", "body", "status", "seq"].map(String::from).into();
        assert!(shape.missing_required(&first).is_empty());
        assert_eq!(
            shape.add_missing(&first),
            vec![
                r#"ALTER TABLE "messages" ADD COLUMN "host" TEXT"#,
                r#"ALTER TABLE "messages" ADD COLUMN "cancel" INTEGER NOT NULL DEFAULT 0"#,
                r#"ALTER TABLE "messages" ADD COLUMN "parts" TEXT"#,
            ]
        );
        let current: Vec<String> = shape.columns().iter().map(|c| c.name.clone()).collect();
        assert!(shape.add_missing(&current).is_empty());
        // A table that is not ours: refused by its missing required columns, never altered.
        assert_eq!(shape.missing_required(&["id".into(), "text".into()]), vec!["role", "body", "status", "seq"]);
        let pg = owned_message_table(&owned_mapping(), OWNED, Dialect::Postgres).unwrap();
        assert_eq!(pg.missing_required(&first), vec!["position"]);
        assert_eq!(
            pg.add_column(&pg.columns()[7]),
            r#"ALTER TABLE "messages" ADD COLUMN IF NOT EXISTS "cancel" boolean NOT NULL DEFAULT false"#
        );
    }

    #[test]
    fn the_plane_adds_columns_to_the_application_table_and_creates_nothing_there() {
        let shapes = stream_schema(&owned_mapping(), Dialect::Sqlite).unwrap();
        assert_eq!((shapes[0].name(), shapes[0].create_table()), ("messages", None));
        assert!(shapes[0].missing_required(&[]).is_empty());
        assert_eq!(shapes[0].add_missing(&["id".into()]), vec![r#"ALTER TABLE "messages" ADD COLUMN "parts" TEXT"#]);
        assert_eq!(shapes[1].name(), "message_chunks");
        assert_eq!(
            shapes[1].expected_indexes(),
            vec![
                ("message_chunks_stream_seq".to_owned(), "streamId".to_owned()),
                ("message_chunks_stream_seq".to_owned(), "seq".to_owned())
            ]
        );
        // Without parts the plane adds nothing to the application's table.
        let plain = stream_schema(&tables(), Dialect::Postgres).unwrap();
        assert!(plain[0].columns().is_empty() && plain[0].create().is_empty());
        let mut bad = tables();
        bad.columns.parts = Some("p\"".into());
        assert_eq!(stream_message_columns(&bad, Dialect::Sqlite).unwrap_err().kind(), ErrorKind::InvalidIdentifier);
    }
}
