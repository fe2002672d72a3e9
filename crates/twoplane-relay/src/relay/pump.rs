//! A session's pump: appends the contiguous rows at the front of its queue, one batch at a time.
//!
//! Guarantees:
//! - Rows of one session are appended in (generation, seq) order, and only with `match_seq` =
//!   the first row's seq, so the log never holds a row twice or out of place.
//! - A row is settled only when the log's answer shows it holds the row (appended, or a tail
//!   past it), or when its generation is obsolete (the tenant was reset or deleted).
//! - After a failure the pump ensures the basin and re-checks the generation (see `basins`), so
//!   a basin it re-creates for a generation that was reset in the meantime is never appended to.
//! - At most one pump task exists per session (the queue's `pump` state). It parks when its
//!   queue is empty (woken by the next row) and exits when the relay stops or too many sessions
//!   are kept.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{debug, warn};

use super::basins::Basin;
use super::shared::{is_exact_range, Shared};
use super::state::publish_ack;
use super::state::{Owner, Pump, SessionKey, State, KEEP_IDLE_QUEUES};
use crate::types::{Append, LogError, LogTarget, RecordRow};

/// One append's worth of rows.
struct Batch {
    generation: u64,
    first: u64,
    bodies: Vec<Arc<str>>,
    basin: Arc<Basin>,
    stream: Arc<str>,
}

/// Why a step failed.
enum Failure {
    Log(LogError),
    Other(String),
}

impl Failure {
    fn message(&self) -> String {
        match self {
            Failure::Log(error) => error.to_string(),
            Failure::Other(message) => message.clone(),
        }
    }
}

/// Starts the pump of session `key`, counted in `state.pumps` until it exits.
pub(super) fn spawn(shared: &Arc<Shared>, state: &mut State, key: SessionKey) {
    state.pumps += 1;
    tokio::spawn(run(shared.clone(), key));
}

pub(super) async fn run(shared: Arc<Shared>, key: SessionKey) {
    let backoff = shared.retry_backoff();
    // Failures since the last success, and the waits among them (a missing basin's first
    // failure is retried at once, without a wait).
    let mut failures = 0u32;
    let mut waits = 0u32;
    // Let the rest of the input that is already there reach the queue first: one append then
    // carries more rows.
    tokio::task::yield_now().await;
    loop {
        let batch = match next_batch(&shared, &key) {
            Next::Batch(batch) => batch,
            Next::Park(wake) => {
                wake.notified().await;
                // As at the start: input already waiting joins this batch.
                tokio::task::yield_now().await;
                continue;
            }
            Next::Exit => return,
        };
        match step(&shared, &key, &batch).await {
            Ok(()) => {
                if failures > 0 {
                    // Recovered: the error this pump reported no longer holds.
                    failures = 0;
                    waits = 0;
                    shared.lock().last_error = None;
                }
            }
            Err(failure) => {
                failures += 1;
                let delay = backoff.delay(waits + 1);
                let message = failure.message();
                shared.lock().last_error = Some(message.clone());
                if settle_if_obsolete(&shared, &key, batch.generation).await {
                    continue;
                }
                warn!(tenant = %key.0, session = %key.1, seq = batch.first, retry_in_ms = delay.as_millis() as u64,
                    error = %message, "relay append failed; retrying");
                // The basin may be missing: never created, or lost by the store.
                let ensured = shared.ensure_basin(&key.0, batch.generation, &batch.basin).await;
                match &ensured {
                    Ok(true) => {}
                    Ok(false) => {
                        settle_obsolete(&shared, &key, batch.generation);
                        continue;
                    }
                    Err(error) => debug!(basin = %batch.basin.name, error = %error, "relay could not ensure a basin"),
                }
                // A basin that was simply missing is retried at once (the first append of a new
                // generation); anything else waits.
                let missing_basin = matches!(failure, Failure::Log(LogError::BasinMissing(_))) && ensured.is_ok();
                if !(missing_basin && failures == 1) {
                    waits += 1;
                    sleep_unless_stopped(&shared, delay).await;
                }
            }
        }
    }
}

/// What a pump does next.
enum Next {
    Batch(Batch),
    /// Nothing queued: wait for the next row.
    Park(Arc<Notify>),
    /// The relay stopped, or the session is not kept.
    Exit,
}

