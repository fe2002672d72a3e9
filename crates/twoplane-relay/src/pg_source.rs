//! The PostgreSQL change source: committed inserts into the record's events table, read from a
//! logical replication slot with the `pgoutput` plugin over the streaming replication protocol
//! (`pgwire-replication`), decoded by [`crate::pgoutput`].
//!
//! Guarantees:
//! - **Setup when missing.** The publication (`FOR TABLE <events>`), the logical slot
//!   (`pgoutput`) and the state table holding the reconcile-pending flag are created when they do
//!   not exist; two processes racing to create them both succeed.
//! - **One reader.** Only the process whose `START_REPLICATION` the server accepted holds the
//!   slot; the others are refused by PostgreSQL ("slot is active") and retry every second,
//!   without ever reporting `Active`.
//! - **Whole transactions, in commit order.** Rows are collected from Begin to Commit and sent as
//!   one [`CommittedTx`] ending at the commit's end position; a transaction with no rows of ours
//!   becomes a keepalive at that position. A server keepalive is passed on only between
//!   transactions, so it never points past a transaction begun but not yet sent.
//! - **Forward-only acknowledgement.** A position from the relay is confirmed to the server only
//!   if it is past the last one confirmed; the slot keeps (and replays to the next reader)
//!   everything after it.
//! - **Fresh starts.** A slot that did not exist (or was lost: `wal_status = 'lost'`, dropped and
//!   created again) cannot replay what was committed before it, so the flag is set in the
//!   state table *before* the slot is created and `Active { fresh: true }` is reported until the
//!   relay confirms a completed reconciliation of the current activation; only then is the flag
//!   cleared. A crash anywhere in between leaves it set, and the next reader reconciles again.
//! - **Losing the source.** Any failure (connection, server error, slot dropped under us, a row
//!   that cannot be decoded) ends the session with `Inactive { error }` and a new attempt after a
//!   pause; nothing of the lost session is reused.
//!
//! Both connections (the one for setup and the replication stream) are made by
//! [`twoplane_pg::PgEndpoint`]: the URL's `sslmode` and `sslrootcert` mean what they mean for
//! `twoplane serve`, and connection errors name the server and the cause, never the URL or its
//! password. The replication stream reaches the server through [`crate::pg_bridge`].

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use pgwire_replication::{PgWireError, ReplicationClient, ReplicationConfig, ReplicationEvent};
use tokio_postgres::Client;
use twoplane_pg::PgEndpoint;

use crate::pg_bridge::{Bridge, SOCKET_PORT};

use crate::pg_record::db_message;
use crate::pgoutput::{self, Message, Relation, Value};
use crate::schema::{quote_ident, quote_qualified, state_table_ddl, RecordTables};
use crate::types::{ChangeSource, CommittedTx, Lsn, RecordRow, SourceEvent, SourceLink};

/// How long to wait before trying to take the slot again (held by another process, or failed).
const RETRY: Duration = Duration::from_secs(1);

/// Settings of the PostgreSQL change source.
#[derive(Clone, Debug)]
pub struct PgSourceConfig {
    /// The slot (`[a-z0-9_]`, at most 63 characters, as PostgreSQL requires).
    pub slot: String,
    pub publication: String,
    pub tables: RecordTables,
    /// The table holding each slot's reconcile-pending flag.
    pub state_table: String,
    /// How often the acknowledged position is reported to the server at most.
    pub status_interval: Duration,
}

impl Default for PgSourceConfig {
    fn default() -> Self {
        PgSourceConfig {
            slot: "twoplane_relay".into(),
            publication: "twoplane_relay".into(),
            tables: RecordTables::default(),
            state_table: "twoplane_relay_state".into(),
            status_interval: Duration::from_millis(500),
        }
    }
}

/// Why a source cannot be built from its settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PgSourceConfigError {
    #[error("a replication slot name is 1 to 63 characters of [a-z0-9_]: {0:?}")]
    BadSlot(String),
    #[error("the PostgreSQL URL must name a TCP host (Unix sockets are not supported here)")]
    NoTcpHost,
}

