//! The liveness lease of producer hosts: its table, heartbeat, release, sweep and prune
//! statements (see [`HostLeaseSql`] for what they guarantee).

use super::names::{quote_ident, Dialect, StreamTables};
use super::schema::{host_lease_table, TableShape};
use super::statement::{int, text, Statement};
use crate::error::{Error, ErrorKind, Result};
use crate::frame::{StreamStatus, STREAM_STATUS_STREAMING};

/// The default name of the liveness lease table ([`HostLeaseSql`]).
pub const DEFAULT_HOST_LEASE_TABLE: &str = "twoplane_hosts";

/// The database clock in milliseconds since the Unix epoch, as an SQL expression. The lease is
/// judged by the shared database's clock, never a process's, so instances whose clocks disagree
/// still agree on which leases are live. SQLite computes it from `julianday` (available in every
/// SQLite, unlike `unixepoch`); Postgres from the current transaction's timestamp.
fn now_ms(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM now()) * 1000 AS bigint)",
    }
}

/// The liveness lease of producer hosts, for several instances sharing one database.
///
/// Every instance upserts a row `(host, expires_at)` in the lease table on a period shorter than
/// the lease's time to live ([`HostLeaseSql::heartbeat`]); a sweeper that any instance runs marks
/// `interrupted` every `streaming` message row whose host's lease has expired
/// ([`HostLeaseSql::sweep_expired`]), which releases the stream of a host that died without
/// sealing it: readers converge on the store, where the row now says `interrupted` and body plus
/// chunks assemble to the durable prefix (the chunk rows are left alone, as in
/// [`MappedSql::sweep_interrupted`](super::MappedSql::sweep_interrupted)).
///
/// Guarantees:
/// - Only rows whose status is exactly `streaming` change, and only their status: a sealed row
///   is never touched, and neither are `body`, `seq` or the chunk rows. (The one exception is
///   the opt-in [`HostLeaseSql::adopt_hostless`], which also writes the host of rows that have
///   none.) A swept row's producer is fenced off: its later writes require `streaming`
///   ([`MappedSql`](super::MappedSql)).
/// - A row is swept only when its host HAS a lease row and that lease has expired. A host with no
///   lease row at all (a producer that does not take part in leasing) is never judged dead, so
///   one lease-less instance sharing the database cannot have its streams cut by the others.
/// - Expiry is judged by the database's clock (see `now_ms`), in milliseconds.
/// - Like [`MappedSql`](super::MappedSql), every name is checked once in [`HostLeaseSql::new`]; the methods cannot
///   fail and values always travel as parameters.
#[derive(Clone, Debug)]
pub struct HostLeaseSql {
    dialect: Dialect,
    table: TableShape,
    heartbeat: String,
    release: String,
    sweep: String,
    prune: String,
    adopt_rows: String,
    adopt_lease: String,
}

