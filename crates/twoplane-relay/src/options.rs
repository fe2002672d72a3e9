//! The relay's settings and the status it reports.

use std::time::Duration;

use serde::Serialize;

use crate::types::Lsn;

/// Tuning of a relay. The defaults are the ones the relay is specified with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayOptions {
    /// At most this many records per append.
    pub max_batch_records: usize,
    /// At most this many bytes of JSON body per append (a single larger row still goes alone).
    pub max_batch_bytes: usize,
    /// Sessions per page of record heads during reconciliation.
    pub reconcile_page: usize,
    /// Sessions compared with their logs at once during reconciliation.
    pub reconcile_concurrency: usize,
    /// First wait after a failed append; doubles up to `retry_max`.
    pub retry_min: Duration,
    pub retry_max: Duration,
    /// Events the source may queue ahead of the relay.
    pub source_queue: usize,
    /// With this many rows queued (the log is slow or down), the relay stops taking input until
    /// some are done; the source keeps the rest. Bounds the relay's memory.
    pub max_pending_rows: usize,
}

impl Default for RelayOptions {
    fn default() -> Self {
        RelayOptions {
            max_batch_records: 500,
            max_batch_bytes: 768 * 1024,
            reconcile_page: 500,
            reconcile_concurrency: 8,
            retry_min: Duration::from_millis(50),
            retry_max: Duration::from_secs(2),
            source_queue: 1024,
            max_pending_rows: 100_000,
        }
    }
}

/// A snapshot of what the relay is doing (served as JSON by `twoplane relay`'s `GET /status`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RelayStatus {
    /// This process holds the change source.
    pub active: bool,
    /// Delivered transactions not yet entirely in their logs.
    pub pending_txs: usize,
    /// Rows queued for their logs (delivered or re-read from the record).
    pub pending_rows: usize,
    /// The last position acknowledged to the source.
    pub confirmed: Option<Lsn>,
    /// Reconciliations started since the relay started.
    pub reconciliations: u64,
    /// The last failure (append, record, source), cleared when what failed recovers.
    pub last_error: Option<String>,
}
