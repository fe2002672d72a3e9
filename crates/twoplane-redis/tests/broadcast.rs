//! The pub/sub relay against a real Redis (`TWOPLANE_REDIS_URL`; skipped without it): plane A
//! hosts a stream and publishes through the relay, plane B hosts nothing and serves its readers
//! by attaching.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use twoplane_core::message::MessageFrame as Frame;
use twoplane_redis::{BroadcastRelay, RedisRelayOptions};
use twoplane_stream::{Plane, RelayPhase};

const LIMIT: Duration = Duration::from_secs(20);

async fn relay(url: &str, options: &RedisRelayOptions) -> Arc<BroadcastRelay> {
    Arc::new(BroadcastRelay::connect(url, options.clone()).await.expect("connect to Redis"))
}

fn options(test: &str) -> RedisRelayOptions {
    RedisRelayOptions {
        prefix: prefix(test),
        first_frame_timeout_ms: 1_500,
        idle_timeout_ms: 5_000,
        ..Default::default()
    }
}

async fn subscribers(url: &str, channel: &str) -> i64 {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let reply: Vec<redis::Value> =
        redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query_async(&mut conn).await.unwrap();
    match reply.get(1) {
        Some(redis::Value::Int(n)) => *n,
        other => panic!("unexpected PUBSUB NUMSUB reply {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_at_the_live_position_get_every_frame() {
    let Some(url) = redis_url() else { return };
    let options = options("bc-live");
    let a = plane(store(&["s"]), relay(&url, &options).await, |_| {});
    let (errors, hook) = recorder();
    let b = plane(store(&[]), relay(&url, &options).await, |o| o.on_relay_error = Some(hook));

    let h = a.open("s").await.unwrap();
    // Subscribed before the first token: the live position is 0.
    let mut readers = Vec::new();
    for _ in 0..3 {
        let sub = b.subscribe(&(), "s", 0).await.unwrap();
        assert!(sub.is_relayed());
        readers.push(tokio::spawn(read_all(sub, 0, LIMIT)));
    }
    let mut rng = Rng::new(7);
    let mut produced = Vec::new();
    for i in 0..300 {
        let d = delta(&mut rng, i);
        produced.extend(units(&d));
        h.push(&d).unwrap();
        if i == 150 {
            // A surrogate pair split across two pushes: each chunk carries a lone surrogate,
            // which must cross Redis as it is.
            h.push_units(&[0xD83D]).unwrap();
            h.push_units(&[0xDE00]).unwrap();
            produced.extend([0xD83D, 0xDE00]);
        }
        if i % 25 == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    h.close().await.unwrap();
    for r in readers {
        let got = r.await.unwrap();
        assert_eq!(got.ending(), Ending::End, "{:?}", got.frames.last());
        assert_eq!(got.check(&produced), produced);
        assert!(got.chunks() >= 300, "every push arrived as its own chunk");
    }
    assert!(errors.lock().unwrap().is_empty(), "{:?}", errors.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_behind_the_live_position_ends_stale() {
    let Some(url) = redis_url() else { return };
    let options = options("bc-late");
    let a = plane(store(&["s"]), relay(&url, &options).await, |_| {});
    let b = plane(store(&[]), relay(&url, &options).await, |_| {});
    let h = a.open("s").await.unwrap();
    h.push("already produced, ").unwrap();
    let live = h.seq();
    h.flush().await.unwrap();

    // Behind: it holds nothing, the channel only has what comes next.
    let behind = b.subscribe(&(), "s", 0).await.unwrap();
    // Exactly at the live position: everything it lacks is still to come.
    let at_live = b.subscribe(&(), "s", live).await.unwrap();
    let behind = tokio::spawn(read_all(behind, 0, LIMIT));
    let at_live = tokio::spawn(read_all(at_live, live, LIMIT));
    h.push("and more ").unwrap();
    h.push("to come").unwrap();
    h.close().await.unwrap();
    let produced = units("already produced, and more to come");

    let behind = behind.await.unwrap();
    assert_eq!(behind.frames.len(), 1, "a bare stale: {:?}", behind.frames);
    // The floor is where the channel's text starts: the live position when it joined. The
    // durable length is what it saw on the channel (the flush's `durable` went out before).
    assert!(
        matches!(*behind.frames[0], Frame::Stale { floor_seq, durable_seq } if floor_seq == live && durable_seq <= live),
        "{:?}",
        behind.frames
    );
    behind.check(&produced);
    let at_live = at_live.await.unwrap();
    assert_eq!(at_live.ending(), Ending::End);
    assert_eq!(at_live.check(&produced), produced);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_stream_ends_absent_and_its_channel_is_released() {
    let Some(url) = redis_url() else { return };
    let options = RedisRelayOptions { first_frame_timeout_ms: 300, ..options("bc-absent") };
    let relay_b = relay(&url, &options).await;
    let b: Plane = plane(store(&[]), relay_b.clone(), |_| {});
    let channel = relay_b.channel("nobody");
    let started = tokio::time::Instant::now();
    let got = read_all(b.subscribe(&(), "nobody", 4).await.unwrap(), 4, LIMIT).await;
    assert_eq!(got.frames.iter().map(|f| (**f).clone()).collect::<Vec<_>>(), vec![Frame::Absent]);
    assert!(started.elapsed() >= Duration::from_millis(300));
    // The reader is gone: so is its subscription (the unsubscribe runs in the background).
    for _ in 0..50 {
        if subscribers(&url, &channel).await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(subscribers(&url, &channel).await, 0);

    // A reader that hangs up early releases it too, while a second one keeps it.
    let first = b.subscribe(&(), "nobody", 0).await.unwrap();
    let second = b.subscribe(&(), "nobody", 0).await.unwrap();
    assert_eq!(subscribers(&url, &channel).await, 1, "one Redis subscription serves both");
    drop(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(subscribers(&url, &channel).await, 1);
    drop(second);
    for _ in 0..50 {
        if subscribers(&url, &channel).await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(subscribers(&url, &channel).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_that_is_not_a_frame_is_reported_not_passed_on() {
    let Some(url) = redis_url() else { return };
    let options = options("bc-garbage");
    let relay_a = relay(&url, &options).await;
    let channel = relay_a.channel("s");
    let a = plane(store(&["s"]), relay_a, |_| {});
    let (errors, hook) = recorder();
    let b = plane(store(&[]), relay(&url, &options).await, |o| o.on_relay_error = Some(hook));
    let h = a.open("s").await.unwrap();
    let sub = b.subscribe(&(), "s", 0).await.unwrap();
    let reader = tokio::spawn(read_all(sub, 0, LIMIT));
    h.push("fine ").unwrap();
    h.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: i64 = redis::cmd("PUBLISH")
        .arg(&channel)
        .arg("feedfacefeedface\n{\"type\":\"chunk\"")
        .query_async(&mut conn)
        .await
        .unwrap();
    h.push("never seen").unwrap();
    h.close().await.unwrap();
    let got = reader.await.unwrap();
    assert_eq!(got.ending(), Ending::Stale);
    assert_eq!(got.check(&units("fine never seen")), units("fine "));
    let errors = errors.lock().unwrap();
    assert!(
        errors.iter().any(|(p, m)| *p == RelayPhase::Frames && m.contains("not a frame")),
        "the bad payload was reported: {errors:?}"
    );
}