/// Takes the next batch from the front of the queue; parks the pump on an empty queue, or ends
/// it (removing the queue if too many are kept) when the relay stopped.
fn next_batch(shared: &Shared, key: &SessionKey) -> Next {
    let mut state = shared.lock();
    let (stopped, kept) = (state.stopped, state.sessions.len() <= KEEP_IDLE_QUEUES);
    let queue = state.sessions.get_mut(key).expect("a pump's queue stays until the pump exits");
    if !stopped && queue.rows.is_empty() && kept {
        queue.pump = Pump::Parked;
        return Next::Park(queue.wake.clone());
    }
    if stopped || queue.rows.is_empty() {
        queue.pump = Pump::Absent;
        if queue.rows.is_empty() {
            state.sessions.remove(key);
        }
        state.pumps -= 1;
        let wake = state.pumps == 0;
        drop(state);
        if wake {
            shared.changed.notify_waiters();
        }
        return Next::Exit;
    }
    // Replays overlapping refills, and rows of an older generation arriving late, sort out here.
    let order = |q: &super::state::Queued| (q.row.generation, q.row.seq);
    if !queue.rows.is_sorted_by_key(order) {
        queue.rows.sort_by_key(order);
    }
    let head = &queue.rows[0].row;
    let (generation, first) = (head.generation, head.seq);
    let mut bodies = vec![head.body.clone()];
    let mut bytes = head.body.len();
    let mut last = first;
    for queued in &queue.rows[1..] {
        let row = &queued.row;
        if row.generation == generation && row.seq == last {
            continue; // the same row twice (a duplicate delivery): settled with the first
        }
        if row.generation != generation
            || row.seq != last + 1
            || bodies.len() >= shared.options.max_batch_records
            || bytes + row.body.len() > shared.options.max_batch_bytes
        {
            break;
        }
        bytes += row.body.len();
        bodies.push(row.body.clone());
        last = row.seq;
    }
    let basin = queue.basin(&shared.basins, &key.0, generation);
    Next::Batch(Batch { generation, first, bodies, basin, stream: queue.stream.clone() })
}

/// One append and what follows from its answer.
async fn step(shared: &Arc<Shared>, key: &SessionKey, batch: &Batch) -> Result<(), Failure> {
    let generation = batch.generation;
    let current = async {
        match shared.record.generation(&key.0).await {
            // Obsolete: the tenant is gone or its generation moved past this one.
            Ok(current) => Some(current.is_some_and(|current| current <= generation)),
            Err(_) => None,
        }
    };
    let Some(permit) = batch.basin.permit(current).await else {
        // This generation is obsolete (see `basins`).
        settle_obsolete(shared, key, generation);
        return Ok(());
    };
    let answer = shared.log.append(LogTarget::new(&batch.basin.name, &batch.stream, batch.first), &batch.bodies).await;
    drop(permit);
    let answer = answer.map_err(Failure::Log)?;
    match answer {
        Append::Appended { end, .. } => {
            // The log holds every position below `end`, and within a generation a position
            // holds exactly the record row of that seq: duplicates queued meanwhile go too.
            settle(shared, key, move |row| row.generation == generation && row.seq < end);
            Ok(())
        }
        Append::TailMismatch { tail } if tail > batch.first => {
            // A replay: the log already has these rows.
            settle(shared, key, move |row| row.generation == generation && row.seq < tail);
            Ok(())
        }
        Append::TailMismatch { tail } if tail < batch.first => refill(shared, key, generation, tail, batch.first).await,
        Append::TailMismatch { tail } => {
            Err(Failure::Other(format!("log store refused an append at its own tail {tail} of {}", batch.stream)))
        }
    }
}

fn settle(shared: &Shared, key: &SessionKey, done: impl Fn(&RecordRow) -> bool) {
    let (moved, wake) = {
        let mut state = shared.lock();
        let reconciling = state.reconcile_pending > 0;
        let full = state.pending_rows >= shared.options.max_pending_rows;
        let moved = state.settle(key, done);
        // Waiters wait for idleness, a reconciliation's rows, or room for more input.
        let wake = state.is_idle()
            || (reconciling && state.reconcile_pending == 0)
            || (full && state.pending_rows < shared.options.max_pending_rows);
        (moved, wake)
    };
    publish_ack(&shared.acknowledged, moved);
    if wake {
        shared.changed.notify_waiters();
    }
}

/// The log is missing rows `from..to` of this generation: read them from the record and queue
/// them (they sort in front of the batch that found the gap).
async fn refill(shared: &Arc<Shared>, key: &SessionKey, generation: u64, from: u64, to: u64) -> Result<(), Failure> {
    debug!(tenant = %key.0, session = %key.1, from, to, "relay refilling a session from the record");
    let rows = shared.read_generation(key, generation, from, to).await.map_err(Failure::Other)?;
    if !is_exact_range(&rows, from, to) {
        // A reset or deletion removed them: nothing to re-send. Otherwise the record is broken.
        if settle_if_obsolete(shared, key, generation).await {
            return Ok(());
        }
        return Err(Failure::Other(format!(
            "the record is missing rows {from}..{to} of session {} (tenant {}, generation {generation})",
            key.1, key.0
        )));
    }
    let mut state = shared.lock();
    if state.stopped {
        return Ok(());
    }
    for row in rows {
        state.enqueue(row, Owner::Gap);
    }
    Ok(())
}

async fn settle_if_obsolete(shared: &Arc<Shared>, key: &SessionKey, generation: u64) -> bool {
    if !shared.is_obsolete(&key.0, generation).await {
        return false;
    }
    settle_obsolete(shared, key, generation);
    true
}

fn settle_obsolete(shared: &Shared, key: &SessionKey, generation: u64) {
    debug!(tenant = %key.0, session = %key.1, generation, "relay dropping rows of an obsolete generation");
    settle(shared, key, move |row| row.generation <= generation);
}

async fn sleep_unless_stopped(shared: &Shared, delay: Duration) {
    tokio::select! {
        _ = tokio::time::sleep(delay) => {}
        () = shared.stop.cancelled() => {}
    }
}
