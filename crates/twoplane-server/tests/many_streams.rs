//! Many conversations on one instance (docs/server.md, "The store: group commit"): while a
//! thousand streams produce and checkpoint at once over the producer API, `/readyz` and a
//! stream's status keep answering within 100 ms (SQLite's reads run on their own connection,
//! beside the group-committed writer), and every stream's store ends with exactly its text.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::SinkExt;
use http_body_util::StreamBody;
use hyper::body::Frame;

mod common;

use common::process::raise_open_files;
use common::producer::{get, open, post, send, start, stored_text};

const STREAMS: usize = 1_000;
const DELTAS: usize = 15;
const DELTA: &str = "ab€d";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_and_status_answer_within_100_ms_while_a_thousand_streams_checkpoint() {
    raise_open_files(3 * STREAMS + 256);
    let served = start().await;
    let addr = served.addr;
    let ids: Vec<String> = (0..STREAMS).map(|i| format!("conv-{i}")).collect();
    for group in ids.chunks(50) {
        futures::future::join_all(group.iter().map(|id| open(addr, id))).await;
    }

    // One streaming body per stream, fed a delta every 200 ms by one clock (a model's pace).
    let mut feeds = Vec::with_capacity(STREAMS);
    let mut bodies = Vec::with_capacity(STREAMS);
    for (i, id) in ids.iter().enumerate() {
        if i % 50 == 49 {
            // Connections arrive as conversations do, not all in one instant (the listener's
            // accept queue is finite).
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let (feed, rx) = futures::channel::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(DELTAS + 1);
        feeds.push(feed);
        let body = StreamBody::new(rx);
        let path = format!("/v1/streams/{id}/body");
        bodies.push(tokio::spawn(async move { send(addr, &path, body).await }));
    }
    let feeder = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        for _ in 0..DELTAS {
            tick.tick().await;
            for feed in &mut feeds {
                feed.send(Ok(Frame::data(Bytes::from_static(DELTA.as_bytes())))).await.unwrap();
            }
        }
        // Dropping the feeds ends the bodies.
    });

    // Meanwhile: readiness and a status, every 50 ms, each timed. The slow ones are kept with
    // when they started (from the feed's start), so a failure says where in the feed it fell.
    let (mut slowest, mut probes, mut slow) = (Duration::ZERO, 0, Vec::new());
    let fed = Instant::now();
    while !feeder.is_finished() {
        for path in ["/readyz".to_string(), format!("/v1/streams/{}", ids[probes % STREAMS])] {
            let started = Instant::now();
            let (status, answer) = get(addr, &path).await;
            let took = started.elapsed();
            slowest = slowest.max(took);
            if took >= Duration::from_millis(50) {
                slow.push(format!("{path} took {took:?}, {:?} into the feed", started - fed));
            }
            assert_eq!(status, 200, "{path}: {answer}");
        }
        probes += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    feeder.await.unwrap();
    println!("{probes} probe pairs while {STREAMS} streams checkpointed; the slowest answer took {slowest:?}");
    assert!(probes >= 20, "the probes ran throughout ({probes})");
    assert!(
        slowest < Duration::from_millis(100),
        "a probe took {slowest:?}; every probe of 50 ms or more (a delta is fed to every stream \
         every 200 ms from 0): {slow:#?}"
    );

    for body in bodies {
        let (status, answer) = body.await.unwrap();
        assert_eq!(status, 200, "{answer}");
    }
    let want = DELTA.repeat(DELTAS);
    for group in ids.chunks(50) {
        let closed = futures::future::join_all(
            group.iter().map(|id| async move { post(addr, &format!("/v1/streams/{id}/close"), "").await }),
        );
        for (status, answer) in closed.await {
            assert_eq!(status, 200, "{answer}");
        }
    }
    for id in &ids {
        assert_eq!(stored_text(addr, id).await, want, "{id}");
    }
}
