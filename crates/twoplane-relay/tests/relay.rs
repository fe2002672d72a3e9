//! Scenarios of the relay core over the in-memory parts, each checking one rule by what the log,
//! the slot and `status()` show. Paused time: the timers (keepalives, backoff) cost nothing.

use std::sync::Arc;
use std::time::Duration;

use twoplane_relay::memory::{MemoryLog, MemoryRecord};
use twoplane_relay::{session_stream, BasinName, Lsn, Relay, RelayOptions, SessionRange};

fn start(record: &MemoryRecord, log: &Arc<MemoryLog>, options: RelayOptions) -> Relay {
    Relay::start(Box::new(record.source()), Arc::new(record.clone()), log.clone(), options)
}

fn logged(log: &MemoryLog, tenant: &str, generation: u64, session: &str) -> Vec<String> {
    log.records(&BasinName::for_tenant(tenant, generation), &session_stream(session))
        .iter()
        .map(|r| r.to_string())
        .collect()
}

/// Waits (in paused time) until the relay is idle and the slot released everything.
async fn settle(relay: &Relay, record: &MemoryRecord) {
    for _ in 0..1_000 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let status = relay.status();
        if status.active && status.pending_txs == 0 && status.pending_rows == 0 && record.retained() == 0 {
            return;
        }
    }
    panic!("relay did not settle: {:?}", relay.status());
}

#[tokio::test(start_paused = true)]
async fn rows_reach_their_logs_in_order_and_the_slot_is_released() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let relay = start(&record, &log, RelayOptions::default());
    for n in 0..10 {
        let body = format!("{{\"n\":{n}}}");
        record.commit_events([("t", "a", body.as_str()), ("t", "b", body.as_str()), ("u", "a", body.as_str())]);
    }
    settle(&relay, &record).await;
    let expected: Vec<String> = (0..10).map(|n| format!("{{\"n\":{n}}}")).collect();
    assert_eq!(logged(&log, "t", 1, "a"), expected);
    assert_eq!(logged(&log, "t", 1, "b"), expected);
    assert_eq!(logged(&log, "u", 1, "a"), expected);
    let status = relay.status();
    assert_eq!(status.confirmed, Some(record.lsn()));
    assert_eq!(record.confirmed(), Some(record.lsn()));
    assert_eq!(status.reconciliations, 1, "a new slot is fresh: one reconciliation");
    assert_eq!(record.reconcile_pending(), Some(false));
    relay.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_fresh_slot_reconciles_rows_committed_before_it_existed() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    // No slot yet: these commits are never delivered; only reconciliation can bring them.
    for n in 0..700 {
        record.commit_events([("t", &*format!("s{}", n % 3), "{}")]);
    }
    let options = RelayOptions { reconcile_page: 2, ..RelayOptions::default() };
    let relay = start(&record, &log, options);
    settle(&relay, &record).await;
    for s in 0..3 {
        let session = format!("s{s}");
        assert_eq!(logged(&log, "t", 1, &session).len(), record.session_rows("t", &session).len());
    }
    assert_eq!(record.reconcile_pending(), Some(false));
    relay.stop().await;
}

#[tokio::test(start_paused = true)]
async fn keepalives_move_the_slot_past_changes_without_rows() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let relay = start(&record, &log, RelayOptions::default());
    record.commit_events([("t", "a", "1")]);
    settle(&relay, &record).await;
    let after_rows = record.lsn();
    for _ in 0..5 {
        record.commit_other();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(record.lsn() > after_rows);
    assert_eq!(record.confirmed(), Some(record.lsn()));
    assert_eq!(relay.status().confirmed, Some(record.lsn()));
    relay.stop().await;
}

