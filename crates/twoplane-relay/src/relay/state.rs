//! The relay's bookkeeping, behind one lock: per-session queues, the delivered transactions in
//! commit order, and the acknowledgement rule.
//!
//! Guarantees kept here:
//! - A queued row is settled (marked done) only by a caller that knows the log holds it, or
//!   that it became obsolete; settling decrements the count of the transaction (or the
//!   reconciliation) it came from.
//! - The acknowledged position only moves forward, and only to the end of a transaction whose
//!   rows and every earlier transaction's rows are all settled.
//! - Losing the source drops every queued row and every pending transaction; rows of the lost
//!   activation that a pump settles afterwards no longer count towards anything.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio::sync::{watch, Notify};

use super::basins::{Basin, Basins};
use crate::names::session_stream;
use crate::types::{Lsn, RecordRow};

/// Empty queues kept (with their stream name, basin and parked pump) for sessions that will
/// likely get rows again soon; beyond this many sessions, a queue is dropped when it empties.
pub(crate) const KEEP_IDLE_QUEUES: usize = 4096;

/// A session: (tenant id, session id).
pub(crate) type SessionKey = (Arc<str>, Arc<str>);

/// What a queued row counts towards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The delivered transaction with this id (ids grow by one per delivered transaction).
    Tx(u64),
    /// The reconciliation of this epoch.
    Reconcile(u64),
    /// A gap a pump found and re-read from the record; nothing waits on it.
    Gap,
}

pub(crate) struct Queued {
    pub row: RecordRow,
    pub owner: Owner,
}

/// The pump task of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pump {
    /// None: the next row spawns one.
    Absent,
    /// Working through the queue.
    Busy,
    /// Waiting on `wake` for rows (kept, like the queue, because a session that had rows is
    /// likely to get more; spawning a task per burst costs more than the relay's own work).
    Parked,
}

pub(crate) struct SessionQueue {
    pub rows: Vec<Queued>,
    pub pump: Pump,
    pub wake: Arc<Notify>,
    pub stream: Arc<str>,
    /// The basin of the last generation pumped (looked up once per generation).
    basin: Option<(u64, Arc<Basin>)>,
}

impl SessionQueue {
    fn new(session_id: &str) -> Self {
        SessionQueue {
            rows: Vec::new(),
            pump: Pump::Absent,
            wake: Arc::new(Notify::new()),
            stream: session_stream(session_id).into(),
            basin: None,
        }
    }

    pub fn basin(&mut self, basins: &Basins, tenant_id: &Arc<str>, generation: u64) -> Arc<Basin> {
        match &self.basin {
            Some((g, basin)) if *g == generation => basin.clone(),
            _ => {
                let basin = basins.get(tenant_id, generation);
                self.basin = Some((generation, basin.clone()));
                basin
            }
        }
    }
}

struct PendingTx {
    end_lsn: Lsn,
    remaining: usize,
}

pub(crate) struct State {
    pub stopped: bool,
    pub active: bool,
    /// Moves on with every activation and every loss of the source.
    pub epoch: u64,
    txs: VecDeque<PendingTx>,
    /// The id of `txs[0]`.
    first_tx: u64,
    pub sessions: HashMap<SessionKey, SessionQueue, foldhash::fast::RandomState>,
    pub pending_rows: usize,
    pub confirmed: Option<Lsn>,
    pub reconciliations: u64,
    /// Rows queued by the current epoch's reconciliation and not yet settled.
    pub reconcile_pending: usize,
    pub last_error: Option<String>,
    /// Pump tasks alive.
    pub pumps: usize,
}

impl State {
    pub fn new() -> Self {
        State {
            stopped: false,
            active: false,
            epoch: 0,
            txs: VecDeque::new(),
            first_tx: 0,
            sessions: HashMap::default(),
            pending_rows: 0,
            confirmed: None,
            reconciliations: 0,
            reconcile_pending: 0,
            last_error: None,
            pumps: 0,
        }
    }

    pub fn pending_txs(&self) -> usize {
        self.txs.len()
    }

    pub fn is_idle(&self) -> bool {
        // Rows stay queued until settled (also during their append), so no queued row means no
        // work in flight.
        self.txs.is_empty() && self.pending_rows == 0
    }