impl HostLeaseSql {
    /// Build the lease statements for the message table of `tables` (whose `host` column must be
    /// mapped: it is how a row names its producer) and the lease table `lease_table`
    /// (conventionally [`DEFAULT_HOST_LEASE_TABLE`]).
    pub fn new(tables: &StreamTables, lease_table: &str, dialect: Dialect) -> Result<HostLeaseSql> {
        let c = tables.columns.resolve();
        let host_column = c.host.as_deref().ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                "a host lease needs the message table's host column mapped: without it no row says which \
                 instance produces it",
            )
        })?;
        let p = |i: usize| dialect.placeholder(i);
        let now = now_ms(dialect);
        let message = quote_ident(&tables.message)?;
        let key = quote_ident(&c.key)?;
        let status = quote_ident(&c.status)?;
        let host = quote_ident(host_column)?;
        let lease = quote_ident(lease_table)?;
        let table = host_lease_table(lease_table, dialect)?;
        // An upsert, so the first heartbeat and every later one are the same statement; retrying
        // it is harmless (the newest expiry wins).
        let heartbeat = format!(
            "INSERT INTO {lease} (\"host\", \"expires_at\") VALUES ({}, {now} + {}) \
             ON CONFLICT (\"host\") DO UPDATE SET \"expires_at\" = excluded.\"expires_at\"",
            p(1),
            p(2)
        );
        // Expire rather than delete: a deleted lease would make the host unknown, and an unknown
        // host's rows are never swept (see the guarantees), so anything it left streaming would
        // stay streaming forever.
        let release = format!("UPDATE {lease} SET \"expires_at\" = 0 WHERE \"host\" = {}", p(1));
        // One statement, so a row is judged and changed atomically: no host can heartbeat between
        // the check and the write and still lose its row. RETURNING names the streams released
        // (SQLite has it since 3.35; the bundled one is newer).
        let sweep = format!(
            "UPDATE {message} SET {status} = {} WHERE {status} = {} AND {host} IN \
             (SELECT \"host\" FROM {lease} WHERE \"expires_at\" <= {now}) RETURNING {key}",
            p(1),
            p(2)
        );
        // Forget hosts that died long ago, but only once none of their rows is streaming (their
        // lease row is what lets the sweep release those rows).
        let prune = format!(
            "DELETE FROM {lease} WHERE \"expires_at\" < {now} - {} AND NOT EXISTS \
             (SELECT 1 FROM {message} WHERE {message}.{host} = {lease}.\"host\" AND {message}.{status} = {})",
            p(1),
            p(2)
        );
        // Host-less rows (an older single-instance run wrote them) have no lease that could
        // expire. Adopting them under a fresh pseudo-host whose lease ends after the grace
        // period reuses the sweep above, so their age is judged by the database's clock like
        // every other lease. The lease row is written only when the update took rows, and a
        // concurrent adopter finds the host column no longer NULL (the row lock orders them).
        let adopt_rows = format!("UPDATE {message} SET {host} = {} WHERE {status} = {} AND {host} IS NULL", p(1), p(2));
        let adopt_lease = format!(
            "INSERT INTO {lease} (\"host\", \"expires_at\") SELECT {}, {now} + {} WHERE EXISTS \
             (SELECT 1 FROM {message} WHERE {host} = {} AND {status} = {}) ON CONFLICT (\"host\") DO NOTHING",
            p(1),
            p(2),
            p(3),
            p(4)
        );
        Ok(HostLeaseSql { dialect, table, heartbeat, release, sweep, prune, adopt_rows, adopt_lease })
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The lease table's migration: `CREATE TABLE IF NOT EXISTS <lease> ("host" text PRIMARY
    /// KEY, "expires_at" bigint NOT NULL)` (SQLite: `TEXT`, `INTEGER`); `expires_at` is in
    /// milliseconds since the Unix epoch by the database's clock.
    pub fn ddl(&self) -> Vec<String> {
        self.table.create()
    }

    /// The lease table's shape (what [`HostLeaseSql::ddl`] creates).
    pub fn table(&self) -> &TableShape {
        &self.table
    }

    /// Renew (or take) `host`'s lease until `ttl_ms` from now.
    pub fn heartbeat(&self, host: &str, ttl_ms: u64) -> Statement {
        Statement { sql: self.heartbeat.clone(), params: vec![text(host), int(ttl_ms)] }
    }

    /// Give `host`'s lease up now (a clean shutdown, after the plane drained): anything it still
    /// holds as `streaming` is released by the next sweep.
    pub fn release(&self, host: &str) -> Statement {
        Statement { sql: self.release.clone(), params: vec![text(host)] }
    }

    /// Mark `interrupted` every `streaming` row whose host's lease has expired. It returns one
    /// row per released stream: its key.
    pub fn sweep_expired(&self) -> Statement {
        Statement {
            sql: self.sweep.clone(),
            params: vec![text(StreamStatus::Interrupted.as_str()), text(STREAM_STATUS_STREAMING)],
        }
    }

    /// Adopt every `streaming` row whose host column is NULL under the pseudo-host `marker` (a
    /// fresh unique name per call), with a lease that ends `grace_ms` from now by the database's
    /// clock: the next [`HostLeaseSql::sweep_expired`] after that releases them. Two statements,
    /// to run in one transaction, in this order; the second writes the lease only when the
    /// first took rows. This is the one statement that writes the host column of a row it did
    /// not open; a producer without a host column is fenced by the status alone, so the sweep
    /// still stops it.
    pub fn adopt_hostless(&self, marker: &str, grace_ms: u64) -> [Statement; 2] {
        let streaming = text(STREAM_STATUS_STREAMING);
        [
            Statement { sql: self.adopt_rows.clone(), params: vec![text(marker), streaming.clone()] },
            Statement {
                sql: self.adopt_lease.clone(),
                params: vec![text(marker), int(grace_ms), text(marker), streaming],
            },
        ]
    }

    /// Delete lease rows expired for more than `retention_ms` whose host holds no `streaming`
    /// row any more.
    pub fn prune(&self, retention_ms: u64) -> Statement {
        Statement { sql: self.prune.clone(), params: vec![int(retention_ms), text(STREAM_STATUS_STREAMING)] }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{full_tables, t, tables};
    use super::super::statement::SqlValue;
    use super::*;

    #[test]
    fn host_lease_needs_a_host_column_and_checks_names() {
        let err = HostLeaseSql::new(&tables(), DEFAULT_HOST_LEASE_TABLE, Dialect::Sqlite).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("host column"), "{}", err.message());
        let mut tb = tables();
        tb.columns.host = Some("host".into());
        assert_eq!(
            HostLeaseSql::new(&tb, "bad\"lease", Dialect::Postgres).unwrap_err().kind(),
            ErrorKind::InvalidIdentifier
        );
        assert_eq!(HostLeaseSql::new(&tb, "", Dialect::Postgres).unwrap_err().kind(), ErrorKind::InvalidIdentifier);
        tb.columns.host = Some("h\"".into());
        assert_eq!(
            HostLeaseSql::new(&tb, DEFAULT_HOST_LEASE_TABLE, Dialect::Sqlite).unwrap_err().kind(),
            ErrorKind::InvalidIdentifier
        );
    }

    #[test]
    fn host_lease_statements_postgres() {
        let lease = HostLeaseSql::new(&full_tables(), "leases", Dialect::Postgres).unwrap();
        assert_eq!(lease.dialect(), Dialect::Postgres);
        assert_eq!(
            lease.ddl(),
            vec![r#"CREATE TABLE IF NOT EXISTS "leases" ("host" text PRIMARY KEY, "expires_at" bigint NOT NULL)"#]
        );
        let now = "CAST(EXTRACT(EPOCH FROM now()) * 1000 AS bigint)";
        assert_eq!(
            lease.heartbeat("host-a", 15_000),
            Statement {
                sql: format!(
                    r#"INSERT INTO "leases" ("host", "expires_at") VALUES ($1, {now} + $2) ON CONFLICT ("host") DO UPDATE SET "expires_at" = excluded."expires_at""#
                ),
                params: vec![t("host-a"), SqlValue::Int(15_000)],
            }
        );
        assert_eq!(
            lease.release("host-a"),
            Statement {
                sql: r#"UPDATE "leases" SET "expires_at" = 0 WHERE "host" = $1"#.into(),
                params: vec![t("host-a")],
            }
        );
        // The mapped names: state/owner/uid, never the defaults.
        assert_eq!(
            lease.sweep_expired(),
            Statement {
                sql: format!(
                    r#"UPDATE "msg" SET "state" = $1 WHERE "state" = $2 AND "owner" IN (SELECT "host" FROM "leases" WHERE "expires_at" <= {now}) RETURNING "uid""#
                ),
                params: vec![t("interrupted"), t("streaming")],
            }
        );
        assert_eq!(
            lease.prune(86_400_000),
            Statement {
                sql: format!(
                    r#"DELETE FROM "leases" WHERE "expires_at" < {now} - $1 AND NOT EXISTS (SELECT 1 FROM "msg" WHERE "msg"."owner" = "leases"."host" AND "msg"."state" = $2)"#
                ),
                params: vec![SqlValue::Int(86_400_000), t("streaming")],
            }
        );
    }

    #[test]
    fn host_lease_statements_sqlite() {
        let mut tb = tables();
        tb.columns.host = Some("host".into());
        let lease = HostLeaseSql::new(&tb, DEFAULT_HOST_LEASE_TABLE, Dialect::Sqlite).unwrap();
        assert_eq!(
            lease.ddl(),
            vec![
                r#"CREATE TABLE IF NOT EXISTS "twoplane_hosts" ("host" TEXT PRIMARY KEY, "expires_at" INTEGER NOT NULL)"#
            ]
        );
        let now = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
        assert_eq!(
            lease.heartbeat("h", 1).sql,
            format!(
                r#"INSERT INTO "twoplane_hosts" ("host", "expires_at") VALUES (?1, {now} + ?2) ON CONFLICT ("host") DO UPDATE SET "expires_at" = excluded."expires_at""#
            )
        );
        assert_eq!(
            lease.sweep_expired().sql,
            format!(
                r#"UPDATE "messages" SET "status" = ?1 WHERE "status" = ?2 AND "host" IN (SELECT "host" FROM "twoplane_hosts" WHERE "expires_at" <= {now}) RETURNING "id""#
            )
        );
        let [rows, lease] = lease.adopt_hostless("hostless-1", 60_000);
        assert_eq!(rows.sql, r#"UPDATE "messages" SET "host" = ?1 WHERE "status" = ?2 AND "host" IS NULL"#);
        assert_eq!(rows.params, vec![t("hostless-1"), t("streaming")]);
        assert_eq!(
            lease.sql,
            format!(
                r#"INSERT INTO "twoplane_hosts" ("host", "expires_at") SELECT ?1, {now} + ?2 WHERE EXISTS (SELECT 1 FROM "messages" WHERE "host" = ?3 AND "status" = ?4) ON CONFLICT ("host") DO NOTHING"#
            )
        );
        assert_eq!(lease.params, vec![t("hostless-1"), SqlValue::Int(60_000), t("hostless-1"), t("streaming")]);
        let lease = HostLeaseSql::new(&tb, DEFAULT_HOST_LEASE_TABLE, Dialect::Sqlite).unwrap();
        // Offsets past i64 saturate like every other integer parameter.
        assert_eq!(lease.heartbeat("h", u64::MAX).params[1], SqlValue::Int(i64::MAX));
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            let lease = HostLeaseSql::new(&tb, DEFAULT_HOST_LEASE_TABLE, d).unwrap();
            let [adopt_rows, adopt_lease] = lease.adopt_hostless("m", 5);
            for st in [
                lease.heartbeat("h", 5),
                lease.release("h"),
                lease.sweep_expired(),
                lease.prune(5),
                adopt_rows,
                adopt_lease,
            ] {
                for i in 1..=st.params.len() {
                    assert!(st.sql.contains(&d.placeholder(i)), "{} lacks {}", st.sql, d.placeholder(i));
                }
                assert!(!st.sql.contains(&d.placeholder(st.params.len() + 1)), "{}", st.sql);
            }
        }
    }
}
