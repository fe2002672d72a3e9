//! Deterministic simulation of the relay core over the in-memory record, source and log, with
//! faults injected between commits: failing appends, latency, lost and duplicated deliveries,
//! disconnects (also inside a transaction), slot drops, a log losing a stream or a basin,
//! tenant resets and deletions, relay restarts.
//!
//! Each case runs on a current-thread tokio runtime with paused time (so it is deterministic
//! and its timers cost nothing), then lets the relay settle and checks:
//! - every session of a live generation has a log equal to its record rows, in seq order, each
//!   exactly once;
//! - the slot never released (the relay never acknowledged) a transaction with a live row that
//!   had not reached its log;
//! - nothing was appended into the basin of a generation after it was reset or deleted.
//!
//! `PROPTEST_CASES` raises the number of cases (default 100); `PROPTEST_RNG_SEED` changes the
//! fixed seed.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use twoplane_relay::memory::{MemoryLog, MemoryRecord};
use twoplane_relay::{session_stream, BasinName, Relay, RelayOptions};

const TENANTS: u8 = 3;
const SESSIONS: u8 = 4;

#[derive(Clone, Debug)]
enum Op {
    Commit(Vec<(u8, u8)>),
    CommitOther,
    Wait(u16),
    FailAppends(u8),
    Latency(u8),
    LoseStream(u8, u8),
    LoseBasin(u8),
    DropSlot,
    Disconnect,
    DuplicateNext,
    LoseNext,
    DisconnectInsideNext,
    Reset(u8),
    DeleteTenant(u8),
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    let row = (0..TENANTS, 0..SESSIONS);
    prop_oneof![
        12 => prop::collection::vec(row, 1..6).prop_map(Op::Commit),
        1 => Just(Op::CommitOther),
        4 => (0u16..300).prop_map(Op::Wait),
        2 => (1u8..6).prop_map(Op::FailAppends),
        1 => (0u8..20).prop_map(Op::Latency),
        1 => (0..TENANTS, 0..SESSIONS).prop_map(|(t, s)| Op::LoseStream(t, s)),
        1 => (0..TENANTS).prop_map(Op::LoseBasin),
        1 => Just(Op::DropSlot),
        1 => Just(Op::Disconnect),
        1 => Just(Op::DuplicateNext),
        1 => Just(Op::LoseNext),
        1 => Just(Op::DisconnectInsideNext),
        1 => (0..TENANTS).prop_map(Op::Reset),
        1 => (0..TENANTS).prop_map(Op::DeleteTenant),
        1 => Just(Op::Restart),
    ]
}

#[derive(Clone, Debug)]
struct Case {
    ops: Vec<Op>,
    max_batch_records: usize,
    max_batch_bytes: usize,
    reconcile_page: usize,
    max_pending_rows: usize,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(op(), 1..60),
        1usize..6,
        prop_oneof![Just(60usize), Just(768 * 1024)],
        1usize..4,
        prop_oneof![Just(3usize), Just(100_000)],
    )
        .prop_map(|(ops, max_batch_records, max_batch_bytes, reconcile_page, max_pending_rows)| Case {
            ops,
            max_batch_records,
            max_batch_bytes,
            reconcile_page,
            max_pending_rows,
        })
}

fn tenant(t: u8) -> String {
    format!("tenant-{t}")
}

fn session(s: u8) -> String {
    format!("s{s}")
}

fn run_case(case: &Case) -> Result<(), TestCaseError> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("a runtime");
    runtime.block_on(simulate(case))
}

