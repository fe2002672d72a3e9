//! twoplane-relay: moves every committed row of a record (tables an application writes) into a
//! per-session append-only log, exactly once and in order per session, without ever writing
//! the record or deleting from a log.
//!
//! - [`types`]: the contracts: rows, the change source (committed transactions in commit order,
//!   kept until acknowledged), the record reader and the log store (conditional appends).
//! - [`names`]: the basin of a (tenant, generation) and the stream of a session.
//! - [`options`]: settings and the status snapshot.
//!
//! The relay itself is started with `Relay::start(source, record, log, options)` on a tokio
//! runtime and offers `status()`, `idle()` and `stop()`.

pub mod names;
pub mod options;
pub mod types;

pub use names::{session_stream, BasinName, BasinNameError};
pub use options::{RelayOptions, RelayStatus};
pub use types::{
    Append, ChangeSource, CommittedTx, LogError, LogHead, LogStore, Lsn, LsnParseError, RecordError, RecordReader,
    RecordRow, SourceEvent, SourceLink,
};