    /// Registers a delivered transaction of `rows` rows; returns its id.
    pub fn push_tx(&mut self, end_lsn: Lsn, rows: usize) -> u64 {
        self.txs.push_back(PendingTx { end_lsn, remaining: rows });
        self.first_tx + self.txs.len() as u64 - 1
    }

    /// Queues a row; returns the session when its pump must be spawned (the queue is then marked
    /// busy, and the caller spawns it). A parked pump is woken instead.
    pub fn enqueue(&mut self, row: RecordRow, owner: Owner) -> Option<SessionKey> {
        self.pending_rows += 1;
        let key: SessionKey = (row.tenant_id.clone(), row.session_id.clone());
        if let Some(queue) = self.sessions.get_mut(&key) {
            queue.rows.push(Queued { row, owner });
            return match queue.pump {
                Pump::Busy => None,
                Pump::Parked => {
                    queue.pump = Pump::Busy;
                    // A stored permit if the pump has not started waiting yet: no lost wake-up.
                    queue.wake.notify_one();
                    None
                }
                Pump::Absent => {
                    queue.pump = Pump::Busy;
                    Some(key)
                }
            };
        }
        let mut queue = SessionQueue::new(&row.session_id);
        queue.rows.push(Queued { row, owner });
        queue.pump = Pump::Busy;
        self.sessions.insert(key.clone(), queue);
        Some(key)
    }

    /// Settles the rows of `key`'s queue that `done` accepts, counts them off their owners and
    /// returns the position to acknowledge, if the front of the transaction list moved.
    pub fn settle(&mut self, key: &SessionKey, done: impl Fn(&RecordRow) -> bool) -> Option<Lsn> {
        let queue = self.sessions.get_mut(key)?;
        let (txs, first_tx, epoch) = (&mut self.txs, self.first_tx, self.epoch);
        let mut settled = 0;
        let mut reconciled = 0;
        queue.rows.retain(|queued| {
            if !done(&queued.row) {
                return true;
            }
            settled += 1;
            match queued.owner {
                Owner::Tx(id) => {
                    if let Some(tx) = id.checked_sub(first_tx).and_then(|i| txs.get_mut(i as usize)) {
                        tx.remaining -= 1;
                    }
                }
                Owner::Reconcile(of) if of == epoch => reconciled += 1,
                Owner::Reconcile(_) | Owner::Gap => {}
            }
            false
        });
        self.pending_rows -= settled;
        self.reconcile_pending -= reconciled;
        self.advance()
    }

    /// Pops the settled transactions at the front; returns the newest end position popped when it
    /// is past the confirmed one.
    pub fn advance(&mut self) -> Option<Lsn> {
        let mut newest = None;
        while self.txs.front().is_some_and(|tx| tx.remaining == 0) {
            newest = self.txs.pop_front().map(|tx| tx.end_lsn);
            self.first_tx += 1;
        }
        newest.and_then(|lsn| self.confirm(lsn))
    }

    /// Moves the confirmed position forward to `lsn`; `Some` when it moved.
    pub fn confirm(&mut self, lsn: Lsn) -> Option<Lsn> {
        if self.confirmed.is_some_and(|c| c >= lsn) {
            return None;
        }
        self.confirmed = Some(lsn);
        Some(lsn)
    }

    /// The source was lost (or re-taken): everything queued is dropped, since the source
    /// replays what was not acknowledged. Queues with a pump task stay (empty).
    pub fn drop_queued(&mut self) {
        self.epoch += 1;
        self.first_tx += self.txs.len() as u64;
        self.txs.clear();
        self.sessions.retain(|_, queue| {
            queue.rows.clear();
            queue.pump != Pump::Absent
        });
        self.pending_rows = 0;
        self.reconcile_pending = 0;
    }
}

/// Publishes an acknowledgement to the source (forward only).
pub(crate) fn publish_ack(acknowledged: &watch::Sender<Lsn>, lsn: Option<Lsn>) {
    if let Some(lsn) = lsn {
        acknowledged.send_if_modified(|current| {
            if lsn > *current {
                *current = lsn;
                true
            } else {
                false
            }
        });
    }
}