#[tokio::test(start_paused = true)]
async fn nothing_is_acknowledged_past_a_transaction_not_in_its_log() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let relay = start(&record, &log, RelayOptions::default());
    record.commit_events([("t", "a", "1")]);
    settle(&relay, &record).await;
    let confirmed = record.confirmed().unwrap();
    // The log refuses everything for a while; other WAL moves on meanwhile.
    log.fail_next_appends(u32::MAX);
    record.commit_events([("t", "a", "2")]);
    record.commit_other();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(record.confirmed(), Some(confirmed), "keepalives must not pass a pending transaction");
    let status = relay.status();
    assert_eq!((status.pending_txs, status.pending_rows), (1, 1));
    assert!(status.last_error.as_deref().unwrap_or("").contains("injected"), "{status:?}");
    log.fail_next_appends(0);
    settle(&relay, &record).await;
    assert_eq!(logged(&log, "t", 1, "a"), ["1", "2"]);
    assert_eq!(relay.status().last_error, None);
    relay.stop().await;
}

#[tokio::test(start_paused = true)]
async fn batches_respect_the_record_and_byte_limits() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let options = RelayOptions { max_batch_records: 4, max_batch_bytes: 10, ..RelayOptions::default() };
    let bodies: Vec<String> = (0..12).map(|n| format!("\"{n:03}\"")).collect(); // 5 bytes each
    record.commit_events([("t", "warm", "0")]);
    let relay = start(&record, &log, options);
    settle(&relay, &record).await;
    let before = log.appends();
    record.commit_events(bodies.iter().map(|b| ("t", "a", b.as_str())));
    settle(&relay, &record).await;
    // 12 rows of 5 bytes, at most 10 bytes a batch: 6 appends (the record limit of 4 never binds).
    assert_eq!(log.appends() - before, 6);
    assert_eq!(logged(&log, "t", 1, "a"), bodies);
    relay.stop().await;
}

#[tokio::test(start_paused = true)]
async fn one_relay_holds_the_source_and_another_takes_over_after_it_stops() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let first = start(&record, &log, RelayOptions::default());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = start(&record, &log, RelayOptions::default());
    record.commit_events([("t", "a", "1")]);
    settle(&first, &record).await;
    assert!(first.status().active);
    assert!(!second.status().active, "the slot has one reader");
    first.stop().await;
    record.commit_events([("t", "a", "2")]);
    settle(&second, &record).await;
    assert_eq!(logged(&log, "t", 1, "a"), ["1", "2"]);
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_replay_after_a_disconnect_is_not_appended_twice() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    log.set_latency(Duration::from_millis(30));
    let relay = start(&record, &log, RelayOptions::default());
    tokio::time::sleep(Duration::from_millis(100)).await;
    record.commit_events([("t", "a", "1"), ("t", "b", "1")]);
    record.duplicate_next_delivery();
    record.commit_events([("t", "a", "2")]);
    // Cut the connection while the appends are in flight: everything is replayed.
    tokio::time::sleep(Duration::from_millis(10)).await;
    record.disconnect();
    settle(&relay, &record).await;
    assert_eq!(logged(&log, "t", 1, "a"), ["1", "2"]);
    assert_eq!(logged(&log, "t", 1, "b"), ["1"]);
    relay.stop().await;
}

#[tokio::test(start_paused = true)]
async fn rows_of_a_reset_generation_are_dropped_and_the_new_one_is_relayed() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let relay = start(&record, &log, RelayOptions::default());
    record.commit_events([("t", "a", "old")]);
    settle(&relay, &record).await;
    log.fail_next_appends(u32::MAX);
    record.commit_events([("t", "a", "old-2")]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(relay.status().pending_rows, 1);
    // The application resets the tenant: the pending row is obsolete and must not block.
    let generation = record.reset_tenant("t");
    log.retire_basin(&BasinName::for_tenant("t", 1));
    record.commit_events([("t", "a", "new")]);
    log.fail_next_appends(0);
    settle(&relay, &record).await;
    assert_eq!(generation, 2);
    assert_eq!(logged(&log, "t", 2, "a"), ["new"]);
    assert!(log.violations().is_empty(), "{:?}", log.violations());
    assert_eq!(record.confirmed(), Some(record.lsn()));
    relay.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_lost_stream_is_refilled_from_the_record_when_new_rows_arrive() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let relay = start(&record, &log, RelayOptions::default());
    record.commit_events([("t", "a", "1"), ("t", "a", "2")]);
    settle(&relay, &record).await;
    log.lose_stream(&BasinName::for_tenant("t", 1), &session_stream("a"));
    record.commit_events([("t", "a", "3")]);
    settle(&relay, &record).await;
    assert_eq!(logged(&log, "t", 1, "a"), ["1", "2", "3"]);
    relay.stop().await;
}