/// The change source over a PostgreSQL database.
pub struct PgSource {
    endpoint: PgEndpoint,
    /// Everything but where to connect, which each session's bridge decides.
    replication: ReplicationConfig,
    config: PgSourceConfig,
    /// The events table's unqualified name and its schema when given, to recognise its relation.
    events_name: (Option<String>, String),
}

/// How a session with the slot ended.
enum Ended {
    /// The relay asked to stop, or is gone.
    Stopped,
    /// Another process holds the slot; this one never became active.
    Busy,
}

/// Why a session failed, and whether it had reported `Active` (then `Inactive` is owed).
struct Failed {
    active: bool,
    message: String,
}

impl PgSource {
    pub fn new(endpoint: &PgEndpoint, config: PgSourceConfig) -> Result<PgSource, PgSourceConfigError> {
        let slot_ok = !config.slot.is_empty()
            && config.slot.len() <= 63
            && config.slot.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !slot_ok {
            return Err(PgSourceConfigError::BadSlot(config.slot.clone()));
        }
        let parsed = endpoint.config();
        let tcp = |h: &tokio_postgres::config::Host| matches!(h, tokio_postgres::config::Host::Tcp(_));
        if !parsed.get_hosts().iter().any(tcp) {
            return Err(PgSourceConfigError::NoTcpHost);
        }
        let user = parsed.get_user().unwrap_or("postgres").to_owned();
        let password = parsed.get_password().map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default();
        let database = parsed.get_dbname().unwrap_or(&user).to_owned();
        let replication = ReplicationConfig::unix(
            "",
            SOCKET_PORT,
            user,
            password,
            database,
            config.slot.clone(),
            config.publication.clone(),
        )
        .with_status_interval(config.status_interval)
        .with_wakeup_interval(Duration::from_secs(5))
        .with_application_name(format!("twoplane-relay {}", config.slot));
        let events_name = match config.tables.events.rsplit_once('.') {
            Some((schema, name)) => (Some(schema.to_owned()), name.to_owned()),
            None => (None, config.tables.events.clone()),
        };
        Ok(PgSource { endpoint: endpoint.clone(), replication, config, events_name })
    }

