//! Reconciliation after a fresh start of the source (a new slot, or one that was lost): the
//! source cannot replay what was committed before it existed, so every session's log tail is
//! compared with the record's head and the difference is re-sent from the record.
//!
//! Guarantees:
//! - The source is told the activation is reconciled only once every re-sent row is in its
//!   log, and only if the activation is still current (the source was not lost meanwhile, the
//!   relay did not stop). Otherwise nothing is said and the next activation is fresh again.
//! - A failure (record or log unreachable) restarts the pass after a backoff; rows already
//!   queued stay queued (`match_seq` makes re-sending them harmless).
//! - A session whose tenant is gone or whose newest rows are of an older generation is skipped,
//!   and the generation is checked again after the basin is ensured (see `basins`).

use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use tokio::time::Instant;
use tracing::{info, warn};

use super::pump;
use super::shared::{is_exact_range, Shared};
use super::state::{Owner, SessionKey};
use crate::names::session_stream;
use crate::types::LogHead;

/// Rows read from the record per query when a log is far behind.
const REFILL_CHUNK: u64 = 5_000;

pub(super) async fn run(shared: Arc<Shared>, epoch: u64, activation: u64) {
    let started = Instant::now();
    {
        let mut state = shared.lock();
        state.reconciliations += 1;
    }
    let current = || shared.is_current(epoch);
    let backoff = shared.retry_backoff();
    let mut failures = 0u32;
    let (sessions, resent) = loop {
        if !current() {
            return;
        }
        match pass(&shared, epoch).await {
            Ok(counts) => {
                if failures > 0 {
                    shared.lock().last_error = None; // recovered from a failed pass
                }
                break counts;
            }
            Err(error) => {
                failures += 1;
                let delay = backoff.delay(failures);
                warn!(error = %error, retry_in_ms = delay.as_millis() as u64, "relay reconciliation failed; retrying");
                shared.lock().last_error = Some(error);
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    () = shared.stop.cancelled() => return,
                }
            }
        }
    };
    // Queued is not appended: wait until every re-sent row is in its log.
    shared.wait_until(|state| state.stopped || state.epoch != epoch || state.reconcile_pending == 0).await;
    if !current() {
        return;
    }
    shared.reconciled.send_replace(activation);
    info!(
        sessions,
        resent,
        duration_ms = started.elapsed().as_millis() as u64,
        "relay reconciled the record with the logs"
    );
}

/// One pass over every session of the record; returns (sessions checked, rows re-sent).
async fn pass(shared: &Arc<Shared>, epoch: u64) -> Result<(usize, u64), String> {
    let mut after: Option<SessionKey> = None;
    let (mut sessions, mut resent) = (0, 0);
    loop {
        let page = shared
            .record
            .heads(after.as_ref().map(|(t, s)| (&**t, &**s)), shared.options.reconcile_page)
            .await
            .map_err(|error| error.to_string())?;
        let Some(last) = page.last() else { break };
        after = Some((last.tenant_id.clone(), last.session_id.clone()));
        let full = page.len() >= shared.options.reconcile_page;
        sessions += page.len();
        resent += stream::iter(page)
            .map(|head| one(shared, epoch, head))
            .buffer_unordered(shared.options.reconcile_concurrency.max(1))
            .try_fold(0, |sum, n| async move { Ok(sum + n) })
            .await?;
        if !full {
            break;
        }
    }
    Ok((sessions, resent))
}

/// Brings one session's log up to the record's head; returns the rows queued.
async fn one(shared: &Arc<Shared>, epoch: u64, head: LogHead) -> Result<u64, String> {
    // A stopping relay creates no basin: `stop` waits for this task, and nothing may be written
    // after it returns.
    if !shared.is_current(epoch) {
        return Ok(0);
    }
    let current = |generation: Option<u64>| generation == Some(head.generation);
    let generation = shared.record.generation(&head.tenant_id).await.map_err(|e| e.to_string())?;
    if !current(generation) {
        return Ok(0);
    }
    let basin = shared.basins.get(&head.tenant_id, head.generation);
    // Checked again once the basin exists (see `basins`): a reset in between must not get its
    // old basin back with rows in it.
    if !shared.ensure_basin(&head.tenant_id, head.generation, &basin).await.map_err(|e| e.to_string())? {
        return Ok(0);
    }
    let stream = session_stream(&head.session_id);
    let tail = shared.log.check_tail(&basin.name, &stream).await.map_err(|e| e.to_string())?;
    let key: SessionKey = (head.tenant_id.clone(), head.session_id.clone());
    let mut queued = 0;
    let mut from = tail;
    while from < head.head {
        let to = head.head.min(from + REFILL_CHUNK);
        let rows = shared.read_generation(&key, head.generation, from, to).await?;
        if !is_exact_range(&rows, from, to) {
            if shared.is_obsolete(&head.tenant_id, head.generation).await {
                return Ok(queued);
            }
            return Err(format!(
                "the record is missing rows {from}..{to} of session {} (tenant {})",
                head.session_id, head.tenant_id
            ));
        }
        let mut state = shared.lock();
        if state.stopped || state.epoch != epoch {
            return Ok(queued);
        }
        state.reconcile_pending += rows.len();
        for row in rows {
            if let Some(key) = state.enqueue(row, Owner::Reconcile(epoch)) {
                pump::spawn(shared, &mut state, key);
            }
        }
        queued += to - from;
        from = to;
    }
    Ok(queued)
}
