//! What the relay's tasks share: its state under one lock, the record and the log, the stop
//! signal, and the questions every task asks of the record (a generation's rows, whether a
//! generation is obsolete, whether a basin may be appended to).
//!
//! Guarantees: nothing here spawns or drives a task, so the pumps, the reconciliation and the
//! driver all depend on this module and it depends on none of them.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::debug;
use twoplane_runtime::{lock, Backoff};

use super::basins::{Basin, Basins};
use super::state::{SessionKey, State};
use crate::options::RelayOptions;
use crate::types::{LogError, LogStore, Lsn, RecordReader, RecordRow, SessionRange};

/// What the relay's tasks share.
pub(crate) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) record: Arc<dyn RecordReader>,
    pub(super) log: Arc<dyn LogStore>,
    pub(super) options: RelayOptions,
    pub(super) acknowledged: watch::Sender<Lsn>,
    pub(super) reconciled: watch::Sender<u64>,
    /// Cancelled by `stop`: the source, the driver, backoff waits and reconciliations end on it.
    pub(super) stop: CancellationToken,
    /// Cancels `stop` when the relay's shared state goes, so a source never outlives it (what
    /// a dropped watch sender did before).
    pub(super) _stop_on_drop: DropGuard,
    /// Woken when what waiters wait for may have come true: idle, a reconciliation's rows all
    /// settled, no pump left, an activation or loss, stop.
    pub(super) changed: Notify,
    pub(super) basins: Basins,
    /// Reconciliation tasks, awaited by `stop` (they may create basins).
    pub(super) reconciles: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Waits until `ready` holds for the state (checked under the lock after every change).
    pub(super) async fn wait_until(&self, ready: impl Fn(&State) -> bool) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if ready(&self.lock()) {
                return;
            }
            notified.await;
        }
    }

    /// Creates the basin if missing and tells whether its generation is still current; a basin
    /// found obsolete is never appended to again (see `basins`).
    pub(super) async fn ensure_basin(&self, tenant_id: &str, generation: u64, basin: &Basin) -> Result<bool, LogError> {
        basin
            .ensure(async {
                self.log.ensure_basin(&basin.name).await?;
                Ok(!self.is_obsolete(tenant_id, generation).await)
            })
            .await
    }

    /// The relay runs and activation `epoch` is still the current one.
    pub(super) fn is_current(&self, epoch: u64) -> bool {
        let state = self.lock();
        !state.stopped && state.epoch == epoch
    }

    /// The schedule a failed append or reconciliation pass retries on: doubling from
    /// `retry_min`, at most `retry_max`, for as long as the relay runs.
    pub(super) fn retry_backoff(&self) -> Backoff {
        Backoff::new(self.options.retry_min, u32::MAX).with_cap(self.options.retry_max)
    }

    /// Rows `from..to` of a session that belong to `generation`.
    pub(super) async fn read_generation(
        &self,
        key: &SessionKey,
        generation: u64,
        from: u64,
        to: u64,
    ) -> Result<Vec<RecordRow>, String> {
        let mut rows = self
            .record
            .read_range(SessionRange::new(&key.0, &key.1, from, to))
            .await
            .map_err(|error| error.to_string())?;
        rows.retain(|row| row.generation == generation);
        Ok(rows)
    }

    /// The tenant is gone or its generation moved past `generation`. A record that cannot be
    /// asked counts as "not obsolete": the rows are kept and retried.
    pub(super) async fn is_obsolete(&self, tenant_id: &str, generation: u64) -> bool {
        match self.record.generation(tenant_id).await {
            Ok(None) => true,
            Ok(Some(current)) => current > generation,
            Err(error) => {
                debug!(tenant = %tenant_id, error = %error, "relay could not read a tenant's generation");
                false
            }
        }
    }
}

/// The rows are exactly seqs `from..to`, in order.
pub(super) fn is_exact_range(rows: &[RecordRow], from: u64, to: u64) -> bool {
    rows.len() as u64 == to - from && rows.iter().zip(from..).all(|(row, seq)| row.seq == seq)
}