async fn simulate(case: &Case) -> Result<(), TestCaseError> {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::with_journal());
    let released_early: Arc<Mutex<Vec<String>>> = Arc::default();
    {
        let log = log.clone();
        let released_early = released_early.clone();
        record.on_release(move |released| {
            for row in released.txs.iter().flat_map(|tx| &tx.rows) {
                if (released.generation)(&row.tenant_id) != Some(row.generation) {
                    continue; // obsolete: it never has to reach a log
                }
                let basin = BasinName::for_tenant(&row.tenant_id, row.generation);
                if !log.ever_appended(&basin, &session_stream(&row.session_id), row.seq, &row.body) {
                    released_early.lock().unwrap().push(format!(
                        "acknowledged {} past row {} of {}/{} (generation {}) not in its log",
                        released.confirmed, row.seq, row.tenant_id, row.session_id, row.generation
                    ));
                }
            }
        });
    }
    let options = RelayOptions {
        max_batch_records: case.max_batch_records,
        max_batch_bytes: case.max_batch_bytes,
        reconcile_page: case.reconcile_page,
        reconcile_concurrency: 2,
        max_pending_rows: case.max_pending_rows,
        ..RelayOptions::default()
    };
    let start = |record: &MemoryRecord| {
        Relay::start(
            Box::new(record.source().with_keepalive_every(Duration::from_millis(30))),
            Arc::new(record.clone()),
            log.clone(),
            options.clone(),
        )
    };
    let mut relay = start(&record);
    let mut deleted: HashSet<u8> = HashSet::new();
    let mut needs_repair = false;
    let mut written = 0u64;
    for op in &case.ops {
        match op {
            Op::Commit(rows) => {
                let bodies: Vec<(String, String, String)> = rows
                    .iter()
                    .filter(|(t, _)| !deleted.contains(t))
                    .map(|&(t, s)| {
                        written += 1;
                        (tenant(t), session(s), format!(r#"{{"tenant":{t},"session":{s},"n":{written}}}"#))
                    })
                    .collect();
                record.commit_events(bodies.iter().map(|(t, s, b)| (t.as_str(), s.as_str(), b.as_str())));
            }
            Op::CommitOther => {
                record.commit_other();
            }
            Op::Wait(ms) => tokio::time::sleep(Duration::from_millis(u64::from(*ms))).await,
            Op::FailAppends(n) => log.fail_next_appends(u32::from(*n)),
            Op::Latency(ms) => log.set_latency(Duration::from_millis(u64::from(*ms))),
            Op::LoseStream(t, s) => {
                if let Some(generation) = record.current_generation(&tenant(*t)) {
                    log.lose_stream(&BasinName::for_tenant(&tenant(*t), generation), &session_stream(&session(*s)));
                    needs_repair = true;
                }
            }
            Op::LoseBasin(t) => {
                if let Some(generation) = record.current_generation(&tenant(*t)) {
                    log.delete_basin(&BasinName::for_tenant(&tenant(*t), generation));
                    needs_repair = true;
                }
            }
            Op::DropSlot => record.drop_slot(),
            Op::Disconnect => record.disconnect(),
            Op::DuplicateNext => record.duplicate_next_delivery(),
            Op::LoseNext => record.lose_next_delivery(),
            Op::DisconnectInsideNext => record.disconnect_inside_next(),
            Op::Reset(t) => {
                // The application's reset: a new generation, the old rows and basin gone, in one
                // step (nothing of the relay runs in between).
                let name = tenant(*t);
                if !deleted.contains(t) {
                    if let Some(old) = record.current_generation(&name) {
                        record.reset_tenant(&name);
                        log.retire_basin(&BasinName::for_tenant(&name, old));
                    }
                }
            }
            Op::DeleteTenant(t) => {
                let name = tenant(*t);
                if let Some(generation) = record.current_generation(&name) {
                    record.delete_tenant(&name);
                    log.retire_basin(&BasinName::for_tenant(&name, generation));
                }
                deleted.insert(*t);
            }
            Op::Restart => {
                relay.stop().await;
                relay = start(&record);
            }
        }
        tokio::task::yield_now().await;
    }

    // Quiescence: faults off; a log that lost data after its rows were relayed is only repaired
    // by a reconciliation, which a fresh slot brings.
    log.fail_next_appends(0);
    log.set_latency(Duration::ZERO);
    if needs_repair {
        record.drop_slot();
    }
    let mut settled = false;
    for _ in 0..3_000 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let status = relay.status();
        if status.active
            && status.pending_txs == 0
            && status.pending_rows == 0
            && record.reconcile_pending() == Some(false)
            && record.retained() == 0
        {
            settled = true;
            break;
        }
    }
    let status = relay.status();
    relay.stop().await;
    prop_assert!(settled, "the relay did not settle: {status:?}, slot retains {}", record.retained());

    for (tenant_id, session_id) in record.sessions() {
        let rows = record.session_rows(&tenant_id, &session_id);
        let generation = record.current_generation(&tenant_id);
        prop_assert!(rows.iter().all(|row| Some(row.generation) == generation), "record rows of an old generation");
        let Some(generation) = generation else { continue };
        let logged = log.records(&BasinName::for_tenant(&tenant_id, generation), &session_stream(&session_id));
        let expected: Vec<Arc<str>> = rows.iter().map(|row| row.body.clone()).collect();
        prop_assert_eq!(logged, expected, "log of {}/{} differs from the record", tenant_id, session_id);
    }
    let early = released_early.lock().unwrap().clone();
    prop_assert!(early.is_empty(), "{early:#?}");
    let violations = log.violations();
    prop_assert!(violations.is_empty(), "{violations:#?}");
    Ok(())
}

#[test]
fn relay_survives_injected_faults() {
    let mut config = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 100;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x7e1a_c0de);
    }
    config.failure_persistence = None;
    let mut runner = TestRunner::new(config);
    if let Err(error) = runner.run(&case(), |case| run_case(&case)) {
        panic!("{error}");
    }
}