#[tokio::test(start_paused = true)]
async fn stop_ends_the_relay_and_releases_the_slot() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let relay = start(&record, &log, RelayOptions::default());
    tokio::time::sleep(Duration::from_millis(50)).await; // the slot exists from here on
    log.fail_next_appends(u32::MAX);
    record.commit_events([("t", "a", "1")]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Stops promptly although a pump is backing off.
    tokio::time::timeout(Duration::from_millis(100), relay.stop()).await.expect("stop is prompt");
    // The transaction was not acknowledged: the next reader gets it again.
    assert_eq!(record.retained(), 1);
    assert!(record.confirmed().is_some_and(|c| c < Lsn(2)));
}

#[tokio::test(start_paused = true)]
async fn input_pauses_while_too_many_rows_are_queued() {
    let record = MemoryRecord::new();
    let log = Arc::new(MemoryLog::new());
    let relay = start(&record, &log, RelayOptions { max_pending_rows: 4, ..RelayOptions::default() });
    tokio::time::sleep(Duration::from_millis(50)).await;
    log.fail_next_appends(u32::MAX);
    for n in 0..20 {
        let body = n.to_string();
        record.commit_events([("t", "a", body.as_str()), ("t", "b", body.as_str())]);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Input stops once 4 rows are queued (a transaction is taken whole): the rest waits in the slot.
    let status = relay.status();
    assert_eq!((status.pending_rows, status.pending_txs), (4, 2), "{status:?}");
    assert_eq!(record.retained(), 20);
    log.fail_next_appends(0);
    settle(&relay, &record).await;
    assert_eq!(logged(&log, "t", 1, "a").len(), 20);
    assert_eq!(logged(&log, "t", 1, "b").len(), 20);
    relay.stop().await;
}

#[tokio::test]
async fn the_memory_record_pages_heads_in_byte_order() {
    use twoplane_relay::RecordReader;
    let record = MemoryRecord::new();
    for (tenant, session) in [("b", "s2"), ("a", "s1"), ("B", "x"), ("a", "s0"), ("b", "s1"), ("a", "s1")] {
        record.commit_events([(tenant, session, "{}")]);
    }
    let mut seen = Vec::new();
    let mut after: Option<(String, String)> = None;
    loop {
        let page = record.heads(after.as_ref().map(|(t, s)| (t.as_str(), s.as_str())), 2).await.unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        after = Some((last.tenant_id.to_string(), last.session_id.to_string()));
        seen.extend(
            page.into_iter().map(|h| (h.tenant_id.to_string(), h.session_id.to_string(), h.head, h.generation)),
        );
    }
    let expected = [("B", "x", 1), ("a", "s0", 1), ("a", "s1", 2), ("b", "s1", 1), ("b", "s2", 1)];
    let expected: Vec<_> = expected.iter().map(|&(t, s, h)| (t.to_owned(), s.to_owned(), h, 1)).collect();
    assert_eq!(seen, expected);
    assert_eq!(record.read_range(SessionRange::new("a", "s1", 1, 5)).await.unwrap().len(), 1);
    assert_eq!(
        record.read_range(SessionRange::new("a", "s1", 0, 2)).await.unwrap().iter().map(|r| r.seq).collect::<Vec<_>>(),
        [0, 1]
    );
    assert!(record.read_range(SessionRange::new("zz", "s1", 0, 2)).await.unwrap().is_empty());
    record.reset_tenant("a");
    assert_eq!(record.generation("a").await.unwrap(), Some(2));
    assert!(record.heads(Some(("B", "x")), 10).await.unwrap().iter().all(|h| &*h.tenant_id == "b"));
    record.delete_tenant("b");
    assert_eq!(record.generation("b").await.unwrap(), None);
    assert_eq!(record.heads(None, 10).await.unwrap().len(), 1);
}
