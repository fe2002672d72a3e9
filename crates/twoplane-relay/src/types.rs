//! The relay's contracts: the rows it moves, the change source it reads committed transactions
//! from, the record it reads rows back from, and the log store it appends to.
//!
//! **Split of the work.** The relay core and the in-memory implementations live in this crate
//! (`relay`, `memory`); the PostgreSQL change source (pgoutput over logical replication), the
//! PostgreSQL record reader and the S2 log store implement [`ChangeSource`], [`RecordReader`] and
//! [`LogStore`] against exactly these definitions. A change to a trait after it was first
//! committed is kept small and listed here with its date and time (UTC):
//!
//! - (none yet)
//!
//! **Numbering.** A session's rows carry dense sequence numbers from 0 (`seq`), and the log of a
//! session holds row `seq` at log position `seq`: the log's tail (the position of its next
//! record) is the number of rows it holds, and an append states the tail it expects
//! (`match_seq`), so a replayed row can never be written twice.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::names::BasinName;

/// A position in the source's change stream (PostgreSQL's LSN). Shown as PostgreSQL shows it:
/// the high and low 32 bits in upper-case hex, `16/B374D848`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lsn(pub u64);

impl Lsn {
    /// The start of the stream; "nothing acknowledged yet".
    pub const ZERO: Lsn = Lsn(0);
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

/// Why a text is not an LSN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an LSN (expected two hex numbers like 16/B374D848): {0:?}")]
pub struct LsnParseError(pub String);

impl FromStr for Lsn {
    type Err = LsnParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || LsnParseError(text.to_owned());
        let (hi, lo) = text.split_once('/').ok_or_else(bad)?;
        let hi = u32::from_str_radix(hi, 16).map_err(|_| bad())?;
        let lo = u32::from_str_radix(lo, 16).map_err(|_| bad())?;
        Ok(Lsn((u64::from(hi) << 32) | u64::from(lo)))
    }
}

impl serde::Serialize for Lsn {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One committed row of the record: an event of a session, and the basin generation of its
/// tenant it belongs to. Cloning is cheap (shared strings), since rows are queued, re-read and
/// re-sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordRow {
    pub tenant_id: Arc<str>,
    pub session_id: Arc<str>,
    /// Dense from 0 within the session; also the row's position in the session's log.
    pub seq: u64,
    /// The tenant's basin generation the row was written under (a reset moves it on).
    pub generation: u64,
    /// The event as JSON text, appended to the log unchanged.
    pub body: Arc<str>,
}

/// One committed transaction's rows, as the source delivers them (in commit order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedTx {
    /// Where the source resumes once this transaction is acknowledged.
    pub end_lsn: Lsn,
    pub rows: Vec<RecordRow>,
}

/// What a change source tells the relay, in order, over [`SourceLink::events`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceEvent {
    /// This process now holds the source. `activation` is unique among the activations of one
    /// [`ChangeSource::run`] (it is echoed back through [`SourceLink::reconciled`]). `fresh` while
    /// the source's reconcile-pending flag is set: it was created (or re-created after being
    /// lost) and cannot replay rows committed before that, so the relay must compare the record
    /// with the logs and then mark the activation reconciled.
    Active { activation: u64, fresh: bool },
    /// A whole committed transaction (only sent once its commit was seen). After every
    /// `Active`, first the retained (unacknowledged) transactions again, then new ones.
    Tx(CommittedTx),
    /// The source may move to `lsn` if the relay has nothing pending. The source guarantees
    /// that every transaction ending at or before `lsn` was already sent as `Tx`, and it never
    /// sends a position past the start of a transaction it has begun to receive but not yet
    /// sent. The relay answers through [`SourceLink::acknowledged`] (only when, at the moment it
    /// handles this event, every transaction sent before it is done).
    Keepalive(Lsn),
    /// The source was lost (connection dropped, slot dropped, taken by another process). The
    /// relay drops everything queued, because the source replays what was not acknowledged.
    /// The source keeps trying to become active again until stopped.
    Inactive { error: Option<String> },
}

/// The two-way link between the relay and its change source.
///
/// The source pushes [`SourceEvent`]s into `events` (bounded: a slow relay slows the source) and
/// follows what the relay writes (two watches and a stop token):
/// - `acknowledged`: every transaction ending at or before this position is in its logs. The
///   source confirms it to its server, forward only (a value at or below its confirmed position
///   is ignored); it may forget what it retains up to there.
/// - `reconciled`: the latest activation whose reconciliation completed. When it equals the
///   source's current activation, the source clears its reconcile-pending flag (durably, so a
///   crash before this point makes the next process reconcile again). Other values are ignored.
/// - `stop`: cancelled when the relay stops; the source releases what it holds and returns.
#[derive(Debug)]
pub struct SourceLink {
    pub events: mpsc::Sender<SourceEvent>,
    pub acknowledged: watch::Receiver<Lsn>,
    pub reconciled: watch::Receiver<u64>,
    pub stop: CancellationToken,
}

