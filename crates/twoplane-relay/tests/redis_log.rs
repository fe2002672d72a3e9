//! The Redis Streams log store against a real Redis (`TWOPLANE_REDIS_URL`, started by
//! scripts/redis.sh; under `TWOPLANE_REQUIRE_SERVICES=1` a missing URL fails the test): the
//! conditional-append contract (also checked on the in-memory store, so both behave alike), its
//! atomicity under racing writers, the key layout readers rely on, and the relay core writing
//! through it while its source is disconnected and its slot dropped.

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use twoplane_relay::memory::{MemoryLog, MemoryRecord};
use twoplane_relay::redis_log::{RedisLog, RedisLogOptions};
use twoplane_relay::{session_stream, Append, BasinName, LogError, LogStore, LogTarget, Relay, RelayOptions};

/// The Redis under test; `None` (a skip, noted) when unset, unless services are required.
fn redis_url() -> Option<String> {
    match std::env::var("TWOPLANE_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let why = "TWOPLANE_REDIS_URL is not set (scripts/redis.sh starts a server and prints it)";
            match std::env::var("TWOPLANE_REQUIRE_SERVICES") {
                Ok(v) if !v.is_empty() && v != "0" => panic!("TWOPLANE_REQUIRE_SERVICES={v}, but {why}"),
                _ => eprintln!("skipped: {why}"),
            }
            None
        }
    }
}

/// A key prefix no other test or earlier run uses.
fn fresh_prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("twoplane-test:relay:{test}:{}:{nanos}", std::process::id())
}

async fn connect(url: &str, test: &str) -> RedisLog {
    let options = RedisLogOptions { prefix: fresh_prefix(test), ..RedisLogOptions::default() };
    RedisLog::connect(url, options).await.expect("redis answers")
}

fn records(texts: &[&str]) -> Vec<Arc<str>> {
    texts.iter().map(|t| Arc::from(*t)).collect()
}

