//! A PostgreSQL connection that opens on first use and opens again after it broke.
//!
//! Guarantees: one connection at a time, used under a lock, so statements sent through it never
//! interleave; a connection whose socket closed is dropped on the next [`PgClient::lock`] and a
//! new one is opened then (nothing is retried here: the caller decides, and twoplane's
//! statements are idempotent); statements prepared through [`PgSession::prepare_cached`] are kept
//! per connection and forgotten with it. No TLS: put a TLS-terminating proxy or a local socket in
//! front of remote servers.

use std::collections::HashMap;

use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};
use tokio_postgres::{Client, NoTls, Statement};

/// A reconnecting PostgreSQL client (see the module guarantees).
pub struct PgClient {
    url: String,
    /// Names this connection in the logs ("checkpoints", "sweeper", ...).
    name: &'static str,
    slot: Mutex<Option<PgSession>>,
}

/// One open connection and the statements prepared on it.
pub struct PgSession {
    client: Client,
    prepared: HashMap<String, Statement>,
}

impl PgClient {
    /// Does not connect yet: the first [`lock`](PgClient::lock) does.
    pub fn new(url: impl Into<String>, name: &'static str) -> PgClient {
        PgClient { url: url.into(), name, slot: Mutex::new(None) }
    }

    /// The connection, opened (again) when there is none or the last one closed.
    pub async fn lock(&self) -> Result<MappedMutexGuard<'_, PgSession>, tokio_postgres::Error> {
        let mut slot = self.slot.lock().await;
        let session = match slot.take() {
            Some(open) if !open.client.is_closed() => open,
            lost => {
                if lost.is_some() {
                    tracing::warn!(connection = self.name, "postgres connection lost; reconnecting");
                }
                self.connect().await?
            }
        };
        Ok(MutexGuard::map(slot, |slot| slot.insert(session)))
    }

    async fn connect(&self) -> Result<PgSession, tokio_postgres::Error> {
        let (client, connection) = tokio_postgres::connect(&self.url, NoTls).await?;
        let name = self.name;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(connection = name, error = %e, "postgres connection ended");
            }
        });
        Ok(PgSession { client, prepared: HashMap::new() })
    }
}

impl PgSession {
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Mutable, for transactions.
    pub fn client_mut(&mut self) -> &mut Client {
        &mut self.client
    }

    /// `sql` prepared on this connection, once.
    pub async fn prepare_cached(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let prepared = self.client.prepare(sql).await?;
        self.prepared.insert(sql.to_owned(), prepared.clone());
        Ok(prepared)
    }
}