impl SourceLink {
    /// True once the relay asked the source to stop.
    pub fn is_stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Resolves once the relay asks the source to stop (or the relay is gone: it cancels the
    /// token when dropped).
    pub async fn stopped(&mut self) {
        self.stop.cancelled().await
    }

    /// Sends an event; false when the relay is gone (the source should return).
    pub async fn send(&self, event: SourceEvent) -> bool {
        self.events.send(event).await.is_ok()
    }
}

/// Where committed record rows come from, in commit order, kept until acknowledged: a
/// transaction not acknowledged before a crash or disconnect is delivered again.
#[async_trait]
pub trait ChangeSource: Send + 'static {
    /// Runs until `link.stop` turns true (or the relay drops `link.events`): keeps trying to take
    /// the source (another process may hold it), and while holding it sends `Active`, the
    /// retained transactions, new ones and keepalives; sends `Inactive` when it loses it and
    /// tries again. Errors are reported through `Inactive`, never by returning.
    async fn run(&mut self, link: SourceLink);
}

/// Why the record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The database could not be reached or the query failed; worth retrying.
    #[error("record unavailable: {0}")]
    Unavailable(String),
    /// The record holds something the relay cannot use (a body that is not JSON, a negative seq).
    #[error("record holds an invalid row: {0}")]
    Invalid(String),
}

/// A session's log head in the record: `head` is the next seq to allocate (the number of rows),
/// and `generation` the generation of its newest row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogHead {
    pub tenant_id: Arc<str>,
    pub session_id: Arc<str>,
    pub generation: u64,
    pub head: u64,
}

/// Rows `from..to` of one session of one tenant: what [`RecordReader::read_range`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionRange<'a> {
    pub tenant_id: &'a str,
    pub session_id: &'a str,
    pub from: u64,
    pub to: u64,
}

impl<'a> SessionRange<'a> {
    pub fn new(tenant_id: &'a str, session_id: &'a str, from: u64, to: u64) -> SessionRange<'a> {
        SessionRange { tenant_id, session_id, from, to }
    }
}

/// Where [`LogStore::append`] lands: `stream` of `basin`, if and only if its tail is `match_seq`.
#[derive(Clone, Copy, Debug)]
pub struct LogTarget<'a> {
    pub basin: &'a BasinName,
    pub stream: &'a str,
    pub match_seq: u64,
}

impl<'a> LogTarget<'a> {
    pub fn new(basin: &'a BasinName, stream: &'a str, match_seq: u64) -> LogTarget<'a> {
        LogTarget { basin, stream, match_seq }
    }
}

/// Reads the record back (to fill gaps in a log, and to reconcile after a fresh start).
#[async_trait]
pub trait RecordReader: Send + Sync + 'static {
    /// Rows `from..to` of a session in seq order (fewer when the record no longer has some).
    async fn read_range(&self, range: SessionRange<'_>) -> Result<Vec<RecordRow>, RecordError>;

    /// Heads of the sessions with at least one row, strictly after `after` (a `(tenant_id,
    /// session_id)` pair) in byte-wise order of tenant id then session id (PostgreSQL: `COLLATE
    /// "C"`), at most `limit` of them.
    async fn heads(&self, after: Option<(&str, &str)>, limit: usize) -> Result<Vec<LogHead>, RecordError>;

    /// The tenant's current basin generation; `None` when the tenant is gone.
    async fn generation(&self, tenant_id: &str) -> Result<Option<u64>, RecordError>;
}

/// What a conditional append did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Append {
    /// The records are now at positions `start..end` (`start` was the expected tail).
    Appended { start: u64, end: u64 },
    /// The log's tail was not the expected one; nothing was written.
    TailMismatch { tail: u64 },
}

/// Why a log store call failed. The relay treats every kind the same way (check whether the
/// rows became obsolete, ensure the basin, retry with backoff); the kinds are for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// The basin does not exist (never created, or lost).
    #[error("basin {0} does not exist")]
    BasinMissing(String),
    /// The store could not be reached, timed out, or failed on its side; worth retrying.
    #[error("log store unavailable: {0}")]
    Unavailable(String),
    /// The store refused the request (too large, not allowed, malformed).
    #[error("log store rejected the request: {0}")]
    Rejected(String),
}

/// An append-only log store of streams grouped in basins (S2, or Redis Streams).
#[async_trait]
pub trait LogStore: Send + Sync + 'static {
    /// Appends `records` (JSON texts, in order) to `stream` of `basin` if and only if the
    /// stream's tail is `match_seq`, atomically. A stream never written has tail 0.
    async fn append(&self, at: LogTarget<'_>, records: &[Arc<str>]) -> Result<Append, LogError>;

    /// The stream's tail (the number of records it holds); 0 for a stream never written.
    async fn check_tail(&self, basin: &BasinName, stream: &str) -> Result<u64, LogError>;

    /// Creates the basin if it does not exist; succeeds when it already does.
    async fn ensure_basin(&self, basin: &BasinName) -> Result<(), LogError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_reads_and_prints_like_postgres() {
        let lsn: Lsn = "16/B374D848".parse().unwrap();
        assert_eq!(lsn, Lsn((0x16 << 32) | 0xB374_D848));
        assert_eq!(lsn.to_string(), "16/B374D848");
        assert_eq!(Lsn(7).to_string(), "0/7");
        assert!("16-B374".parse::<Lsn>().is_err());
        assert!("x/1".parse::<Lsn>().is_err());
        assert!("1/100000000".parse::<Lsn>().is_err());
    }
}
