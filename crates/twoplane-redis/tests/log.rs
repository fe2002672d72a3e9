//! The Streams relay against a real Redis (`TWOPLANE_REDIS_URL`; skipped without it): replay
//! from any retained offset, joins at random offsets and moments, the retained floor, streams
//! that start after their reader, garbage entries, and a stream id produced twice.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use twoplane_core::message::MessageFrame as Frame;
use twoplane_redis::{LogOptions, LogRelay, RedisRelayOptions};
use twoplane_stream::RelayPhase;

const LIMIT: Duration = Duration::from_secs(30);

fn options(test: &str) -> RedisRelayOptions {
    RedisRelayOptions {
        prefix: prefix(test),
        first_frame_timeout_ms: 3_000,
        idle_timeout_ms: 5_000,
        ..Default::default()
    }
}

async fn relay(url: &str, options: &RedisRelayOptions, log: LogOptions) -> Arc<LogRelay> {
    Arc::new(LogRelay::connect(url, options.clone(), log).await.expect("connect to Redis"))
}

async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap()
}

/// The frame JSON of the last entry of the log at `key` (empty when there is none).
async fn last_frame(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> String {
    let last: redis::streams::StreamRangeReply =
        redis::cmd("XREVRANGE").arg(key).arg("+").arg("-").arg("COUNT").arg(1).query_async(conn).await.unwrap();
    last.ids.first().and_then(|e| e.get::<String>("frame")).unwrap_or_default()
}

/// Wait until the writer appended the stream's `end` (publishing is asynchronous: `close`
/// returns when the store has the text, not when Redis has the frames).
async fn wait_for_end(url: &str, key: &str) {
    let mut conn = raw(url).await;
    for _ in 0..200 {
        if last_frame(&mut conn, key).await.contains("\"type\":\"end\"") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the end never reached {key}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_stream_replays_from_any_offset() {
    let Some(url) = redis_url() else { return };
    let options = options("log-replay");
    let a = plane(store(&["s"]), relay(&url, &options, LogOptions::default()).await, |_| {});
    let (errors, hook) = recorder();
    let b = plane(store(&[]), relay(&url, &options, LogOptions::default()).await, |o| o.on_relay_error = Some(hook));

    let h = a.open("s").await.unwrap();
    let mut rng = Rng::new(11);
    let mut produced = Vec::new();
    for i in 0..120 {
        let d = delta(&mut rng, i);
        produced.extend(units(&d));
        h.push(&d).unwrap();
        if i % 30 == 0 {
            h.flush().await.unwrap();
        }
    }
    h.close().await.unwrap();
    let len = produced.len() as u64;
    // Every offset class: the start, inside a chunk, inside a surrogate pair, chunk boundaries,
    // the end, and past the end.
    let mut offsets: Vec<u64> = (0..=len).step_by(37).collect();
    offsets.extend([1, 2, len - 1, len, len + 3]);
    if let Some(pair) = produced.windows(2).position(|w| (0xD800..0xDC00).contains(&w[0])) {
        offsets.push(pair as u64 + 1);
    }
    for from in offsets {
        let got = read_all(b.subscribe(&(), "s", from).await.unwrap(), from, LIMIT).await;
        assert_eq!(got.ending(), Ending::End, "from {from}: {:?}", got.frames.last());
        assert_eq!(got.check(&produced), produced, "from {from}");
        if let Frame::End { seq, .. } = *got.frames[got.frames.len() - 1] {
            assert_eq!(seq, len);
        }
    }
    assert!(errors.lock().unwrap().is_empty(), "{:?}", errors.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_join_at_random_offsets_and_moments() {
    let Some(url) = redis_url() else { return };
    let options = options("log-random");
    let a = plane(store(&["s"]), relay(&url, &options, LogOptions::default()).await, |_| {});
    let (errors, hook) = recorder();
    let b = plane(store(&[]), relay(&url, &options, LogOptions::default()).await, |o| o.on_relay_error = Some(hook));

    let h = a.open("s").await.unwrap();
    let mut rng = Rng::new(42);
    let mut produced = Vec::new();
    let mut readers = Vec::new();
    for i in 0..400 {
        let d = delta(&mut rng, i);
        produced.extend(units(&d));
        h.push(&d).unwrap();
        if rng.chance(5) {
            // A reader that holds some prefix: its durable view, or anything up to what exists.
            let from = match rng.below(3) {
                0 => h.durable_seq(),
                1 => rng.below(h.seq() + 1),
                _ => h.seq(),
            };
            let sub = b.subscribe(&(), "s", from).await.unwrap();
            readers.push(tokio::spawn(read_all(sub, from, LIMIT)));
        }
        if rng.chance(10) {
            tokio::time::sleep(Duration::from_millis(rng.below(4))).await;
        }
    }
    h.close().await.unwrap();
    assert!(readers.len() >= 10, "the seed joins often enough");
    for r in readers {
        let got = r.await.unwrap();
        assert_eq!(got.ending(), Ending::End, "from {}: {:?}", got.from, got.frames.last());
        assert_eq!(got.check(&produced), produced);
    }
    assert!(errors.lock().unwrap().is_empty(), "{:?}", errors.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_below_the_retained_floor_is_stale() {
    let Some(url) = redis_url() else { return };
    let options = options("log-floor");
    let log = LogOptions { max_len: 10, ..LogOptions::default() };
    let relay_a = relay(&url, &options, log.clone()).await;
    let key = relay_a.key("s");
    let a = plane(store(&["s"]), relay_a, |_| {});
    let b = plane(store(&[]), relay(&url, &options, log).await, |_| {});
    let h = a.open("s").await.unwrap();
    let mut produced = Vec::new();
    // `MAXLEN ~` trims whole nodes (100 entries by default), so produce well past that.
    for i in 0..1_000 {
        let d = format!("{} ", i % 10);
        produced.extend(units(&d));
        h.push(&d).unwrap();
    }
    h.close().await.unwrap();
    // (A reader racing the trimming may also end `stale`, after a few chunks; that is legal but
    // not what this test is about.)
    wait_for_end(&url, &key).await;
    let len = produced.len() as u64;
    let early = read_all(b.subscribe(&(), "s", 0).await.unwrap(), 0, LIMIT).await;
    assert_eq!(early.frames.len(), 1, "a bare stale: {:?}", early.frames);
    assert!(matches!(*early.frames[0], Frame::Stale { floor_seq, .. } if floor_seq > 0 && floor_seq < len));
    let recent = read_all(b.subscribe(&(), "s", len - 4).await.unwrap(), len - 4, LIMIT).await;
    assert_eq!(recent.ending(), Ending::End);
    assert_eq!(recent.check(&produced), produced);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_may_arrive_before_the_stream_and_an_unknown_one_ends_absent() {
    let Some(url) = redis_url() else { return };
    let options = RedisRelayOptions { first_frame_timeout_ms: 1_500, ..options("log-early") };
    let a = plane(store(&["s"]), relay(&url, &options, LogOptions::default()).await, |_| {});
    let b = plane(store(&[]), relay(&url, &options, LogOptions::default()).await, |_| {});

    // Before the producer even opens: the key does not exist yet.
    let early = tokio::spawn(read_all(b.subscribe(&(), "s", 0).await.unwrap(), 0, LIMIT));
    let nobody = tokio::spawn(read_all(b.subscribe(&(), "nobody", 0).await.unwrap(), 0, LIMIT));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let h = a.open("s").await.unwrap();
    h.push("first ").unwrap();
    h.push("tokens").unwrap();
    h.close().await.unwrap();
    let got = early.await.unwrap();
    assert_eq!(got.ending(), Ending::End);
    assert_eq!(got.check(&units("first tokens")), units("first tokens"));
    let got = nobody.await.unwrap();
    assert_eq!(got.frames.iter().map(|f| (**f).clone()).collect::<Vec<_>>(), vec![Frame::Absent]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_entry_expires_the_log() {
    let Some(url) = redis_url() else { return };
    let options = options("log-ttl");
    let log = LogOptions { end_ttl_ms: 5_000, live_ttl_ms: 60_000, ..LogOptions::default() };
    let relay_a = relay(&url, &options, log).await;
    let key = relay_a.key("s");
    let a = plane(store(&["s"]), relay_a, |_| {});
    let h = a.open("s").await.unwrap();
    h.push("x").unwrap();
    h.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut conn = raw(&url).await;
    let live: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.unwrap();
    assert!(live > 5_000 && live <= 60_000, "while live: {live}");
    h.close().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ended: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.unwrap();
    assert!(ended > 0 && ended <= 5_000, "after the end: {ended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_that_is_not_a_frame_is_reported_not_passed_on() {
    let Some(url) = redis_url() else { return };
    let options = options("log-garbage");
    let relay_a = relay(&url, &options, LogOptions::default()).await;
    let key = relay_a.key("s");
    let a = plane(store(&["s"]), relay_a, |_| {});
    let (errors, hook) = recorder();
    let b = plane(store(&[]), relay(&url, &options, LogOptions::default()).await, |o| o.on_relay_error = Some(hook));
    let h = a.open("s").await.unwrap();
    h.push("fine ").unwrap();
    h.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut conn = raw(&url).await;
    let _: String = redis::cmd("XADD")
        .arg(&key)
        .arg("*")
        .arg("gen")
        .arg("feedfacefeedface")
        .arg("frame")
        .arg("{\"type\":\"chunk\",\"from\":5}")
        .query_async(&mut conn)
        .await
        .unwrap();
    h.push("after").unwrap();
    h.close().await.unwrap();
    // A reader replaying across the bad entry stops there, with the text before it.
    let got = read_all(b.subscribe(&(), "s", 0).await.unwrap(), 0, LIMIT).await;
    assert_eq!(got.ending(), Ending::Stale);
    assert_eq!(got.check(&units("fine after")), units("fine "));
    let errors = errors.lock().unwrap();
    assert!(errors.iter().any(|(p, m)| *p == RelayPhase::Frames && m.contains("not a frame")), "{errors:?}");
}

/// A stream id produced twice (the first producer died before its first checkpoint, and the
/// row was opened again elsewhere): a reader of the first production never gets the second's
/// text spliced on, and a reader that comes later replays only the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_production_is_never_spliced_onto_the_first() {
    let Some(url) = redis_url() else { return };
    let options = options("log-regen");
    let first = plane(store(&["s"]), relay(&url, &options, LogOptions::default()).await, |_| {});
    let b = plane(store(&[]), relay(&url, &options, LogOptions::default()).await, |_| {});
    let h1 = first.open("s").await.unwrap();
    h1.push("the first production, ").unwrap();
    let reader = tokio::spawn(read_all(b.subscribe(&(), "s", 0).await.unwrap(), 0, LIMIT));
    h1.push("cut short").unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The producer dies without a seal.
    std::mem::forget(h1);

    let second = plane(store(&["s"]), relay(&url, &options, LogOptions::default()).await, |_| {});
    let h2 = second.open("s").await.unwrap();
    h2.push("a different answer").unwrap();
    h2.close().await.unwrap();

    let got = reader.await.unwrap();
    assert_eq!(got.ending(), Ending::Stale, "{:?}", got.frames);
    let first_text = units("the first production, cut short");
    assert_eq!(got.check(&first_text), first_text);
    let later = read_all(b.subscribe(&(), "s", 0).await.unwrap(), 0, LIMIT).await;
    assert_eq!(later.ending(), Ending::End);
    assert_eq!(later.check(&units("a different answer")), units("a different answer"));
}

/// `drain` waits for the writer (`Relay::flush`): once it returns, the last entry of every stream
/// it sealed is that stream's `end`, with nothing still queued in the process. Without the wait a
/// SIGTERM exits with the `end` frames queued, and readers on other instances sit until their
/// idle timeout and end `stale`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_returns_once_the_relay_wrote_every_end() {
    let Some(url) = redis_url() else { return };
    let options = options("log-drain");
    let relay = relay(&url, &options, LogOptions::default()).await;
    let ids: Vec<String> = (0..20).map(|i| format!("d{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let a = plane(store(&refs), relay.clone(), |_| {});
    let mut handles = Vec::new();
    for id in &ids {
        let h = a.open(id).await.unwrap();
        // Enough queued frames that the writer is still busy when the seals are done.
        for i in 0..100 {
            h.push(&format!("{i} ")).unwrap();
        }
        handles.push(h);
    }
    let report = a.drain().await;
    assert_eq!(report.sealed.len(), ids.len(), "{:?}", report.failed);
    assert!(matches!(report.relay_flush, Some(Ok(()))), "{:?}", report.relay_flush);
    // No waiting here: drain's return is the promise.
    let mut conn = raw(&url).await;
    for id in &ids {
        let frame = last_frame(&mut conn, &relay.key(id)).await;
        assert!(
            frame.contains(r#""type":"end""#) && frame.contains("interrupted"),
            "{id}: the last entry in Redis when drain returned is {frame:?}"
        );
    }
}
