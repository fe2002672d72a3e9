//! Checkpoint jitter through the plane, on a paused clock: streams opened in the same instant
//! take their interval checkpoints at spread moments, each within `[interval, interval + bound]`
//! of its first undurable push, the same moments again under the same seed, and all at exactly
//! the interval without jitter.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::plane_with;
use twoplane_stream::*;

const STREAMS: usize = 24;
const INTERVAL_MS: u64 = 500;

async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

/// Open `STREAMS` streams together, push one unit into each, and return the millisecond (after
/// the push) at which each one's first checkpoint landed.
async fn first_checkpoints(jitter_ms: Option<u64>, seed: u64) -> Vec<u64> {
    let mem = Arc::new(MemoryTarget::new());
    let ids: Vec<String> = (0..STREAMS).map(|i| format!("s{i}")).collect();
    for id in &ids {
        mem.insert_message(id);
    }
    let plane = plane_with(mem.clone(), |o| {
        o.chars = 1_000;
        o.interval_ms = INTERVAL_MS;
        o.interval_jitter_ms = jitter_ms;
        o.jitter_seed = Some(seed);
    });
    let mut handles = Vec::new();
    for id in &ids {
        handles.push(plane.open(id).await.unwrap());
    }
    for h in &handles {
        h.push("x").unwrap();
    }
    settle().await;
    let mut landed = vec![None; STREAMS];
    for ms in 0..=2 * INTERVAL_MS {
        for (i, id) in ids.iter().enumerate() {
            if landed[i].is_none() && mem.row(id).unwrap().seq == 1 {
                landed[i] = Some(ms);
            }
        }
        tokio::time::advance(Duration::from_millis(1)).await;
        settle().await;
    }
    landed.into_iter().map(|t| t.expect("every stream checkpointed within two intervals")).collect()
}

#[tokio::test(start_paused = true)]
async fn deadlines_spread_within_the_bound_and_repeat_under_a_seed() {
    let bound = 200;
    let times = first_checkpoints(Some(bound), 7).await;
    // A checkpoint is seen at most one step (1 ms) after its deadline.
    for t in &times {
        assert!((INTERVAL_MS..=INTERVAL_MS + bound + 1).contains(t), "a checkpoint at {t} ms: {times:?}");
    }
    let mut distinct = times.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() >= STREAMS / 2, "streams opened together still checkpoint together: {times:?}");
    let spread = distinct.last().unwrap() - distinct.first().unwrap();
    assert!(spread >= bound / 2, "the checkpoints span only {spread} ms: {times:?}");

    assert_eq!(first_checkpoints(Some(bound), 7).await, times, "the same seed draws the same deadlines");
    assert_ne!(first_checkpoints(Some(bound), 8).await, times, "the seed changes nothing");
}

#[tokio::test(start_paused = true)]
async fn without_jitter_every_stream_checkpoints_at_the_interval() {
    let times = first_checkpoints(Some(0), 7).await;
    assert!(times.iter().all(|t| (INTERVAL_MS..=INTERVAL_MS + 1).contains(t)), "{times:?}");
}

#[test]
fn a_jitter_beyond_the_interval_is_refused() {
    let options = PlaneOptions {
        interval_ms: 100,
        interval_jitter_ms: Some(101),
        ..PlaneOptions::default().with_authorizer(Arc::new(AllowAll))
    };
    let e = Plane::new(options, Arc::new(MemoryTarget::new())).unwrap_err();
    assert_eq!(e.kind(), PlaneErrorKind::InvalidOptions);
    assert!(e.message().contains("interval_jitter_ms"), "{e}");
}
