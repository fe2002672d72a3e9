//! Group-committed checkpoints on PostgreSQL: the rounds of every stream that are due together
//! run as one transaction, their statements pipelined on one connection.
//!
//! Guarantees:
//! - One leader task at a time (`group_commit.rs`) takes every queued round, at most
//!   [`MAX_BATCH`]: `BEGIN`, each round's compare-and-swap (`RETURNING` the row) and chunk
//!   insert sent without waiting for each other's answers, a read-back only for the rounds whose
//!   compare-and-swap changed nothing, `COMMIT`. So a thousand streams' checkpoints cost one
//!   commit and a few round trips, not a thousand of each.
//! - A round is answered only once its transaction committed; when the commit (or the
//!   connection) fails, every round in it is answered with that error, never half a batch
//!   acknowledged, and each stream's own retry and deadline rules apply.
//! - A statement that fails aborts the transaction for everyone in it; the round that failed
//!   is answered with its error and the others run again once, in a transaction without it (so
//!   one stream's bad write cannot keep failing its neighbours); if that fails too, they are
//!   answered with the error.
//! - The statements are the single-stream ones, so every guarantee of the target (the fence,
//!   idempotence under replay, the store's own word on the length) holds per round.

use std::sync::Arc;

use futures::future::join_all;
use tokio::sync::oneshot;
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;
use twoplane_core::sql::{MappedSql, Statement};

use crate::error::PlaneError;
use crate::exec::PgExec;
use crate::group_commit::{GroupQueue, Leading, MAX_BATCH};
use crate::pg_client::PgClient;
use crate::pg_state::{claimed_ack, db_err, state_of};
use crate::target::AppendAck;

/// The queue of one target's checkpoint rounds.
pub(crate) struct GroupCommit {
    queue: Arc<GroupQueue<Round>>,
}

struct Round {
    stream_id: String,
    token: String,
    /// The compare-and-swap with `RETURNING`, then the chunk insert.
    statements: [Statement; 2],
    reply: oneshot::Sender<Result<AppendAck, PlaneError>>,
    /// Already put back once after a neighbour's statement failed.
    retried: bool,
}

impl GroupCommit {
    pub(crate) fn new() -> GroupCommit {
        GroupCommit { queue: Arc::new(GroupQueue::new()) }
    }

    /// Commit one stream's round with whatever else is due, and answer for it.
    pub(crate) async fn append(
        &self,
        conn: &PgClient,
        sql: &Arc<MappedSql>,
        stream_id: &str,
        token: &str,
        statements: [Statement; 2],
    ) -> Result<AppendAck, PlaneError> {
        let (reply, answer) = oneshot::channel();
        let round =
            Round { stream_id: stream_id.to_owned(), token: token.to_owned(), statements, reply, retried: false };
        if let Some(leading) = self.queue.push(round) {
            // Not awaited: the leader serves every caller, including ones that stop waiting.
            tokio::spawn(lead(conn.clone(), sql.clone(), leading));
        }
        answer.await.map_err(|_| PlaneError::store("postgres: the checkpoint writer stopped before answering"))?
    }
}

async fn lead(conn: PgClient, sql: Arc<MappedSql>, mut leading: Leading<Round>) {
    loop {
        if let Some(wait) = leading.wait() {
            tokio::time::sleep(wait).await;
        }
        let Some(batch) = leading.take(MAX_BATCH) else { break };
        metrics::histogram!("twoplane_group_commit_writes").record(batch.len() as f64);
        match run_batch(&conn, &sql, &batch).await {
            Ok(rows) => {
                for (round, row) in batch.into_iter().zip(rows) {
                    let out = state_of(&sql, &round.stream_id, row.as_ref())
                        .and_then(|state| claimed_ack(&sql, &round.stream_id, &round.token, state));
                    let _ = round.reply.send(out);
                }
            }
            Err(failure) => {
                let again = settle_failure(batch, failure);
                if !again.is_empty() {
                    leading.put_back(again);
                }
            }
        }
    }
}

/// Why a batch did not commit: the error, and the round whose own statement caused it (when
/// one did; the rest only saw the transaction aborted).
struct Failure {
    err: PlaneError,
    culprit: Option<usize>,
}

