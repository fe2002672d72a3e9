//! twoplane-relay: moves every committed row of a record (tables an application writes) into a
//! per-session append-only log, exactly once and in order per session, without ever writing
//! the record or deleting from a log.
//!
//! - [`types`]: the contracts: rows, the change source (committed transactions in commit order,
//!   kept until acknowledged), the record reader and the log store (conditional appends).
//! - [`names`]: the basin of a (tenant, generation) and the stream of a session.
//! - [`options`]: settings and the status snapshot.
//! - `memory` (feature `testing`): in-memory record (with a replication slot), change source
//!   and log store, with fault hooks; for tests, examples and simulations, not in the shipped
//!   crate.
//! - [`pgoutput`]: decoding of PostgreSQL's logical replication messages (pure, fuzzed).
//! - [`pg_source`], [`pg_record`] (feature `postgres`): the change source over a PostgreSQL
//!   logical replication slot, and the record reader; [`schema`]: the relay's tables (the
//!   record's documented shape and the state table), each described once; `pg_bridge`
//!   (feature `postgres`): the replication client's connection, made over TLS by `twoplane-pg`
//!   and handed to it through a private Unix socket.
//! - [`s2`] (feature `s2`): the log store over S2's REST API (s2-lite or the hosted service).
//! - [`redis_log`] (feature `redis`): the log store on Redis Streams, conditional appends in Lua.
//! - [`relay`]: the core: [`Relay::start`]`(source, record, log, options)` on a tokio runtime,
//!   then `status()`, `idle()` and `stop()`.

#[cfg(feature = "testing")]
pub mod memory;
pub mod names;
pub mod options;
pub mod pgoutput;
pub mod relay;
pub mod types;

#[cfg(feature = "postgres")]
mod pg_bridge;
#[cfg(feature = "postgres")]
pub mod pg_record;
#[cfg(feature = "postgres")]
pub mod pg_source;
#[cfg(feature = "redis")]
pub mod redis_log;
#[cfg(feature = "s2")]
pub mod s2;
#[cfg(feature = "postgres")]
pub mod schema;

pub use names::{session_stream, BasinName, BasinNameError};
pub use options::{RelayOptions, RelayStatus};
pub use relay::Relay;
pub use types::{
    Append, ChangeSource, CommittedTx, LogError, LogHead, LogStore, LogTarget, Lsn, LsnParseError, RecordError,
    RecordReader, RecordRow, SessionRange, SourceEvent, SourceLink,
};