    /// Creates what is missing (state table, publication, slot) and says whether the slot was
    /// created (or re-created) here.
    async fn prepare(&self, db: &Client) -> Result<(), String> {
        db.batch_execute(&state_table_ddl(&self.config.state_table)).await.or_else(ignore_duplicate)?;
        let has_publication = !db
            .query("SELECT 1 FROM pg_publication WHERE pubname = $1", &[&self.config.publication])
            .await
            .map_err(|e| db_message(&e))?
            .is_empty();
        if !has_publication {
            db.batch_execute(&format!(
                "CREATE PUBLICATION {} FOR TABLE {} WITH (publish = 'insert')",
                quote_ident(&self.config.publication),
                self.config.tables.events_sql()
            ))
            .await
            .or_else(ignore_duplicate)?;
        }
        let slot = db
            .query("SELECT plugin, wal_status FROM pg_replication_slots WHERE slot_name = $1", &[&self.config.slot])
            .await
            .map_err(|e| db_message(&e))?;
        let lost = match slot.first() {
            None => false,
            Some(row) => {
                let plugin: Option<String> = row.get(0);
                if plugin.as_deref() != Some("pgoutput") {
                    return Err(format!("slot {} exists but is not a pgoutput logical slot", self.config.slot));
                }
                row.get::<_, Option<String>>(1).as_deref() == Some("lost")
            }
        };
        if slot.is_empty() || lost {
            // Pending first: if this process dies right after creating the slot, the next one
            // still knows the record must be reconciled.
            self.set_pending(db, true).await?;
            if lost {
                tracing::warn!(slot = %self.config.slot, "replication slot was lost; creating it again");
                db.query("SELECT pg_drop_replication_slot($1)", &[&self.config.slot])
                    .await
                    .map_err(|e| db_message(&e))?;
            }
            match db.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", &[&self.config.slot]).await {
                Ok(_) => tracing::info!(slot = %self.config.slot, "created the replication slot"),
                Err(e) if is_duplicate(&e) => {}
                Err(e) => return Err(db_message(&e)),
            }
        }
        Ok(())
    }

    async fn set_pending(&self, db: &Client, pending: bool) -> Result<(), String> {
        db.execute(
            &format!(
                "INSERT INTO {} (slot_name, reconcile_pending) VALUES ($1, $2) \
                 ON CONFLICT (slot_name) DO UPDATE SET reconcile_pending = EXCLUDED.reconcile_pending",
                quote_qualified(&self.config.state_table)
            ),
            &[&self.config.slot, &pending],
        )
        .await
        .map(|_| ())
        .map_err(|e| db_message(&e))
    }

    /// The flag; a slot without a row (the table was emptied by hand) counts as pending.
    async fn pending(&self, db: &Client) -> Result<bool, String> {
        let rows = db
            .query(
                &format!(
                    "SELECT reconcile_pending FROM {} WHERE slot_name = $1",
                    quote_qualified(&self.config.state_table)
                ),
                &[&self.config.slot],
            )
            .await
            .map_err(|e| db_message(&e))?;
        Ok(rows.first().map(|r| r.get(0)).unwrap_or(true))
    }

    async fn connect_db(&self) -> Result<Client, String> {
        self.endpoint.connect("relay-source").await.map_err(|e| e.to_string())
    }

    fn is_events_relation(&self, rel: &Relation) -> bool {
        rel.name == self.events_name.1 && self.events_name.0.as_ref().is_none_or(|schema| &rel.namespace == schema)
    }

    /// One session: set up, take the slot, stream until stopped or failed.
    async fn session(&self, link: &mut SourceLink, activation: u64) -> Result<Ended, Failed> {
        let inactive = |message: String| Failed { active: false, message };
        let db = self.connect_db().await.map_err(inactive)?;
        self.prepare(&db).await.map_err(inactive)?;

        let server = self.endpoint.connect_stream().await.map_err(|e| inactive(e.to_string()))?;
        // Kept to the end of the session: dropping it closes the replication connection.
        let bridge = Bridge::open(server).map_err(inactive)?;
        let mut replication = self.replication.clone();
        replication.host = bridge.dir().to_string_lossy().into_owned();
        let mut client = ReplicationClient::connect(replication).await.map_err(|e| inactive(e.to_string()))?;
        if let Err(error) = client.wait_started().await {
            if slot_in_use(&error) {
                return Ok(Ended::Busy);
            }
            return Err(inactive(error.to_string()));
        }
        // The slot is ours from here: read the flag only now, so a concurrent re-creation by a
        // process that held it before is seen.
        let fresh = self.pending(&db).await.map_err(inactive)?;
        tracing::info!(slot = %self.config.slot, fresh, "holding the replication slot");
        if !link.send(SourceEvent::Active { activation, fresh }).await {
            client.stop();
            return Ok(Ended::Stopped);
        }
        let failed = |message: String| Failed { active: true, message };

        let mut confirmed = *link.acknowledged.borrow_and_update();
        let mut reconciled_pending = fresh;
        let mut relations: HashMap<u32, Option<Columns>> = HashMap::new();
        // Rows of the transaction being received (None between transactions).
        let mut tx: Option<Vec<RecordRow>> = None;
        let stop = link.stop.clone();
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => {
                    client.stop();
                    let _ = tokio::time::timeout(Duration::from_secs(5), client.shutdown()).await;
                    return Ok(Ended::Stopped);
                }
                changed = link.acknowledged.changed() => {
                    if changed.is_err() {
                        client.stop();
                        return Ok(Ended::Stopped);
                    }
                    let lsn = *link.acknowledged.borrow_and_update();
                    if lsn > confirmed {
                        confirmed = lsn;
                        client.update_applied_lsn(pgwire_replication::Lsn::from_u64(lsn.0));
                    }
                }
                changed = link.reconciled.changed() => {
                    if changed.is_err() {
                        client.stop();
                        return Ok(Ended::Stopped);
                    }
                    let done = *link.reconciled.borrow_and_update();
                    if reconciled_pending && done == activation {
                        self.set_pending(&db, false).await.map_err(failed)?;
                        reconciled_pending = false;
                        tracing::info!(slot = %self.config.slot, "reconciliation recorded; the slot is no longer fresh");
                    }
                }
                event = client.recv() => {
                    let event = match event {
                        Ok(Some(event)) => event,
                        Ok(None) => return Err(failed("the replication stream ended".into())),
                        Err(error) => return Err(failed(error.to_string())),
                    };
                    let out = match event {
                        ReplicationEvent::Begin { .. } => {
                            tx = Some(Vec::new());
                            None
                        }
                        ReplicationEvent::Commit { end_lsn, .. } => {
                            let rows = tx.take().unwrap_or_default();
                            let end_lsn = Lsn(end_lsn.as_u64());
                            Some(if rows.is_empty() {
                                SourceEvent::Keepalive(end_lsn)
                            } else {
                                SourceEvent::Tx(CommittedTx { end_lsn, rows })
                            })
                        }
                        ReplicationEvent::XLogData { data, .. } => {
                            self.change(&data, &mut relations, tx.as_mut()).map_err(failed)?;
                            None
                        }
                        ReplicationEvent::KeepAlive { wal_end, .. } if tx.is_none() => {
                            Some(SourceEvent::Keepalive(Lsn(wal_end.as_u64())))
                        }
                        _ => None,
                    };
                    if let Some(out) = out {
                        if !link.send(out).await {
                            client.stop();
                            return Ok(Ended::Stopped);
                        }
                    }
                }
            }
        }
    }

    /// Handles one change message inside (or, for relations, outside) a transaction.
    fn change(
        &self,
        data: &[u8],
        relations: &mut HashMap<u32, Option<Columns>>,
        tx: Option<&mut Vec<RecordRow>>,
    ) -> Result<(), String> {
        match pgoutput::decode(data).map_err(|e| format!("pgoutput: {e}"))? {
            Message::Relation(rel) => {
                let columns = if self.is_events_relation(&rel) { Some(Columns::of(&rel)?) } else { None };
                relations.insert(rel.id, columns);
            }
            Message::Insert { relation, new } => {
                let columns = match relations.get(&relation) {
                    Some(Some(columns)) => columns,
                    Some(None) => return Ok(()), // another table in a wider publication
                    None => return Err(format!("insert into relation {relation} before its description")),
                };
                let tx = tx.ok_or("insert outside a transaction")?;
                tx.push(columns.row(&new.0)?);
            }
            // Updates and deletes do not change what was committed to a log; truncates, types,
            // origins and messages carry no rows.
            _ => {}
        }
        Ok(())
    }
}

