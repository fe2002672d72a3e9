//! The relay core: committed transactions from a [`ChangeSource`] into per-session logs of a
//! [`LogStore`], exactly once and in order per session.
//!
//! - **Input.** One task runs the source; another (the driver) takes its events in order. A
//!   transaction's rows are queued per session before any pump runs, so they go out in as few
//!   appends as fit.
//! - **Pumps** (`pump`): one task per session with queued rows; appends with `match_seq` so a
//!   replayed row is never written twice, re-reads gaps from the record, and retries failures
//!   with backoff unless the rows became obsolete (tenant reset or deleted).
//! - **Acknowledgement** (`state`): the end of a transaction once its rows and all earlier
//!   ones are in their logs; a keepalive moves it on only when nothing is pending.
//! - **Reconciliation** (`reconcile`): on a fresh source, every session's log is brought up to
//!   the record's head before the source is told it is reconciled.
//! - **Loss of the source**: everything queued is dropped; the source replays it.
//!
//! The relay never writes the record and never deletes from a log.

mod basins;
mod pump;
mod reconcile;
mod shared;
mod state;

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};
use twoplane_runtime::lock;

use crate::options::{RelayOptions, RelayStatus};
use crate::types::{ChangeSource, CommittedTx, LogStore, Lsn, RecordReader, SourceEvent, SourceLink};
use basins::Basins;
use shared::Shared;
use state::{publish_ack, Owner, State};

impl Shared {
    fn on_event(self: &Arc<Self>, event: SourceEvent) {
        match event {
            SourceEvent::Tx(tx) => self.on_tx(tx),
            SourceEvent::Keepalive(lsn) => {
                let mut state = self.lock();
                // Caught up: let the source move past changes that hold none of our rows.
                if state.pending_txs() == 0 {
                    let moved = state.confirm(lsn);
                    drop(state);
                    publish_ack(&self.acknowledged, moved);
                }
            }
            SourceEvent::Active { activation, fresh } => {
                let epoch = {
                    let mut state = self.lock();
                    state.active = true;
                    state.last_error = None; // the source is back
                    state.drop_queued();
                    state.epoch
                };
                info!(activation, fresh, "relay holds the change source");
                if fresh {
                    let task = tokio::spawn(reconcile::run(self.clone(), epoch, activation));
                    let mut tasks = lock(&self.reconciles);
                    tasks.retain(|task| !task.is_finished());
                    tasks.push(task);
                }
                self.changed.notify_waiters();
            }
            SourceEvent::Inactive { error } => {
                let mut state = self.lock();
                state.active = false;
                state.drop_queued();
                if let Some(error) = error {
                    warn!(error = %error, "relay lost its change source; it will replay what was not acknowledged");
                    state.last_error = Some(error);
                }
                drop(state);
                self.changed.notify_waiters();
            }
        }
    }

    fn on_tx(self: &Arc<Self>, tx: CommittedTx) {
        let mut state = self.lock();
        if state.stopped {
            return;
        }
        let id = state.push_tx(tx.end_lsn, tx.rows.len());
        for row in tx.rows {
            if let Some(key) = state.enqueue(row, Owner::Tx(id)) {
                pump::spawn(self, &mut state, key);
            }
        }
        // A transaction without rows of ours is done at once.
        let moved = state.advance();
        let idle = state.is_idle();
        drop(state);
        publish_ack(&self.acknowledged, moved);
        if idle {
            self.changed.notify_waiters();
        }
    }
}

/// A running relay. Dropping it without [`Relay::stop`] leaves its tasks running until the
/// runtime ends.
pub struct Relay {
    shared: Arc<Shared>,
    source: JoinHandle<()>,
    driver: JoinHandle<()>,
}

impl Relay {
    /// Starts relaying on the current tokio runtime: runs `source` in a task and pumps what it
    /// delivers into `log`, reading gaps back from `record`.
    pub fn start(
        mut source: Box<dyn ChangeSource>,
        record: Arc<dyn RecordReader>,
        log: Arc<dyn LogStore>,
        options: RelayOptions,
    ) -> Relay {
        let (events_tx, mut events) = mpsc::channel(options.source_queue.max(1));
        let (acknowledged, acknowledged_rx) = watch::channel(Lsn::ZERO);
        let (reconciled, reconciled_rx) = watch::channel(0);
        let stop = CancellationToken::new();
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new()),
            record,
            log,
            options,
            acknowledged,
            reconciled,
            stop: stop.clone(),
            _stop_on_drop: stop.clone().drop_guard(),
            changed: Notify::new(),
            basins: Basins::default(),
            reconciles: Mutex::new(Vec::new()),
        });
        let link = SourceLink { events: events_tx, acknowledged: acknowledged_rx, reconciled: reconciled_rx, stop };
        let source = tokio::spawn(async move { source.run(link).await });
        let driven = shared.clone();
        let stopping = shared.stop.clone();
        let driver = tokio::spawn(async move {
            let max_pending = driven.options.max_pending_rows.max(1);
            loop {
                if driven.lock().pending_rows >= max_pending {
                    // Backpressure: the source keeps what is not taken yet.
                    debug!(max_pending, "relay input paused until queued rows are done");
                    driven.wait_until(|state| state.stopped || state.pending_rows < max_pending).await;
                }
                tokio::select! {
                    biased;
                    () = stopping.cancelled() => break,
                    event = events.recv() => match event {
                        Some(event) => driven.on_event(event),
                        None => break,
                    },
                }
            }
            debug!("relay driver ended");
        });
        Relay { shared, source, driver }
    }

    /// A snapshot of what the relay is doing.
    pub fn status(&self) -> RelayStatus {
        let state = self.shared.lock();
        RelayStatus {
            active: state.active,
            pending_txs: state.pending_txs(),
            pending_rows: state.pending_rows,
            confirmed: state.confirmed,
            reconciliations: state.reconciliations,
            last_error: state.last_error.clone(),
        }
    }

    /// Resolves once nothing is pending: every delivered transaction acknowledged and every
    /// queued row in its log (or obsolete); also when the relay stops.
    pub async fn idle(&self) {
        self.shared.wait_until(|state| state.stopped || state.is_idle()).await;
    }

    /// Stops gracefully: the source releases what it holds, pumps and reconciliation stop after
    /// their current request (nothing is written after this returns, basins included), backoff
    /// waits are cut short.
    pub async fn stop(self) {
        {
            let mut state = self.shared.lock();
            state.stopped = true;
            // Parked pumps wake, see the relay stopped, and exit.
            for queue in state.sessions.values() {
                if queue.pump == state::Pump::Parked {
                    queue.wake.notify_one();
                }
            }
        }
        self.shared.stop.cancel();
        // Wakes the driver if it waits for room (backpressure), and every other waiter.
        self.shared.changed.notify_waiters();
        let _ = self.source.await;
        let _ = self.driver.await;
        self.shared.wait_until(|state| state.pumps == 0).await;
        let reconciles = std::mem::take(&mut *lock(&self.shared.reconciles));
        for task in reconciles {
            let _ = task.await;
        }
        info!("relay stopped");
    }
}