/// What every log store must do (S2's semantics).
async fn contract(log: &dyn LogStore) {
    let basin = BasinName::for_tenant("tenant", 1);
    let stream = session_stream("s1");
    assert_eq!(
        log.append(LogTarget::new(&basin, &stream, 0), &records(&["1"])).await,
        Err(LogError::BasinMissing(basin.to_string()))
    );
    assert!(matches!(log.check_tail(&basin, &stream).await, Err(LogError::BasinMissing(_))));
    log.ensure_basin(&basin).await.unwrap();
    log.ensure_basin(&basin).await.unwrap(); // idempotent
    assert_eq!(log.check_tail(&basin, &stream).await, Ok(0), "a stream never written has tail 0");
    assert_eq!(
        log.append(LogTarget::new(&basin, &stream, 1), &records(&["x"])).await,
        Ok(Append::TailMismatch { tail: 0 })
    );
    assert_eq!(log.check_tail(&basin, &stream).await, Ok(0), "a refused append writes nothing");
    let appended = log.append(LogTarget::new(&basin, &stream, 0), &records(&[r#"{"a":1}"#, r#"{"a":2}"#])).await;
    assert_eq!(appended, Ok(Append::Appended { start: 0, end: 2 }));
    assert_eq!(
        log.append(LogTarget::new(&basin, &stream, 0), &records(&["again"])).await,
        Ok(Append::TailMismatch { tail: 2 })
    );
    assert_eq!(
        log.append(LogTarget::new(&basin, &stream, 5), &records(&["ahead"])).await,
        Ok(Append::TailMismatch { tail: 2 })
    );
    assert_eq!(
        log.append(LogTarget::new(&basin, &stream, 2), &records(&["3"])).await,
        Ok(Append::Appended { start: 2, end: 3 })
    );
    assert_eq!(log.check_tail(&basin, &stream).await, Ok(3));
    // Streams are independent.
    assert_eq!(log.check_tail(&basin, &session_stream("s2")).await, Ok(0));
}

#[tokio::test]
async fn the_memory_store_keeps_the_contract() {
    contract(&MemoryLog::new()).await;
}

#[tokio::test]
async fn the_redis_store_keeps_the_contract_and_its_layout() {
    let Some(url) = redis_url() else { return };
    let log = connect(&url, "contract").await;
    contract(&log).await;
    // Entry ids carry the log position, so readers can resume by position.
    let basin = BasinName::for_tenant("tenant", 1);
    let key = log.stream_key(&basin, &session_stream("s1"));
    let mut raw = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let entries: Vec<(String, Vec<(String, String)>)> =
        redis::cmd("XRANGE").arg(&key).arg("-").arg("+").query_async(&mut raw).await.unwrap();
    let expected = [("0-1", r#"{"a":1}"#), ("0-2", r#"{"a":2}"#), ("0-3", "3")];
    assert_eq!(entries.len(), 3);
    for ((id, fields), (want_id, want)) in entries.iter().zip(expected) {
        assert_eq!((id.as_str(), fields.as_slice()), (want_id, &[("record".to_owned(), want.to_owned())][..]));
    }
    // A lost stream reads as never written; a stream someone else wrote into is refused.
    let _: () = raw.del(&key).await.unwrap();
    assert_eq!(log.check_tail(&basin, &session_stream("s1")).await, Ok(0));
    let foreign = log.stream_key(&basin, &session_stream("foreign"));
    let _: String = raw.xadd(&foreign, "*", &[("x", "y")]).await.unwrap();
    assert!(matches!(
        log.append(LogTarget::new(&basin, &session_stream("foreign"), 0), &records(&["1"])).await,
        Err(LogError::Rejected(_))
    ));
    let _: () = raw.del(&[log.basin_key(&basin), foreign]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_appends_at_the_same_tail_write_once() {
    let Some(url) = redis_url() else { return };
    let log = Arc::new(connect(&url, "race").await);
    let basin = BasinName::for_tenant("racer", 1);
    log.ensure_basin(&basin).await.unwrap();
    let stream = session_stream("s");
    for round in 0..20u64 {
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let (log, basin, stream) = (log.clone(), basin.clone(), stream.clone());
                tokio::spawn(async move {
                    log.append(LogTarget::new(&basin, &stream, round), &records(&[&format!("{round}-{w}")]))
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut won = 0;
        for writer in writers {
            match writer.await.unwrap() {
                Append::Appended { start, end } => {
                    assert_eq!((start, end), (round, round + 1));
                    won += 1;
                }
                Append::TailMismatch { tail } => assert_eq!(tail, round + 1),
            }
        }
        assert_eq!(won, 1, "exactly one writer wins round {round}");
    }
    assert_eq!(log.check_tail(&basin, &stream).await, Ok(20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_fills_redis_logs_exactly_once_through_disconnects_and_a_slot_drop() {
    let Some(url) = redis_url() else { return };
    let log = Arc::new(connect(&url, "relay").await);
    let record = MemoryRecord::new();
    let start =
        || Relay::start(Box::new(record.source()), Arc::new(record.clone()), log.clone(), RelayOptions::default());
    let mut relay = start();
    let mut n = 0;
    for round in 0..40 {
        let bodies: Vec<(String, String, String)> = (0..5)
            .map(|i| {
                n += 1;
                (format!("t{}", (round + i) % 3), format!("s{}", (round * 7 + i) % 11), format!(r#"{{"n":{n}}}"#))
            })
            .collect();
        record.commit_events(bodies.iter().map(|(t, s, b)| (t.as_str(), s.as_str(), b.as_str())));
        match round {
            10 => record.disconnect(),
            20 => record.drop_slot(),
            25 => {
                relay.stop().await;
                relay = start();
            }
            30 => record.duplicate_next_delivery(),
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let status = relay.status();
        if status.active
            && status.pending_rows == 0
            && record.retained() == 0
            && record.reconcile_pending() == Some(false)
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the relay did not settle: {status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    relay.stop().await;
    let mut raw = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    for (tenant, session) in record.sessions() {
        let rows = record.session_rows(&tenant, &session);
        let key = log.stream_key(&BasinName::for_tenant(&tenant, 1), &session_stream(&session));
        let entries: Vec<(String, Vec<(String, String)>)> =
            redis::cmd("XRANGE").arg(&key).arg("-").arg("+").query_async(&mut raw).await.unwrap();
        let logged: Vec<&str> = entries.iter().map(|(_, fields)| fields[0].1.as_str()).collect();
        let expected: Vec<&str> = rows.iter().map(|row| &*row.body).collect();
        assert_eq!(logged, expected, "{tenant}/{session}");
    }
}
