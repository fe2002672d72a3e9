//! The relay's own tables on PostgreSQL, each described once ([`RelayTable`]): the record's
//! default shape (the tables applications write their sessions' events into, which
//! [`RecordTables::ddl`] creates) and the relay's state table (one row per replication slot,
//! which the change source creates when missing).
//!
//! Guarantees:
//! - A table's `CREATE TABLE` and what PostgreSQL's catalog must report of it
//!   ([`RelayTable::expected`], read back with [`RelayTable::CATALOG`]) come from the same
//!   description, so they cannot disagree. None of these tables has had another shape, so there
//!   is no migration to run.
//! - Names may be schema-qualified (`app.events`); each dot-separated part is quoted as an
//!   identifier, with `"` doubled (they come from the relay's configuration).
//! - The key columns are `COLLATE "C"`, so the primary key index serves the byte-wise order in
//!   which the record reader pages the heads of the sessions.

/// One column of a [`RelayTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelayColumn {
    pub name: &'static str,
    /// The PostgreSQL type, as declared and as `information_schema.columns.data_type` says it.
    pub ty: &'static str,
    /// `COLLATE "C"` (a key column compared byte-wise).
    pub collate_c: bool,
}

/// One of the relay's tables: its columns (all `NOT NULL`) and its primary key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelayTable {
    pub columns: &'static [RelayColumn],
    pub primary_key: &'static [&'static str],
}

const fn key(name: &'static str) -> RelayColumn {
    RelayColumn { name, ty: "text", collate_c: true }
}

const fn column(name: &'static str, ty: &'static str) -> RelayColumn {
    RelayColumn { name, ty, collate_c: false }
}

/// The record's tenants: a tenant's basin generation (a reset raises it).
pub const TENANTS: RelayTable =
    RelayTable { columns: &[key("tenant_id"), column("generation", "bigint")], primary_key: &["tenant_id"] };

/// The record's events: `seq` dense from 0 within a session, the tenant's generation when the
/// row was written, and the event, appended to the log as its JSON text.
pub const EVENTS: RelayTable = RelayTable {
    columns: &[
        key("tenant_id"),
        key("session_id"),
        column("seq", "bigint"),
        column("generation", "bigint"),
        column("body", "jsonb"),
    ],
    primary_key: &["tenant_id", "session_id", "seq"],
};

/// The relay's state: per replication slot, whether a reconcile is still owed.
pub const STATE: RelayTable = RelayTable {
    columns: &[column("slot_name", "text"), column("reconcile_pending", "boolean")],
    primary_key: &["slot_name"],
};

/// One column as the catalog reports it: name, type, not null, `"C"` collation, in the key.
pub type CatalogColumn = (String, String, bool, bool, bool);

impl RelayTable {
    /// The columns of the table named `$1` in the current schema, in order, one row per column
    /// as [`CatalogColumn`]: what [`RelayTable::expected`] must equal.
    pub const CATALOG: &'static str = "SELECT c.column_name::text, c.data_type::text, c.is_nullable = 'NO', \
         COALESCE(c.collation_name = 'C', false), EXISTS (SELECT 1 FROM information_schema.table_constraints t \
         JOIN information_schema.key_column_usage k ON k.constraint_schema = t.constraint_schema \
         AND k.constraint_name = t.constraint_name WHERE t.constraint_type = 'PRIMARY KEY' \
         AND t.table_schema = c.table_schema AND t.table_name = c.table_name AND k.column_name = c.column_name) \
         FROM information_schema.columns c WHERE c.table_schema = current_schema() AND c.table_name = $1 \
         ORDER BY c.ordinal_position";

    /// `CREATE TABLE IF NOT EXISTS` of this table under `name` (quoted here), one column a line.
    pub fn create(&self, name: &str) -> String {
        let mut lines: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                let collate = if c.collate_c { " COLLATE \"C\"" } else { "" };
                format!("    {} {}{collate} NOT NULL", c.name, c.ty)
            })
            .collect();
        lines.push(format!("    PRIMARY KEY ({})", self.primary_key.join(", ")));
        format!("CREATE TABLE IF NOT EXISTS {} (\n{}\n);\n", quote_qualified(name), lines.join(",\n"))
    }

    /// What [`RelayTable::CATALOG`] must read of the table [`RelayTable::create`] made.
    pub fn expected(&self) -> Vec<CatalogColumn> {
        self.columns
            .iter()
            .map(|c| (c.name.to_owned(), c.ty.to_owned(), true, c.collate_c, self.primary_key.contains(&c.name)))
            .collect()
    }
}

/// The names of the record's tables. Each may be qualified with a schema (`app.events`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordTables {
    pub tenants: String,
    pub events: String,
}

impl Default for RecordTables {
    fn default() -> Self {
        RecordTables { tenants: "twoplane_relay_tenants".into(), events: "twoplane_relay_events".into() }
    }
}

impl RecordTables {
    /// The tenants table, quoted for SQL.
    pub fn tenants_sql(&self) -> String {
        quote_qualified(&self.tenants)
    }

    /// The events table, quoted for SQL.
    pub fn events_sql(&self) -> String {
        quote_qualified(&self.events)
    }

    /// `CREATE TABLE IF NOT EXISTS` statements of the default shape ([`TENANTS`], [`EVENTS`])
    /// under these names.
    pub fn ddl(&self) -> String {
        TENANTS.create(&self.tenants) + &EVENTS.create(&self.events)
    }
}

/// `CREATE TABLE IF NOT EXISTS` of the relay's state table ([`STATE`]) under `name`.
pub fn state_table_ddl(name: &str) -> String {
    STATE.create(name)
}

/// Quotes each dot-separated part of a (possibly schema-qualified) name as an identifier.
pub fn quote_qualified(name: &str) -> String {
    name.split('.').map(quote_ident).collect::<Vec<_>>().join(".")
}

/// One identifier, quoted, with `"` doubled.
pub fn quote_ident(part: &str) -> String {
    format!("\"{}\"", part.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_per_part() {
        let tables = RecordTables { tenants: "app.tenants".into(), events: "we\"ird".into() };
        assert_eq!(tables.tenants_sql(), "\"app\".\"tenants\"");
        assert_eq!(tables.events_sql(), "\"we\"\"ird\"");
    }

    #[test]
    fn the_default_shape() {
        assert_eq!(
            RecordTables::default().ddl(),
            "CREATE TABLE IF NOT EXISTS \"twoplane_relay_tenants\" (\n    tenant_id text COLLATE \"C\" NOT NULL,\n    \
             generation bigint NOT NULL,\n    PRIMARY KEY (tenant_id)\n);\n\
             CREATE TABLE IF NOT EXISTS \"twoplane_relay_events\" (\n    tenant_id text COLLATE \"C\" NOT NULL,\n    \
             session_id text COLLATE \"C\" NOT NULL,\n    seq bigint NOT NULL,\n    generation bigint NOT NULL,\n    \
             body jsonb NOT NULL,\n    PRIMARY KEY (tenant_id, session_id, seq)\n);\n"
        );
        assert_eq!(
            state_table_ddl("app.state"),
            "CREATE TABLE IF NOT EXISTS \"app\".\"state\" (\n    slot_name text NOT NULL,\n    \
             reconcile_pending boolean NOT NULL,\n    PRIMARY KEY (slot_name)\n);\n"
        );
        assert_eq!(STATE.expected()[0], ("slot_name".into(), "text".into(), true, false, true));
    }
}