/// Where each record column sits in the events table's tuples.
#[derive(Clone, Debug)]
struct Columns {
    tenant_id: usize,
    session_id: usize,
    seq: usize,
    generation: usize,
    body: usize,
}

impl Columns {
    fn of(rel: &Relation) -> Result<Columns, String> {
        let find = |name: &str| {
            rel.column_index(name).ok_or_else(|| format!("table {}.{} has no column {name}", rel.namespace, rel.name))
        };
        Ok(Columns {
            tenant_id: find("tenant_id")?,
            session_id: find("session_id")?,
            seq: find("seq")?,
            generation: find("generation")?,
            body: find("body")?,
        })
    }

    fn row(&self, values: &[Value<'_>]) -> Result<RecordRow, String> {
        let text = |index: usize, name: &str| -> Result<&str, String> {
            match values.get(index) {
                Some(Value::Text(bytes)) => {
                    std::str::from_utf8(bytes).map_err(|_| format!("column {name} is not UTF-8"))
                }
                Some(Value::Null) => Err(format!("column {name} is NULL")),
                Some(_) => Err(format!("column {name} is not in text format")),
                None => Err(format!("the row has no column {name}")),
            }
        };
        let number = |index: usize, name: &str| -> Result<u64, String> {
            let t = text(index, name)?;
            t.parse::<u64>().map_err(|_| format!("column {name} is not a non-negative integer: {t:?}"))
        };
        Ok(RecordRow {
            tenant_id: text(self.tenant_id, "tenant_id")?.into(),
            session_id: text(self.session_id, "session_id")?.into(),
            seq: number(self.seq, "seq")?,
            generation: number(self.generation, "generation")?,
            body: text(self.body, "body")?.into(),
        })
    }
}

fn is_duplicate(error: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    error.code().is_some_and(|c| *c == SqlState::DUPLICATE_OBJECT || *c == SqlState::UNIQUE_VIOLATION)
}

/// A concurrent `CREATE` by another relay process is success.
fn ignore_duplicate(error: tokio_postgres::Error) -> Result<(), String> {
    if is_duplicate(&error) {
        Ok(())
    } else {
        Err(db_message(&error))
    }
}

/// PostgreSQL refuses a slot another session streams from with SQLSTATE 55006.
fn slot_in_use(error: &PgWireError) -> bool {
    match error {
        PgWireError::Server(message) => message.contains("55006") || message.contains("is active for PID"),
        _ => false,
    }
}

#[async_trait]
impl ChangeSource for PgSource {
    async fn run(&mut self, mut link: SourceLink) {
        let mut activation = 0u64;
        let mut busy_logged = false;
        while !link.is_stopped() {
            activation += 1;
            match self.session(&mut link, activation).await {
                Ok(Ended::Stopped) => return,
                Ok(Ended::Busy) => {
                    if !busy_logged {
                        tracing::info!(slot = %self.config.slot, "another process holds the replication slot; waiting");
                        busy_logged = true;
                    }
                }
                Err(Failed { active, message }) => {
                    busy_logged = false;
                    tracing::warn!(slot = %self.config.slot, error = %message, "replication session failed; retrying");
                    if active && !link.send(SourceEvent::Inactive { error: Some(message) }).await {
                        return;
                    }
                }
            }
            tokio::select! {
                _ = link.stopped() => return,
                _ = tokio::time::sleep(RETRY) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgoutput::RelationColumn;

    fn relation(names: &[&str]) -> Relation {
        Relation {
            id: 1,
            namespace: "public".into(),
            name: "twoplane_relay_events".into(),
            replica_identity: b'd',
            columns: names
                .iter()
                .map(|n| RelationColumn { flags: 0, name: (*n).into(), type_oid: 25, type_modifier: -1 })
                .collect(),
        }
    }

    #[test]
    fn rows_map_by_column_name_not_position() {
        let cols = Columns::of(&relation(&["body", "seq", "extra", "generation", "session_id", "tenant_id"])).unwrap();
        let row = cols
            .row(&[
                Value::Text(br#"{"a": 1}"#),
                Value::Text(b"7"),
                Value::Null,
                Value::Text(b"2"),
                Value::Text(b"s"),
                Value::Text(b"t"),
            ])
            .unwrap();
        assert_eq!((&*row.tenant_id, &*row.session_id, row.seq, row.generation), ("t", "s", 7, 2));
        assert_eq!(&*row.body, r#"{"a": 1}"#);
        assert!(Columns::of(&relation(&["tenant_id", "session_id", "seq", "generation"])).is_err());
        let bad = cols.row(&[
            Value::Text(b"{}"),
            Value::Text(b"-1"),
            Value::Null,
            Value::Text(b"2"),
            Value::Text(b"s"),
            Value::Text(b"t"),
        ]);
        assert!(bad.unwrap_err().contains("seq"));
        assert!(cols.row(&[Value::Null]).is_err());
    }

    #[test]
    fn settings_are_checked() {
        let endpoint = |url: &str| PgEndpoint::parse(url, None).unwrap();
        let ok = PgSource::new(&endpoint("postgresql://u:pw@127.0.0.1:5433/db"), PgSourceConfig::default()).unwrap();
        assert_eq!(ok.replication.database, "db");
        assert_eq!((ok.replication.user.as_str(), ok.replication.password.as_str()), ("u", "pw"));
        let bad_slot = PgSourceConfig { slot: "Bad-Slot".into(), ..PgSourceConfig::default() };
        let err = PgSource::new(&endpoint("postgresql://h/db"), bad_slot).err();
        assert!(matches!(err, Some(PgSourceConfigError::BadSlot(_))));
        let socket_only = PgSource::new(&endpoint("host=/run/postgresql dbname=db"), PgSourceConfig::default()).err();
        assert!(matches!(socket_only, Some(PgSourceConfigError::NoTcpHost)));
    }
}