/// Answer the rounds of a failed batch; returns the ones to run again.
fn settle_failure(batch: Vec<Round>, failure: Failure) -> Vec<Round> {
    let mut again = Vec::new();
    for (i, mut round) in batch.into_iter().enumerate() {
        let innocent = failure.culprit.is_some_and(|c| c != i);
        if innocent && !round.retried {
            round.retried = true;
            again.push(round);
        } else {
            let _ = round.reply.send(Err(failure.err.clone()));
        }
    }
    again
}

/// One transaction over `batch`: each round's row as the compare-and-swap returned it, or as
/// read back where it changed nothing.
async fn run_batch(conn: &PgClient, sql: &MappedSql, batch: &[Round]) -> Result<Vec<Option<Row>>, Failure> {
    let whole = |err: PlaneError| Failure { err, culprit: None };
    let context = "committing a checkpoint";
    let mut session = conn.lock().await.map_err(|e| whole(db_err("connecting")(e)))?;
    // Every round of a batch runs the same statement texts (a parts row has its own insert).
    let mut prepared = Vec::with_capacity(batch.len());
    for round in batch {
        let [cas, insert] = &round.statements;
        let p_cas = session.prepare_cached(&cas.sql).await.map_err(|e| whole(db_err("preparing a statement")(e)))?;
        let p_insert =
            session.prepare_cached(&insert.sql).await.map_err(|e| whole(db_err("preparing a statement")(e)))?;
        prepared.push((p_cas, p_insert));
    }
    let probe =
        session.prepare_cached(&sql.probe_state()).await.map_err(|e| whole(db_err("preparing a statement")(e)))?;
    let tx = session.client_mut().transaction().await.map_err(|e| whole(db_err(context)(e)))?;

    // Pipelined: every round's statements are sent before the first answer is awaited; within a
    // round the insert follows its compare-and-swap.
    let writes = batch.iter().zip(&prepared).map(|(round, (p_cas, p_insert))| {
        let tx = &tx;
        async move {
            let [cas, insert] = &round.statements;
            let mut returned = tx.rows(p_cas, &cas.params).await?;
            tx.run(p_insert, &insert.params).await?;
            Ok::<_, tokio_postgres::Error>(returned.pop())
        }
    });
    let written = join_all(writes).await;
    let mut rows = Vec::with_capacity(batch.len());
    let mut errors = Vec::new();
    for (i, out) in written.into_iter().enumerate() {
        match out {
            Ok(row) => rows.push(row),
            Err(e) => {
                errors.push((i, e));
                rows.push(None);
            }
        }
    }
    if !errors.is_empty() {
        // The statement that failed on its own, if one did: the others only report the aborted
        // transaction. An error without a SQLSTATE is the connection's, nobody's own.
        let own = errors.iter().position(|(_, e)| e.code().is_some_and(|c| c != &SqlState::IN_FAILED_SQL_TRANSACTION));
        let (culprit, e) = match own {
            Some(k) => {
                let (i, e) = errors.swap_remove(k);
                (Some(i), e)
            }
            None => (None, errors.swap_remove(0).1),
        };
        // Dropping the transaction rolls it back.
        return Err(Failure { err: db_err(context)(e), culprit });
    }

    // The rounds whose compare-and-swap changed nothing: where does each row stand?
    let missing: Vec<usize> = rows.iter().enumerate().filter(|(_, r)| r.is_none()).map(|(i, _)| i).collect();
    if !missing.is_empty() {
        let reads = missing.iter().map(|&i| {
            let (tx, probe) = (&tx, &probe);
            let id = twoplane_core::sql::SqlValue::Text(batch[i].stream_id.clone());
            async move { tx.rows(probe, std::slice::from_ref(&id)).await.map(|mut r| r.pop()) }
        });
        for (i, read) in missing.iter().zip(join_all(reads).await) {
            rows[*i] = read.map_err(|e| whole(db_err("reading the checkpoint back")(e)))?;
        }
    }
    tx.commit().await.map_err(|e| whole(db_err(context)(e)))?;
    Ok(rows)
}
