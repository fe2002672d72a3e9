//! Behaviour of the plane against the in-memory store: options, authorization, joins, the
//! checkpoint policy, honesty of flush and seal, cancellation, drain, linger, overflow, relay.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::{plane_with, units, Reader};
use futures::StreamExt;
use twoplane_stream::*;
// Every frame the plane hands out is a message frame (docs/contract.md §8).
use twoplane_core::message::MessageKind;
use twoplane_stream::MessageFrame as Frame;

const ID: &str = "m1";

fn memory() -> Arc<MemoryTarget> {
    let m = Arc::new(MemoryTarget::new());
    m.insert_message(ID);
    m
}

async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

async fn reader(plane: &Plane, from: u64, produced: &[u16]) -> Reader {
    Reader::new(plane.subscribe(&(), ID, from).await.expect("allowed"), from, produced)
}

// ---------------------------------------------------------------- options

#[test]
fn options_that_do_nothing_are_refused() {
    let tables: Arc<dyn DurableTarget> = Arc::new(MemoryTarget::new());
    let allow = || PlaneOptions::default().with_authorizer(Arc::new(AllowAll));
    let refused = |o: PlaneOptions, t: Arc<dyn DurableTarget>| Plane::new(o, t).unwrap_err();

    let e = refused(PlaneOptions::default(), tables.clone());
    assert_eq!(e.kind(), PlaneErrorKind::InvalidOptions);
    assert!(e.message().contains("authorizer"), "{e}");

    let e = refused(PlaneOptions { retain_chars: Some(10), ..allow() }, tables.clone());
    assert!(e.message().contains("retain_chars"), "{e}");

    let e = refused(PlaneOptions { host_id: Some("h".into()), ..allow() }, tables.clone());
    assert!(e.message().contains("host"), "{e}");

    let e = refused(PlaneOptions { relay_attach_timeout_ms: Some(5), ..allow() }, tables.clone());
    assert!(e.message().contains("without a relay"), "{e}");

    struct Nothing;
    #[async_trait]
    impl Relay for Nothing {
        fn topology(&self) -> RelayTopology {
            RelayTopology::default()
        }
    }
    let e = refused(allow().with_relay(Arc::new(Nothing)), tables.clone());
    assert!(e.message().contains("neither publish nor attach"), "{e}");

    struct PublishOnly;
    #[async_trait]
    impl Relay for PublishOnly {
        fn topology(&self) -> RelayTopology {
            RelayTopology { publish: true, attach: false }
        }
    }
    let e = refused(
        PlaneOptions { relay_attach_timeout_ms: Some(5), ..allow().with_relay(Arc::new(PublishOnly)) },
        tables.clone(),
    );
    assert!(e.message().contains("does not attach"), "{e}");

    for bad in [PlaneOptions { chars: 0, ..allow() }, PlaneOptions { max_queued_frames: 0, ..allow() }] {
        assert_eq!(refused(bad, tables.clone()).kind(), PlaneErrorKind::InvalidOptions);
    }

    // The same options are fine where they do something.
    let callback: Arc<dyn DurableTarget> = Arc::new(CallbackTarget::new(|_| async { Ok(CommitReply::default()) }));
    Plane::new(PlaneOptions { retain_chars: Some(10), host_id: Some("h".into()), ..allow() }, callback).unwrap();
    let hosted: Arc<dyn DurableTarget> = Arc::new(MemoryTarget::with_columns(true, true));
    Plane::new(PlaneOptions { host_id: Some("h".into()), ..allow() }, hosted).unwrap();
}

// ---------------------------------------------------------------- authorization

#[tokio::test(start_paused = true)]
async fn a_denial_looks_the_same_whether_or_not_the_stream_exists() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = calls.clone();
    let auth = authorize_with(move |user: &String, stream_id: &str, _from| {
        seen.lock().unwrap().push(stream_id.to_owned());
        user == "alice"
    });
    let m = memory();
    let plane = plane_with(m.clone(), |o| o.authorizer = Some(auth));
    let h = plane.open(ID).await.unwrap();
    h.push("secret").unwrap();

    let hosted = plane.subscribe(&"mallory".to_string(), ID, 0).await.unwrap_err();
    let missing = plane.subscribe(&"mallory".to_string(), "nope", 0).await.unwrap_err();
    assert_eq!(hosted.kind(), PlaneErrorKind::Forbidden);
    assert_eq!(missing.kind(), PlaneErrorKind::Forbidden);
    assert_eq!(hosted.message().replace(ID, "X"), missing.message().replace("nope", "X"));
    // A user of the wrong type is denied, not a crash.
    assert_eq!(plane.subscribe(&7u32, ID, 0).await.unwrap_err().kind(), PlaneErrorKind::Forbidden);
    // The authorizer was asked about the missing stream too: it runs before any lookup.
    assert_eq!(*calls.lock().unwrap(), vec![ID.to_string(), "nope".to_string()]);

    let mut ok = Reader::new(plane.subscribe(&"alice".to_string(), ID, 0).await.unwrap(), 0, &units("secret"));
    ok.drain();
    assert_eq!(ok.acc, units("secret"));
    let mut absent = plane.subscribe(&"alice".to_string(), "nope", 0).await.unwrap();
    assert_eq!(absent.next().await.as_deref(), Some(&Frame::Absent));
    assert!(absent.next().await.is_none());
    h.close().await.unwrap();
}

// ---------------------------------------------------------------- joins

#[tokio::test(start_paused = true)]
async fn a_join_is_one_atomic_replay_at_any_offset() {
    let m = memory();
    let plane = plane_with(m.clone(), |o| o.chars = 1_000_000);
    let h = plane.open(ID).await.unwrap();
    h.push("hello ").unwrap();
    h.flush().await.unwrap();
    h.push("wörld 😀").unwrap();
    let produced = units("hello wörld 😀");
    let durable = h.durable_seq();
    assert_eq!(durable, 6);

    for from in [0, durable, produced.len() as u64, produced.len() as u64 + 50] {
        let mut r = reader(&plane, from, &produced).await;
        r.drain();
        let at = from.min(produced.len() as u64);
        match &*r.frames[0] {
            Frame::Open { from: f, seq, durable_seq, ended, .. } => {
                assert_eq!((*f, *seq, *durable_seq, *ended), (at, produced.len() as u64, durable, false));
            }
            other => panic!("expected open, got {other:?}"),
        }
        let kinds: Vec<_> = r.frames.iter().map(|f| f.kind()).collect();
        let mut expected = vec![MessageKind::Open];
        if at < produced.len() as u64 {
            expected.push(MessageKind::Chunk);
        }
        if durable > at {
            expected.push(MessageKind::Durable);
        }
        assert_eq!(kinds, expected, "join at {from}");
        assert_eq!(r.acc, produced);
    }

    // Live frames follow the replay with nothing missed.
    let mut r = reader(&plane, 3, &produced).await;
    h.push("!").unwrap();
    h.close().await.unwrap();
    r.read_to_end().await;
    assert_eq!(r.acc, units("hello wörld 😀!"));
    match r.terminal() {
        Some(Frame::End { seq, status: StreamStatus::Complete, error: None }) => assert_eq!(*seq, 15),
        other => panic!("expected end, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_sealed_stream_lingers_then_is_evicted() {
    let m = memory();
    let plane = plane_with(m.clone(), |o| o.linger_ms = 1_000);
    let h = plane.open(ID).await.unwrap();
    h.push("abc").unwrap();
    h.fail("model overloaded").await.unwrap();

    let mut r = reader(&plane, 1, &units("abc")).await;
    r.drain();
    let kinds: Vec<_> = r.frames.iter().map(|f| f.kind()).collect();
    assert_eq!(kinds, [MessageKind::Open, MessageKind::Chunk, MessageKind::Durable, MessageKind::End]);
    assert!(matches!(&*r.frames[0], Frame::Open { ended: true, .. }));
    match r.terminal() {
        Some(Frame::End { seq: 3, status: StreamStatus::Error, error: Some(e) }) => assert_eq!(e, "model overloaded"),
        other => panic!("unexpected terminal {other:?}"),
    }
    let row = m.row(ID).unwrap();
    assert_eq!((row.status.as_deref(), row.error.as_deref()), (Some("error"), Some("model overloaded")));

    tokio::time::sleep(Duration::from_millis(1_001)).await;
    settle().await;
    assert!(!plane.is_hosted(ID));
    let mut gone = plane.subscribe(&(), ID, 0).await.unwrap();
    assert_eq!(gone.next().await.as_deref(), Some(&Frame::Absent));
}

#[tokio::test(start_paused = true)]
async fn a_slow_subscriber_is_dropped_with_stale_and_the_producer_never_waits() {
    let m = memory();
    let plane = plane_with(m.clone(), |o| {
        o.max_queued_frames = 8;
        o.chars = 1_000_000;
    });
    let h = plane.open(ID).await.unwrap();
    let mut slow = reader(&plane, 0, &[]).await;
    let mut fast = reader(&plane, 0, &[]).await;
    let mut produced = Vec::new();
    for i in 0..100 {
        let delta = format!("{i},");
        h.push(&delta).unwrap();
        produced.extend(units(&delta));
        fast.drain();
    }
    slow.drain();
    assert!(matches!(slow.terminal(), Some(Frame::Stale { floor_seq: 0, durable_seq: 0 })), "{:?}", slow.frames);
    assert!(slow.frames.len() <= 8 + 1);
    h.close().await.unwrap();
    fast.read_to_end().await;
    assert_eq!(fast.acc, produced);
    assert!(matches!(fast.terminal(), Some(Frame::End { status: StreamStatus::Complete, .. })));
}

/// One SSE read of everything `sub` owes now (a noop waker: the caller pushes before reading).
fn sse_now(sub: &mut Subscription) -> Option<SseBatch> {
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    match sub.poll_sse(&mut cx, 1 << 16) {
        std::task::Poll::Ready(batch) => batch,
        std::task::Poll::Pending => None,
    }
}

#[tokio::test(start_paused = true)]
async fn subscribers_over_every_shard_see_every_frame_and_share_one_encoding() {
    // A stream spreads its subscribers over eight fan-out shards, round robin: 24 subscribers
    // fill each shard three times; every third reads SSE bytes, so each shard has one.
    let plane = plane_with(memory(), |o| o.chars = 1_000_000);
    let h = plane.open(ID).await.unwrap();
    let mut readers = Vec::new();
    let mut sse = Vec::new();
    for i in 0..24 {
        if i % 3 == 0 {
            let mut sub = plane.subscribe(&(), ID, 0).await.unwrap();
            assert_eq!(sse_now(&mut sub).map(|b| b.frames), Some(1), "the open frame");
            sse.push(sub);
        } else {
            readers.push(reader(&plane, 0, &[]).await);
        }
    }
    let mut produced = Vec::new();
    for (round, delta) in ["a", "bé", "c😀"].into_iter().enumerate() {
        h.push(delta).unwrap();
        produced.extend(units(delta));
        let batches: Vec<SseBatch> = sse.iter_mut().map(|s| sse_now(s).expect("one event each")).collect();
        let first = &batches[0].bytes;
        for b in &batches {
            assert_eq!(b.frames, 1);
            assert_eq!(b.bytes, *first);
            assert_eq!(b.bytes.as_ptr(), first.as_ptr(), "round {round}: one encoding for every shard");
        }
        for r in &mut readers {
            r.drain();
            assert_eq!(r.acc, produced);
        }
    }
    // Readers leave shard by shard; the rest still get everything.
    readers.truncate(5);
    h.push("d").unwrap();
    produced.extend(units("d"));
    for r in &mut readers {
        r.drain();
        assert_eq!(r.acc, produced);
    }
    // Everyone leaves; a frame then reaches nobody, and a later joiner (shard 0 again after
    // 24 joins) still gets the replay and every frame after it.
    drop(readers);
    drop(sse);
    h.push("e").unwrap();
    produced.extend(units("e"));
    let mut late = reader(&plane, 0, &produced).await;
    late.drain();
    assert_eq!(late.acc, produced, "the replay");
    h.push("f").unwrap();
    produced.extend(units("f"));
    late.drain();
    assert_eq!(late.acc, produced, "a frame after the join reaches the late reader");
    h.close().await.unwrap();
    late.read_to_end().await;
    assert_eq!(late.acc, produced);
    assert!(matches!(late.terminal(), Some(Frame::End { status: StreamStatus::Complete, .. })));
}

#[tokio::test(start_paused = true)]
async fn a_join_below_the_retained_floor_is_a_bare_stale() {
    let store = Arc::new(Mutex::new(Vec::<u16>::new()));
    let s = store.clone();
    let target = CallbackTarget::new(move |input| {
        let s = s.clone();
        async move {
            if let CommitInput::Append { text, seq, .. } = input {
                s.lock().unwrap().extend_from_slice(text.units());
                return Ok(CommitReply { seq: Some(seq), cancel_requested: false });
            }
            Ok(CommitReply::default())
        }
    });
    let plane = plane_with(Arc::new(target), |o| o.retain_chars = Some(4));
    let h = plane.open(ID).await.unwrap();
    h.push("0123456789").unwrap();
    h.flush().await.unwrap();
    let mut r = reader(&plane, 2, &units("0123456789")).await;
    r.drain();
    assert_eq!(r.frames.len(), 1);
    assert_eq!(*r.frames[0], Frame::Stale { floor_seq: 6, durable_seq: 10 });
    let mut ok = reader(&plane, 6, &units("0123456789")).await;
    ok.drain();
    assert_eq!(ok.acc, units("0123456789"));
    h.close().await.unwrap();
}

// ---------------------------------------------------------------- checkpoint policy

#[tokio::test(start_paused = true)]
async fn checkpoints_follow_chars_interval_and_flush() {
    let m = memory();
    let plane = plane_with(m.clone(), |o| {
        o.chars = 10;
        o.interval_ms = 500;
        // The exact interval; its jitter has its own test (tests/jitter.rs).
        o.interval_jitter_ms = Some(0);
    });
    let h = plane.open(ID).await.unwrap();
    h.push("abcd").unwrap();
    settle().await;
    assert_eq!(m.row(ID).unwrap().seq, 0, "below the threshold, before the interval");
    tokio::time::sleep(Duration::from_millis(499)).await;
    settle().await;
    assert_eq!(m.row(ID).unwrap().seq, 0);
    tokio::time::sleep(Duration::from_millis(2)).await;
    settle().await;
    assert_eq!(m.row(ID).unwrap().seq, 4, "the interval fired");

    h.push("0123456789").unwrap();
    settle().await;
    assert_eq!(m.row(ID).unwrap().seq, 14, "the threshold fired at once");

    h.push("xy").unwrap();
    assert_eq!(h.flush().await.unwrap(), 16);
    assert_eq!(m.row(ID).unwrap().seq, 16);
    assert_eq!(m.row(ID).unwrap().durable_text(), units("abcd0123456789xy"));
    h.close().await.unwrap();
    let row = m.row(ID).unwrap();
    assert_eq!((row.body, row.seq, row.chunks.len()), (units("abcd0123456789xy"), 16, 0));
}

/// A producer's checked push (the producer API's append): refused whole on a wrong offset, a
/// cancel or a seal, and always answered with where the stream stood right after it.
#[tokio::test(start_paused = true)]
async fn a_checked_push_is_refused_whole_and_says_where_the_stream_stands() {
    let m = memory();
    let plane = plane_with(m.clone(), |o| o.interval_jitter_ms = Some(0));
    let h = plane.open(ID).await.unwrap();
    let at = |seq, durable_seq| Position { seq, durable_seq };
    assert_eq!(h.push_checked("ab", Some(0)).unwrap(), at(2, 0));
    assert_eq!(h.push_checked("cd", None).unwrap(), at(4, 0));
    for asked in [0, 3, 5] {
        let r = h.push_checked("x", Some(asked)).unwrap_err();
        assert!(matches!(r.why, Refusal::Offset { asked: a } if a == asked), "{r:?}");
        assert_eq!(r.at, at(4, 0), "nothing appended at offset {asked}");
    }
    assert_eq!(h.flush().await.unwrap(), 4);
    assert_eq!(h.push_checked("", Some(4)).unwrap(), at(4, 4), "an empty append only answers");
    assert_eq!(h.push_checked("e", Some(4)).unwrap(), at(5, 4));
    assert!(plane.cancel(ID));
    let r = h.push_checked("f", Some(5)).unwrap_err();
    assert!(matches!(r.why, Refusal::Cancelled), "{r:?}");
    assert_eq!(r.at.seq, 5);
    assert_eq!(h.seq(), 5);

    // Sealed: refused before the offset is looked at.
    m.insert_message("m2");
    let h2 = plane.open("m2").await.unwrap();
    h2.push_checked("abc", Some(0)).unwrap();
    h2.close().await.unwrap();
    let r = h2.push_checked("d", Some(0)).unwrap_err();
    assert!(matches!(r.why, Refusal::Sealed), "{r:?}");
    assert_eq!(r.at, at(3, 3));
}

/// Producers racing at one offset: exactly one lands, and every answer is a length the stream
/// had (each read under the lock of its own push).
#[test]
fn checked_pushes_racing_at_one_offset_land_once() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let m = memory();
        let plane = plane_with(m.clone(), |_| {});
        let h = Arc::new(plane.open(ID).await.unwrap());
        for round in 0..50u64 {
            let landed: Vec<_> = std::thread::scope(|s| {
                let racers: Vec<_> = (0..4).map(|_| s.spawn(|| h.push_checked("ab", Some(round * 2)))).collect();
                racers.into_iter().map(|r| r.join().unwrap()).collect()
            });
            let oks: Vec<_> = landed.iter().filter_map(|r| r.as_ref().ok()).collect();
            assert_eq!(oks.len(), 1, "round {round}: {landed:?}");
            assert_eq!(oks[0].seq, round * 2 + 2);
            for r in landed.iter().filter_map(|r| r.as_ref().err()) {
                assert!(matches!(r.why, Refusal::Offset { .. }), "{r:?}");
                assert!(r.at.seq >= round * 2, "{r:?}");
            }
        }
        assert_eq!(h.seq(), 100);
        h.close().await.unwrap();
    });
}

#[tokio::test(start_paused = true)]
async fn a_lost_acknowledgement_is_absorbed_by_the_read_back() {
    let m = memory();
    let faulty = Arc::new(FaultyTarget::new(m.clone()));
    let plane = plane_with(faulty.clone(), |o| o.retries = 0);
    let h = plane.open(ID).await.unwrap();
    h.push("landed").unwrap();
    faulty.inject(FaultOp::Append, Fault::LoseAck);
    assert_eq!(h.flush().await.unwrap(), 6, "the read-back confirmed what the lost ack hid");
    h.push(" more").unwrap();
    assert_eq!(h.flush().await.unwrap(), 11);
    let row = m.row(ID).unwrap();
    assert_eq!(row.durable_text(), units("landed more"), "no duplicated slice");
    h.close().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_flush_whose_text_never_landed_is_rejected() {
    let m = memory();
    let faulty = Arc::new(FaultyTarget::new(m.clone()));
    let errors = Arc::new(AtomicUsize::new(0));
    let seen = errors.clone();
    let plane = plane_with(faulty.clone(), |o| {
        o.retries = 2;
        o.on_checkpoint_error = Some(Arc::new(move |_, _| {
            seen.fetch_add(1, Ordering::SeqCst);
        }));
    });
    let h = plane.open(ID).await.unwrap();
    h.push("doomed").unwrap();
    faulty.inject_n(FaultOp::Append, Fault::FailCommit, 3);
    faulty.inject(FaultOp::Probe, Fault::FailReadBack);
    let e = h.flush().await.unwrap_err();
    assert_eq!(e.kind(), PlaneErrorKind::Store);
    assert_eq!(h.durable_seq(), 0);
    assert_eq!(errors.load(Ordering::SeqCst), 1, "the stall is reported once");
    // The text is still produced and the next flush lands it.
    assert_eq!(h.flush().await.unwrap(), 6);
    h.close().await.unwrap();
    assert_eq!(m.row(ID).unwrap().body, units("doomed"));
}

#[tokio::test(start_paused = true)]
async fn a_seal_supersedes_a_stalled_checkpoint() {
    let m = memory();
    let faulty = Arc::new(FaultyTarget::new(m.clone()));
    let plane = plane_with(faulty.clone(), |o| o.chars = 4);
    let h = plane.open(ID).await.unwrap();
    faulty.inject(FaultOp::Append, Fault::Delay(Duration::from_secs(3600)));
    h.push("stalled text").unwrap();
    settle().await;
    let started = tokio::time::Instant::now();
    h.close().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(1), "the seal did not wait for the stalled round");
    let row = m.row(ID).unwrap();
    assert_eq!((row.body, row.status.as_deref()), (units("stalled text"), Some("complete")));
}

/// A stream on `m` (through a fault injector) whose seal gives up after `deadline_ms`: `abc`
/// pushed and durable, then `def` pushed and not yet.
async fn abc_durable_def_not(m: Arc<MemoryTarget>, deadline_ms: u64) -> (Arc<FaultyTarget>, Plane, StreamHandle) {
    let faulty = Arc::new(FaultyTarget::new(m));
    let plane = plane_with(faulty.clone(), |o| {
        o.retries = 1;
        o.seal_deadline_ms = deadline_ms;
    });
    let h = plane.open(ID).await.unwrap();
    h.push("abc").unwrap();
    h.flush().await.unwrap();
    h.push("def").unwrap();
    (faulty, plane, h)
}

#[tokio::test(start_paused = true)]
async fn a_seal_that_never_lands_is_rejected_and_end_reports_the_durable_length() {
    let (faulty, plane, h) = abc_durable_def_not(memory(), 5_000).await;
    let mut r = reader(&plane, 0, &units("abc")).await;
    faulty.inject_n(FaultOp::Close, Fault::FailCommit, 1_000);
    let started = tokio::time::Instant::now();
    let e = h.close().await.unwrap_err();
    // It kept trying until its deadline (the retry count is for checkpoints), and says which
    // prefix is durable.
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(5), "{took:?}");
    assert!(faulty.calls(FaultOp::Close) > 4, "{} attempts", faulty.calls(FaultOp::Close));
    assert_eq!(e.kind(), PlaneErrorKind::NotDurable);
    assert!(e.message().contains("the first 3 of 6 code units are durable"), "{e}");
    r.read_to_end().await;
    assert!(matches!(r.terminal(), Some(Frame::End { seq: 3, .. })), "{:?}", r.terminal());
    assert_eq!(r.acc, units("abcdef"), "the live plane still delivered everything");
    assert_eq!(h.flush().await.unwrap_err().kind(), PlaneErrorKind::NotDurable);
    // A second close reports the same outcome rather than sealing again.
    assert_eq!(h.close().await.unwrap_err().kind(), PlaneErrorKind::NotDurable);
    assert_eq!(h.push("x").unwrap_err().kind(), PlaneErrorKind::StreamClosed);
}

#[tokio::test(start_paused = true)]
async fn a_stream_whose_seal_never_landed_goes_on_from_its_durable_end_once_the_store_is_back() {
    // A table with a host column: the row names the host that holds it.
    let m = Arc::new(MemoryTarget::with_columns(true, true));
    m.insert_message(ID);
    let (faulty, plane, h) = abc_durable_def_not(m.clone(), 2_000).await;
    // The store is down for longer than the seal deadline: the close answers not_durable.
    faulty.inject_n(FaultOp::Close, Fault::FailCommit, 1_000);
    faulty.inject_n(FaultOp::Append, Fault::FailCommit, 1_000);
    faulty.inject_n(FaultOp::Reopen, Fault::FailCommit, 1_000);
    assert_eq!(h.close().await.unwrap_err().kind(), PlaneErrorKind::NotDurable);
    let mut ended = reader(&plane, 0, &[]).await;
    ended.read_to_end().await;
    assert!(matches!(ended.terminal(), Some(Frame::End { seq: 3, .. })), "{:?}", ended.terminal());
    // The row is still this host's (`streaming`), holding the first 3 units.
    let row = m.row(ID).unwrap();
    assert_eq!((row.status.as_deref(), row.seq), (Some("streaming"), 3));
    // While the store is down, going on changes nothing.
    assert!(plane.reopen(ID, 3).await.is_err());
    faulty.clear();
    // Another host cannot take the row; this one goes on from what is durable, and only there.
    let other = plane_with(m.clone(), |o| o.host_id = Some("other".into()));
    assert_eq!(other.reopen(ID, 3).await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);
    assert_eq!(plane.reopen(ID, 6).await.unwrap_err().kind(), PlaneErrorKind::WrongOffset);
    let h = plane.reopen(ID, 3).await.unwrap();
    assert_eq!(h.seq(), 3);
    // The reader that got `end` at 3 resumes from there.
    let mut on = reader(&plane, 3, &units("abc")).await;
    h.push("def").unwrap();
    h.push("ghi").unwrap();
    h.close().await.unwrap();
    on.read_to_end().await;
    assert_eq!(on.acc, units("abcdefghi"), "the producer's text once, nothing missing");
    let row = m.row(ID).unwrap();
    assert_eq!((row.status.as_deref(), row.body.clone()), (Some("complete"), units("abcdefghi")));
}

#[tokio::test(start_paused = true)]
async fn a_seal_outlasts_a_store_outage_and_readers_end_only_once_it_landed() {
    let m = memory();
    let faulty = Arc::new(FaultyTarget::new(m.clone()));
    let plane = plane_with(faulty.clone(), |_| {});
    let h = Arc::new(plane.open(ID).await.unwrap());
    h.push("abc").unwrap();
    h.flush().await.unwrap();
    let mut r = reader(&plane, 0, &units("abc")).await;
    h.push("def").unwrap();
    // The store refuses every write for 20 s (at most 2 s between attempts: about 14 of them).
    let outage = Duration::from_secs(20);
    faulty.inject_n(FaultOp::Close, Fault::FailCommit, 1_000);
    faulty.inject_n(FaultOp::Append, Fault::FailCommit, 1_000);
    let closing = tokio::spawn({
        let h = h.clone();
        async move { h.close().await }
    });
    let started = tokio::time::Instant::now();
    while started.elapsed() < outage {
        tokio::time::sleep(Duration::from_millis(250)).await;
        r.drain();
        assert!(r.terminal().is_none(), "a reader got {:?} before the seal landed", r.terminal());
        assert!(m.row(ID).unwrap().status.as_deref() != Some("complete"));
    }
    faulty.clear();
    closing.await.unwrap().expect("the seal landed once the store was back");
    assert!(started.elapsed() < outage + Duration::from_secs(3), "at most 2 s between attempts");
    r.read_to_end().await;
    assert!(matches!(r.terminal(), Some(Frame::End { seq: 6, .. })), "{:?}", r.terminal());
    let row = m.row(ID).unwrap();
    assert_eq!((row.body, row.status.as_deref()), (units("abcdef"), Some("complete")));
}

#[tokio::test(start_paused = true)]
async fn pushes_are_refused_while_the_store_confirms_nothing_and_taken_again_after() {
    let m = memory();
    let faulty = Arc::new(FaultyTarget::new(m.clone()));
    let plane = plane_with(faulty.clone(), |o| {
        o.max_undurable_ms = 5_000;
        o.max_undurable_chars = 1_000;
    });
    let h = plane.open(ID).await.unwrap();
    h.push("ok").unwrap();
    h.flush().await.unwrap();
    faulty.inject_n(FaultOp::Append, Fault::FailCommit, 1_000);
    faulty.inject_n(FaultOp::Probe, Fault::FailReadBack, 1_000);
    // The size bound: text waiting plus the push may not pass 1,000 units.
    h.push(&"a".repeat(600)).unwrap();
    let e = h.push(&"b".repeat(401)).unwrap_err();
    assert_eq!(e.kind(), PlaneErrorKind::Backpressure);
    assert!(e.retry_after().is_some());
    assert_eq!(h.seq(), 602, "a refused push appends nothing");
    h.push(&"c".repeat(300)).unwrap();
    assert!(h.push("d").is_ok(), "within both bounds");
    // The age bound: 5 s since the first round the store did not answer (it started at once:
    // 600 units passed `chars`), with room left under the size bound.
    tokio::time::sleep(Duration::from_millis(5_100)).await;
    let e = h.push("e").unwrap_err();
    assert_eq!(e.kind(), PlaneErrorKind::Backpressure, "{e}");
    assert!(e.message().contains("901 code units are not durable"), "{e}");
    assert_eq!(h.seq(), 903);
    // The store is back: the next checkpoint lands everything and pushes are taken again.
    faulty.clear();
    assert_eq!(h.flush().await.unwrap(), 903);
    h.push("e").unwrap();
    h.close().await.unwrap();
    assert_eq!(m.row(ID).unwrap().body.len(), 904);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_checkpoints_rarely_on_purpose_is_never_refused_for_age() {
    let m = memory();
    let plane = plane_with(m.clone(), |o| {
        o.interval_ms = 1_000_000;
        o.chars = 1_000_000;
        o.max_undurable_ms = 1_000;
    });
    let h = plane.open(ID).await.unwrap();
    for _ in 0..10 {
        h.push("x").unwrap();
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    assert_eq!(h.durable_seq(), 0, "no round ran: nothing was asked of the store");
    h.close().await.unwrap();
    assert_eq!(m.row(ID).unwrap().body.len(), 10);
}

#[tokio::test(start_paused = true)]
async fn the_drain_waits_for_a_seal_within_its_own_bound() {
    let m = memory();
    let faulty = Arc::new(FaultyTarget::new(m.clone()));
    let plane = plane_with(faulty.clone(), |o| {
        o.seal_deadline_ms = 60_000;
        o.drain_seal_ms = Some(3_000);
    });
    let h = plane.open(ID).await.unwrap();
    h.push("abc").unwrap();
    h.flush().await.unwrap();
    h.push("def").unwrap();
    faulty.inject_n(FaultOp::Close, Fault::FailCommit, 1_000);
    faulty.inject_n(FaultOp::Append, Fault::FailCommit, 1_000);
    let started = tokio::time::Instant::now();
    let report = plane.drain().await;
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(4), "{took:?}");
    assert!(report.sealed.is_empty());
    let (id, e) = &report.failed[0];
    assert_eq!(id, ID);
    assert_eq!(e.kind(), PlaneErrorKind::NotDurable);
    assert!(e.message().contains("3 of 6 code units are durable"), "{e}");
    // The seal goes on: a store back before its own deadline still gets the whole text.
    faulty.clear();
    let e = h.close().await;
    assert!(e.is_ok(), "{e:?}");
    assert_eq!(m.row(ID).unwrap().body, units("abcdef"));
}

#[tokio::test(start_paused = true)]
async fn no_write_cuts_a_surrogate_pair() {
    let m = memory();
    let plane = plane_with(m.clone(), |o| o.chars = 1_000_000);
    let h = plane.open(ID).await.unwrap();
    let emoji = units("a😀");
    h.push_units(&emoji[..2]).unwrap(); // "a" + the high half
    let e = h.flush().await.unwrap_err();
    assert_eq!(e.kind(), PlaneErrorKind::NotDurable, "{e}");
    assert_eq!(m.row(ID).unwrap().durable_text(), units("a"), "the high half waits for its partner");
    h.push_units(&emoji[2..]).unwrap();
    assert_eq!(h.flush().await.unwrap(), 3);
    assert_eq!(m.row(ID).unwrap().durable_text(), emoji);
    for w in m.writes() {
        if let MemoryWrite::Append { from, seq, .. } = w {
            assert!(!common::inside_pair(&emoji, from as usize) && !common::inside_pair(&emoji, seq as usize));
        }
    }
    h.close().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_callback_target_sees_the_exact_code_units() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let target = CallbackTarget::new(move |input| {
        let s = s.clone();
        async move {
            s.lock().unwrap().push(input);
            Ok(CommitReply::default())
        }
    });
    let plane = plane_with(Arc::new(target), |_| {});
    let h = plane.open(ID).await.unwrap();
    let lone = [0x61, 0xDC00, 0x62, 0xD800];
    h.push_units(&lone).unwrap();
    h.close().await.unwrap();
    let inputs = seen.lock().unwrap().clone();
    assert!(matches!(&inputs[0], CommitInput::Open { stream_id, .. } if stream_id == ID));
    match inputs.last().unwrap() {
        CommitInput::Close { body, body_from: 0, seq: 4, status: StreamStatus::Complete, .. } => {
            assert_eq!(body.units(), &lone)
        }
        other => panic!("unexpected {other:?}"),
    }
}

// ---------------------------------------------------------------- cancel, drain, drop

/// An `on_cancel` hook that records the ids it is called with.
fn cancel_recorder() -> (CancelHook, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = seen.clone();
    (Arc::new(move |id: &str| into.lock().unwrap().push(id.to_owned())), seen)
}

#[tokio::test(start_paused = true)]
async fn a_cancel_read_back_stops_pump_and_close_seals_cancelled() {
    let m = memory();
    let (hook, told) = cancel_recorder();
    let plane = plane_with(m.clone(), |o| {
        o.chars = 8;
        o.on_cancel = Some(hook);
    });
    let h = plane.open(ID).await.unwrap();
    m.request_cancel(ID);
    let (tx, rx) = futures::channel::mpsc::unbounded::<String>();
    for _ in 0..4 {
        tx.unbounded_send("12345".into()).unwrap();
    }
    // The source never ends on its own: only the cancel can stop the pump.
    let pumped = tokio::time::timeout(Duration::from_secs(10), h.pump(rx)).await;
    assert!(pumped.is_ok(), "pump stopped on cancel");
    assert!(h.cancelled());
    assert_eq!(*told.lock().unwrap(), [ID], "the hook is told of a cancel read back, once");
    assert!(h.seq() >= 8 && h.seq() <= 20);
    h.close().await.unwrap();
    let row = m.row(ID).unwrap();
    assert_eq!((row.status.as_deref(), row.cancel), (Some("cancelled"), true));
    drop(tx);
    // A cancelled stream goes on from its end (a user who asked for more): the cancel flag is
    // cleared, so the continuation is not stopped by the old request.
    let at = row.seq;
    let h = plane.reopen(ID, at).await.unwrap();
    assert!(!m.row(ID).unwrap().cancel, "the claim clears the cancel flag");
    h.push(" and more").unwrap();
    h.close().await.unwrap();
    let row = m.row(ID).unwrap();
    assert_eq!((row.status.as_deref(), row.seq), (Some("complete"), at + 9));
    assert!(!h.cancelled());
    assert_eq!(told.lock().unwrap().len(), 1, "the continuation was not cancelled");
}

#[tokio::test(start_paused = true)]
async fn a_cancel_delivered_to_the_host_stops_a_quiet_stream_at_once() {
    let m = memory();
    let (hook, told) = cancel_recorder();
    let plane = plane_with(m.clone(), |o| {
        o.chars = 8;
        o.on_cancel = Some(hook);
    });
    let h = plane.open(ID).await.unwrap();
    h.push("abc").unwrap();
    assert!(!plane.cancel("not-hosted-here"));
    assert!(plane.cancel(ID));
    assert!(h.cancelled(), "seen at once, with no checkpoint in between");
    assert!(plane.cancel(ID), "still live: a second cancel is taken");
    assert_eq!(*told.lock().unwrap(), [ID], "the hook is told at once, and once");
    // No text flows, so no checkpoint would ever read a flag back: only this cancel stops it.
    let pumped = tokio::time::timeout(Duration::from_secs(10), h.pump(futures::stream::pending::<&str>())).await;
    assert!(pumped.is_ok(), "pump stopped on the cancel");
    h.close().await.unwrap();
    let row = m.row(ID).unwrap();
    assert_eq!((row.status.as_deref(), String::from_utf16_lossy(&row.body)), (Some("cancelled"), "abc".to_owned()));
    assert!(!plane.cancel(ID), "a sealed stream has nothing left to cancel");
}

#[tokio::test(start_paused = true)]
async fn a_cancel_after_the_seal_was_asked_for_changes_nothing() {
    let m = memory();
    let plane = plane_with(m.clone(), |o| o.chars = 8);
    let h = plane.open(ID).await.unwrap();
    h.push("abc").unwrap();
    let closing = h.close();
    tokio::pin!(closing);
    // The first poll asks for the seal; the checkpoint driver has not written it yet.
    assert!(futures::poll!(&mut closing).is_pending());
    assert!(!plane.cancel(ID), "the seal was already asked for");
    assert!(!h.cancelled());
    closing.await.unwrap();
    assert_eq!(m.row(ID).unwrap().status.as_deref(), Some("complete"));
}

#[tokio::test(start_paused = true)]
async fn drain_seals_every_live_stream_interrupted() {
    let m = memory();
    m.insert_message("m2");
    let plane = plane_with(m.clone(), |_| {});
    let a = plane.open(ID).await.unwrap();
    let b = plane.open("m2").await.unwrap();
    a.push("one").unwrap();
    b.push("two").unwrap();
    let mut r = reader(&plane, 0, &units("one")).await;
    let report = plane.drain().await;
    assert_eq!(report.sealed.len(), 2);
    assert!(report.failed.is_empty());
    for (id, body) in [(ID, "one"), ("m2", "two")] {
        let row = m.row(id).unwrap();
        assert_eq!((row.body, row.status.as_deref()), (units(body), Some("interrupted")));
    }
    r.read_to_end().await;
    assert!(matches!(r.terminal(), Some(Frame::End { status: StreamStatus::Interrupted, seq: 3, .. })));
    m.insert_message("m3");
    assert_eq!(plane.open("m3").await.unwrap_err().kind(), PlaneErrorKind::Draining);
    assert!(a.close().await.is_ok(), "closing after the drain reports the drain's seal");
}

#[tokio::test(start_paused = true)]
async fn dropping_a_handle_unsealed_seals_it_interrupted() {
    let m = memory();
    let plane = plane_with(m.clone(), |_| {});
    let h = plane.open(ID).await.unwrap();
    h.push("partial").unwrap();
    let mut r = reader(&plane, 0, &units("partial")).await;
    drop(h);
    r.read_to_end().await;
    assert!(matches!(r.terminal(), Some(Frame::End { status: StreamStatus::Interrupted, .. })));
    assert_eq!(m.row(ID).unwrap().body, units("partial"));
}

#[tokio::test(start_paused = true)]
async fn open_checks_the_row_and_refuses_a_second_producer() {
    let m = Arc::new(MemoryTarget::with_columns(true, true));
    let plane_a = plane_with(m.clone(), |o| o.host_id = Some("a".into()));
    let plane_b = plane_with(m.clone(), |o| o.host_id = Some("b".into()));
    assert_eq!(plane_a.open("missing").await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);
    m.insert_message(ID);
    let h = plane_a.open(ID).await.unwrap();
    assert_eq!(plane_a.open(ID).await.unwrap_err().kind(), PlaneErrorKind::AlreadyOpen);
    assert_eq!(plane_b.open(ID).await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);
    assert_eq!(m.row(ID).unwrap().host.as_deref(), Some("a"));
    h.push("x").unwrap();
    h.close().await.unwrap();
    // An advanced row is never resumed.
    assert_eq!(plane_b.open(ID).await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);
}

#[tokio::test(start_paused = true)]
async fn a_lost_acknowledgement_of_the_open_write_is_not_a_refusal() {
    let m = Arc::new(MemoryTarget::with_columns(true, false));
    m.insert_message(ID);
    let faulty = Arc::new(FaultyTarget::new(m.clone()));
    faulty.inject(FaultOp::Open, Fault::LoseAck);
    let plane = plane_with(faulty.clone(), |_| {});
    let h = plane.open(ID).await.unwrap();
    assert_eq!(faulty.calls(FaultOp::Open), 2);
    h.close().await.unwrap();
}

// ---------------------------------------------------------------- relay

#[derive(Default)]
struct RecordingRelay {
    published: Mutex<Vec<Frame>>,
    fail_publish: bool,
    attach: Mutex<Option<Vec<Result<Frame, String>>>>,
    hang: bool,
    dropped: Arc<AtomicUsize>,
}

struct DropFlag(Arc<AtomicUsize>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Relay for RecordingRelay {
    fn topology(&self) -> RelayTopology {
        RelayTopology { publish: true, attach: true }
    }

    fn publish(&self, _stream_id: &str, frame: &Frame) -> Result<(), RelayError> {
        self.published.lock().unwrap().push(frame.clone());
        if self.fail_publish {
            return Err("relay down".into());
        }
        Ok(())
    }

    async fn attach(&self, _stream_id: &str, _from: u64) -> Result<Option<FrameSource>, RelayError> {
        if self.hang {
            futures::future::pending::<()>().await;
        }
        let Some(frames) = self.attach.lock().unwrap().take() else { return Ok(None) };
        let flag = DropFlag(self.dropped.clone());
        let items = frames.into_iter().map(|r| r.map_err(RelayError::from));
        // The source stays open after its frames (a live pub/sub channel), so only a terminal,
        // a violation or the subscriber's drop ends it.
        let source = futures::stream::iter(items).chain(futures::stream::pending()).map(move |f| {
            let _keep = &flag;
            f
        });
        Ok(Some(source.boxed()))
    }
}

type Reported = Arc<Mutex<Vec<(RelayPhase, String)>>>;

fn relay_errors() -> (Reported, RelayErrorHook) {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let e = errors.clone();
    let hook: RelayErrorHook = Arc::new(move |info, err| e.lock().unwrap().push((info.phase, err.to_string())));
    (errors, hook)
}

#[tokio::test(start_paused = true)]
async fn publish_mirrors_every_frame_and_its_failures_never_reach_the_producer() {
    let m = memory();
    let relay = Arc::new(RecordingRelay { fail_publish: true, ..Default::default() });
    let (errors, hook) = relay_errors();
    let plane = plane_with(m.clone(), |o| {
        o.relay = Some(relay.clone());
        o.on_relay_error = Some(hook);
    });
    let h = plane.open(ID).await.unwrap();
    h.push("ab").unwrap();
    h.flush().await.unwrap();
    h.close().await.unwrap();
    let kinds: Vec<_> = relay.published.lock().unwrap().iter().map(|f| f.kind()).collect();
    assert_eq!(kinds, [MessageKind::Chunk, MessageKind::Durable, MessageKind::End]);
    assert_eq!(errors.lock().unwrap().len(), 3);
    assert!(errors.lock().unwrap().iter().all(|(p, _)| *p == RelayPhase::Publish));
}

#[tokio::test(start_paused = true)]
async fn an_attached_relay_is_conformed_and_bounded() {
    let relay = Arc::new(RecordingRelay::default());
    let (errors, hook) = relay_errors();
    let plane = plane_with(Arc::new(MemoryTarget::new()), |o| {
        o.relay = Some(relay.clone());
        o.on_relay_error = Some(hook);
        o.relay_attach_timeout_ms = Some(100);
    });
    let chunk = |from, s: &str| Ok(Frame::chunk(from, 0, from, s.into()).unwrap());

    // Good frames pass, a replayed span is absorbed, an open is synthesized.
    *relay.attach.lock().unwrap() = Some(vec![
        chunk(2, "cd"),
        chunk(2, "cd"),
        Ok(Frame::Durable { seq: 4 }),
        Ok(Frame::End { seq: 4, status: StreamStatus::Complete, error: None }),
    ]);
    let mut r = Reader::new(plane.subscribe(&(), "elsewhere", 2).await.unwrap(), 2, &units("ab"));
    r.read_to_end().await;
    let kinds: Vec<_> = r.frames.iter().map(|f| f.kind()).collect();
    assert_eq!(kinds, [MessageKind::Open, MessageKind::Chunk, MessageKind::Durable, MessageKind::End]);
    assert_eq!(r.acc, units("abcd"));

    // A gap is a violation: one stale, reported, and the source is dropped.
    *relay.attach.lock().unwrap() = Some(vec![chunk(2, "cd"), chunk(9, "zz")]);
    let mut r = Reader::new(plane.subscribe(&(), "elsewhere", 2).await.unwrap(), 2, &units("ab"));
    r.read_to_end().await;
    assert_eq!(r.terminal(), Some(&Frame::Stale { floor_seq: 4, durable_seq: 0 }));
    assert!(errors.lock().unwrap().iter().any(|(p, m)| *p == RelayPhase::Frames && m.contains("gap")));
    settle().await;
    assert_eq!(relay.dropped.load(Ordering::SeqCst), 2, "both finished sources were dropped");

    // A failing source is a stale too.
    *relay.attach.lock().unwrap() = Some(vec![chunk(0, "x"), Err("broken pipe".into())]);
    let mut r = Reader::new(plane.subscribe(&(), "elsewhere", 0).await.unwrap(), 0, &[]);
    r.read_to_end().await;
    assert_eq!(r.terminal(), Some(&Frame::Stale { floor_seq: 1, durable_seq: 0 }));

    // Dropping the subscription drops the source.
    *relay.attach.lock().unwrap() = Some(vec![chunk(0, "x")]);
    let sub = plane.subscribe(&(), "elsewhere", 0).await.unwrap();
    assert!(sub.is_relayed());
    settle().await;
    drop(sub);
    settle().await;
    assert_eq!(relay.dropped.load(Ordering::SeqCst), 4);

    // No source: absent.
    let mut none = plane.subscribe(&(), "elsewhere", 0).await.unwrap();
    assert_eq!(none.next().await.as_deref(), Some(&Frame::Absent));
}

#[tokio::test(start_paused = true)]
async fn a_relayed_reader_that_stops_draining_gets_stale() {
    let relay = Arc::new(RecordingRelay::default());
    let plane = plane_with(Arc::new(MemoryTarget::new()), |o| {
        o.relay = Some(relay.clone());
        o.max_queued_frames = 4;
    });
    let frames = (0..20).map(|i| Ok(Frame::chunk(i, 0, i, "x".into()).unwrap())).collect();
    *relay.attach.lock().unwrap() = Some(frames);
    let mut r = Reader::new(plane.subscribe(&(), "elsewhere", 0).await.unwrap(), 0, &[]);
    settle().await;
    r.drain();
    assert!(matches!(r.terminal(), Some(Frame::Stale { .. })), "{:?}", r.frames);
    assert!(r.frames.len() <= 4 + 1);
}

/// A relay between two planes: what one publishes (or a test feeds through `tx`), the one source
/// attached yields.
struct Pipe {
    tx: futures::channel::mpsc::UnboundedSender<Frame>,
    rx: Mutex<Option<futures::channel::mpsc::UnboundedReceiver<Frame>>>,
}

impl Pipe {
    fn new() -> Arc<Pipe> {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        Arc::new(Pipe { tx, rx: Mutex::new(Some(rx)) })
    }
}

#[async_trait]
impl Relay for Pipe {
    fn topology(&self) -> RelayTopology {
        RelayTopology { publish: true, attach: true }
    }

    fn publish(&self, _stream_id: &str, frame: &Frame) -> Result<(), RelayError> {
        self.tx.unbounded_send(frame.clone()).map_err(|e| RelayError::from(e.to_string()))
    }

    async fn attach(&self, _stream_id: &str, _from: u64) -> Result<Option<FrameSource>, RelayError> {
        Ok(self.rx.lock().unwrap().take().map(|rx| rx.map(Ok).boxed()))
    }
}

/// A plane whose relay source the test feeds frame by frame, as time goes, under a 16 ms write
/// interval and a queue bound of `max_queued` frames; and the feed.
fn relayed_display_plane(max_queued: usize) -> (Plane, futures::channel::mpsc::UnboundedSender<Frame>) {
    let pipe = Pipe::new();
    let feed = pipe.tx.clone();
    let plane = plane_with(memory(), |o| {
        o.relay = Some(pipe);
        o.write_interval_ms = 16;
        o.max_queued_frames = max_queued;
    });
    (plane, feed)
}

#[tokio::test(start_paused = true)]
async fn a_relayed_reader_is_written_at_the_display_rate_too() {
    let (plane, tx) = relayed_display_plane(DEFAULT_MAX_QUEUED_FRAMES);
    let mut sub = plane.subscribe(&(), "elsewhere", 0).await.unwrap();
    assert!(sub.is_relayed());
    let chunk = |from: u64, s: &str| Frame::chunk(from, 0, from, s.into()).unwrap();
    let event = |f: &Frame| twoplane_core::message::encode_message_event(f);
    // The first delta goes out at once, with the `open` the leg puts before it.
    tx.unbounded_send(chunk(0, "a")).unwrap();
    settle().await;
    let first = sse_now(&mut sub).expect("the first delta at once");
    assert_eq!(first.frames, 2, "open and the delta, in one write");
    assert!(first.bytes.ends_with(event(&chunk(0, "a")).as_bytes()));
    // Three more within the interval wait for its end, then come as one delta.
    for (i, delta) in ["b", "c", "d"].into_iter().enumerate() {
        tokio::time::advance(Duration::from_millis(2)).await;
        tx.unbounded_send(chunk(1 + i as u64, delta)).unwrap();
    }
    settle().await;
    assert!(sse_now(&mut sub).is_none(), "held until the interval ends");
    tokio::time::advance(Duration::from_millis(11)).await;
    settle().await;
    let merged = sse_now(&mut sub).expect("the interval's write");
    assert_eq!((merged.frames, &merged.bytes[..]), (1, event(&chunk(1, "bcd")).as_bytes()));
    // A delta after a quiet interval: at once, as without the interval.
    tokio::time::advance(Duration::from_millis(40)).await;
    tx.unbounded_send(chunk(4, "e")).unwrap();
    settle().await;
    assert_eq!(sse_now(&mut sub).map(|b| b.bytes), Some(event(&chunk(4, "e")).into_bytes().into()));
    // The end takes what is held with it, without waiting for the interval.
    tokio::time::advance(Duration::from_millis(2)).await;
    tx.unbounded_send(chunk(5, "f")).unwrap();
    settle().await;
    assert!(sse_now(&mut sub).is_none(), "held");
    let end = Frame::End { seq: 6, status: StreamStatus::Complete, error: None };
    tx.unbounded_send(end.clone()).unwrap();
    settle().await;
    let last = sse_now(&mut sub).expect("the held delta and the end");
    assert!(last.terminal);
    assert_eq!(last.bytes, [event(&chunk(5, "f")), event(&end)].concat().into_bytes());
}

#[tokio::test(start_paused = true)]
async fn a_relayed_readers_held_frames_are_bounded_by_its_queue() {
    let (plane, tx) = relayed_display_plane(4);
    let mut r = Reader::new(plane.subscribe(&(), "elsewhere", 0).await.unwrap(), 0, &[]);
    tx.unbounded_send(Frame::chunk(0, 0, 0, "x".into()).unwrap()).unwrap();
    settle().await;
    r.drain();
    let start = tokio::time::Instant::now();
    // Inside one interval, frames that do not merge (each delta followed by the store's
    // confirmation of it) and that the reader does not take: held only up to the queue's bound,
    // then queued, so the reader is ended `stale` now, as without the interval, not at the
    // interval's end with all of them held.
    for i in 1..10u64 {
        tx.unbounded_send(Frame::Durable { seq: i }).unwrap();
        tx.unbounded_send(Frame::chunk(i, 0, i, "x".into()).unwrap()).unwrap();
    }
    settle().await;
    r.drain();
    assert_eq!(tokio::time::Instant::now(), start, "no time passed");
    assert!(matches!(r.terminal(), Some(Frame::Stale { .. })), "{:?}", r.frames);
}

#[tokio::test(start_paused = true)]
async fn a_hung_attach_times_out_to_absent() {
    let relay = Arc::new(RecordingRelay { hang: true, ..Default::default() });
    let (errors, hook) = relay_errors();
    let plane = plane_with(Arc::new(MemoryTarget::new()), |o| {
        o.relay = Some(relay.clone());
        o.on_relay_error = Some(hook);
    });
    let started = tokio::time::Instant::now();
    let mut sub = plane.subscribe(&(), "elsewhere", 0).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(DEFAULT_RELAY_ATTACH_TIMEOUT_MS));
    assert_eq!(sub.next().await.as_deref(), Some(&Frame::Absent));
    assert!(errors.lock().unwrap()[0].1.contains("timed out"));
}

#[tokio::test(start_paused = true)]
async fn a_local_stream_wins_over_the_relay() {
    let relay = Arc::new(RecordingRelay::default());
    *relay.attach.lock().unwrap() = Some(vec![Ok(Frame::Absent)]);
    let m = memory();
    let plane = plane_with(m.clone(), |o| o.relay = Some(relay.clone()));
    let h = plane.open(ID).await.unwrap();
    let sub = plane.subscribe(&(), ID, 0).await.unwrap();
    assert!(!sub.is_relayed());
    assert!(relay.attach.lock().unwrap().is_some(), "attach was not consulted");
    h.close().await.unwrap();
}

// ---------------------------------------------------------------- display-rate writes

/// A plane writing at most once per 16 ms to each reader (`write_interval_ms`).
fn display_plane() -> Plane {
    plane_with(memory(), |o| {
        o.chars = 1_000_000;
        o.write_interval_ms = 16;
    })
}

#[tokio::test(start_paused = true)]
async fn a_fast_model_reaches_a_reader_in_one_merged_write_per_interval() {
    let plane = display_plane();
    let h = plane.open(ID).await.unwrap();
    let mut sub = plane.subscribe(&(), ID, 0).await.unwrap();
    assert_eq!(sse_now(&mut sub).map(|b| b.frames), Some(1), "the open frame");
    // The first delta after a quiet interval goes out at once, exactly as without the interval.
    h.push("a").unwrap();
    let first = sse_now(&mut sub).expect("the first delta at once");
    assert_eq!(first.frames, 1);
    let unmerged = twoplane_core::message::encode_message_event(&Frame::chunk(0, 0, 0, "a".into()).unwrap());
    assert_eq!(first.bytes, unmerged.as_bytes());
    // Three more within the interval wait for its end, then come as one chunk.
    for delta in ["b", "c", "d"] {
        tokio::time::advance(Duration::from_millis(2)).await;
        h.push(delta).unwrap();
    }
    settle().await;
    assert!(sse_now(&mut sub).is_none(), "held until the interval ends");
    tokio::time::advance(Duration::from_millis(11)).await;
    settle().await;
    let merged = sse_now(&mut sub).expect("the interval's write");
    assert_eq!(merged.frames, 1, "adjacent deltas of one part are one delta");
    let want = twoplane_core::message::encode_message_event(&Frame::chunk(1, 0, 1, "bcd".into()).unwrap());
    assert_eq!(merged.bytes, want.as_bytes(), "one event, its id at the group's end");
    // A slow model (deltas further apart than the interval) sees every delta at once.
    for (i, delta) in ["e", "f"].into_iter().enumerate() {
        tokio::time::advance(Duration::from_millis(40)).await;
        h.push(delta).unwrap();
        let b = sse_now(&mut sub).expect("at once");
        let want = twoplane_core::message::encode_message_event(
            &Frame::chunk(4 + i as u64, 0, 4 + i as u64, delta.into()).unwrap(),
        );
        assert_eq!(b.bytes, want.as_bytes());
    }
}

/// A checkpoint's `durable` frame gets no write of its own: it goes out in front of the next
/// delta, in that delta's write, or alone within one checkpoint interval when no delta comes.
#[tokio::test(start_paused = true)]
async fn a_durable_frame_rides_with_the_next_delta_or_goes_alone_after_an_interval() {
    let plane = plane_with(memory(), |o| {
        o.chars = 1_000_000;
        o.interval_ms = 500;
        o.interval_jitter_ms = Some(0);
        o.write_interval_ms = 16;
    });
    let h = plane.open(ID).await.unwrap();
    let mut sub = plane.subscribe(&(), ID, 0).await.unwrap();
    assert_eq!(sse_now(&mut sub).map(|b| b.frames), Some(1), "the open frame");
    h.push("ab").unwrap();
    assert_eq!(sse_now(&mut sub).map(|b| b.frames), Some(1), "the delta at once");
    assert_eq!(h.flush().await.unwrap(), 2);
    settle().await;
    assert!(sse_now(&mut sub).is_none(), "the durable frame waits for the next write");
    tokio::time::advance(Duration::from_millis(100)).await;
    settle().await;
    assert!(sse_now(&mut sub).is_none(), "no write of its own, past the display interval too");
    h.push("c").unwrap();
    let batch = sse_now(&mut sub).expect("the next delta at once");
    assert_eq!(batch.frames, 2, "the durable frame and the delta, one write");
    let want = [Frame::Durable { seq: 2 }, Frame::chunk(2, 0, 2, "c".into()).unwrap()]
        .iter()
        .map(twoplane_core::message::encode_message_event)
        .collect::<String>();
    assert_eq!(batch.bytes, want.as_bytes());
    // No delta after a checkpoint: the durable frame goes alone, within one checkpoint interval
    // (a flush armed for an earlier one may take it sooner).
    assert_eq!(h.flush().await.unwrap(), 3);
    settle().await;
    assert!(sse_now(&mut sub).is_none(), "not at once");
    tokio::time::advance(Duration::from_millis(501)).await;
    settle().await;
    let alone = sse_now(&mut sub).expect("alone after the interval");
    assert_eq!(alone.bytes, twoplane_core::message::encode_message_event(&Frame::Durable { seq: 3 }).as_bytes());
    h.close().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_join_and_the_end_come_after_what_is_held_and_nothing_is_lost_or_doubled() {
    let plane = display_plane();
    let h = plane.open(ID).await.unwrap();
    let mut early = reader(&plane, 0, &[]).await;
    early.drain();
    h.push("ab").unwrap();
    h.push("cd").unwrap(); // held
    let produced = units("abcd");
    // A joiner mid-interval: the held frame reaches the early reader first, and the joiner's
    // replay holds it (not the log, which would double it).
    let mut late = reader(&plane, 1, &produced).await;
    late.drain();
    assert_eq!(late.acc, produced);
    early.drain();
    assert_eq!(early.acc, produced, "the join published what was held");
    h.push("ef").unwrap();
    h.push("gh").unwrap(); // held again
    h.close().await.unwrap();
    early.read_to_end().await;
    late.read_to_end().await;
    let all = units("abcdefgh");
    assert_eq!(early.acc, all);
    assert_eq!(late.acc, all);
    assert!(matches!(early.terminal(), Some(Frame::End { status: StreamStatus::Complete, .. })));
}

mod display_schedules {
    use super::*;
    use proptest::prelude::*;

    /// Wait `gap` ms, then push the `i`th delta (`len` letters): `produced` and the push ends
    /// `ends` grow by it.
    async fn push_after(
        h: &StreamHandle,
        i: usize,
        len: usize,
        gap: u64,
        produced: &mut Vec<u16>,
        ends: &mut std::collections::BTreeSet<u64>,
    ) {
        tokio::time::advance(Duration::from_millis(gap)).await;
        settle().await;
        let delta: String = (0..len).map(|k| char::from(b'a' + ((i + k) % 26) as u8)).collect();
        h.push(&delta).unwrap();
        produced.extend(units(&delta));
        ends.insert(produced.len() as u64);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Any schedule of pushes, gaps and joins under a write interval: every reader, joined
        /// anywhere, folds exactly the produced text, and every event it got carries a resume
        /// point the unmerged stream also had (a chunk's end is a push's end).
        #[test]
        fn every_reader_folds_the_produced_text_from_resume_points_the_producer_made(
            steps in proptest::collection::vec((1usize..6, 0u64..40, any::<bool>()), 1..40),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
            rt.block_on(async {
                let plane = display_plane();
                let h = plane.open(ID).await.unwrap();
                let mut produced: Vec<u16> = Vec::new();
                let mut ends = std::collections::BTreeSet::from([0u64]);
                let mut readers = vec![reader(&plane, 0, &[]).await];
                for (i, (len, gap, join)) in steps.iter().enumerate() {
                    push_after(&h, i, *len, *gap, &mut produced, &mut ends).await;
                    if *join {
                        let from = (i as u64 * 7) % (produced.len() as u64 + 1);
                        readers.push(reader(&plane, from, &produced).await);
                    }
                    for r in &mut readers {
                        r.drain();
                    }
                }
                h.close().await.unwrap();
                for r in &mut readers {
                    r.read_to_end().await;
                    assert_eq!(r.acc, produced);
                    for f in &r.frames[1..] {
                        if let Frame::Chunk { seq, .. } = &**f {
                            assert!(ends.contains(seq), "a chunk ends at {seq}, where no push ended");
                        }
                    }
                }
            });
        }

        /// The same through the relay: a stream produced on one plane (writing every frame as it
        /// comes) and read on another, whose relay leg holds and merges under the interval. The
        /// relayed reader folds exactly the produced text, every chunk it got ends where a push
        /// ended, and it got no more chunks than there were pushes.
        #[test]
        fn a_relayed_reader_folds_the_produced_text_from_resume_points_the_producer_made(
            steps in proptest::collection::vec((1usize..6, 0u64..40), 1..40),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
            rt.block_on(async {
                let pipe = Pipe::new();
                let host = plane_with(memory(), |o| {
                    o.relay = Some(pipe.clone());
                    o.chars = 1_000_000;
                });
                let elsewhere = plane_with(Arc::new(MemoryTarget::new()), |o| {
                    o.relay = Some(pipe.clone());
                    o.write_interval_ms = 16;
                });
                let h = host.open(ID).await.unwrap();
                let mut r = reader(&elsewhere, 0, &[]).await;
                let mut produced: Vec<u16> = Vec::new();
                let mut ends = std::collections::BTreeSet::from([0u64]);
                for (i, (len, gap)) in steps.iter().enumerate() {
                    push_after(&h, i, *len, *gap, &mut produced, &mut ends).await;
                    r.drain();
                }
                h.close().await.unwrap();
                r.read_to_end().await;
                assert_eq!(r.acc, produced);
                let chunks: Vec<u64> = r.frames.iter().filter_map(|f| match &**f { Frame::Chunk { seq, .. } => Some(*seq), _ => None }).collect();
                assert!(chunks.iter().all(|seq| ends.contains(seq)), "chunks end at {chunks:?}, pushes at {ends:?}");
                assert!(chunks.len() <= steps.len());
            });
        }
    }
}

// ---------------------------------------------------------------- UI readers

fn ui_now(sub: &mut Subscription) -> Option<SseBatch> {
    sse_now(sub)
}

#[tokio::test(start_paused = true)]
async fn ui_readers_share_one_encoding_of_each_frame_and_end_with_done() {
    let plane = plane_with(memory(), |o| o.chars = 1_000_000);
    let h = plane.open(ID).await.unwrap();
    h.push("Hello").unwrap();
    // Two readers over different shards: one holding nothing, one holding "Hel".
    let mut fresh = plane.subscribe_ui(&(), ID, 0, true).await.unwrap();
    let mut held = plane.subscribe_ui(&(), ID, 3, true).await.unwrap();
    let first = String::from_utf8(ui_now(&mut fresh).unwrap().bytes.to_vec()).unwrap();
    assert!(first.starts_with("id: 0\ndata: {\"type\":\"start\",\"messageId\":\"m1\"}\n\n"), "{first}");
    assert!(
        first.ends_with("id: 5\ndata: {\"type\":\"text-delta\",\"id\":\"text-0\",\"delta\":\"Hello\"}\n\n"),
        "{first}"
    );
    let second = String::from_utf8(ui_now(&mut held).unwrap().bytes.to_vec()).unwrap();
    assert!(
        second.contains("\"delta\":\"Hel\"}\n\n")
            && second.ends_with("id: 5\ndata: {\"type\":\"text-delta\",\"id\":\"text-0\",\"delta\":\"lo\"}\n\n"),
        "{second}"
    );
    // A live delta: one encoding, shared.
    h.push(" world").unwrap();
    let (a, b) = (ui_now(&mut fresh).unwrap(), ui_now(&mut held).unwrap());
    assert_eq!(a.bytes, b.bytes);
    assert_eq!(a.bytes.as_ptr(), b.bytes.as_ptr(), "one encoding for every UI reader");
    assert_eq!(&a.bytes[..], b"id: 11\ndata: {\"type\":\"text-delta\",\"id\":\"text-0\",\"delta\":\" world\"}\n\n");
    h.close().await.unwrap();
    settle().await;
    let end = ui_now(&mut fresh).unwrap();
    assert!(end.terminal);
    assert!(end.bytes.ends_with(b"data: [DONE]\n\n"), "{:?}", end.bytes);
    assert_eq!(fresh.ui_outcome(), Some(UiOutcome { at: 11, ended: true, started: true }));
    // A UI join after the end is the whole answer at once.
    let mut late = plane.subscribe_ui(&(), ID, 11, true).await.unwrap();
    let all = ui_now(&mut late).unwrap();
    assert!(all.terminal && all.bytes.ends_with(b"data: [DONE]\n\n"));
}

#[tokio::test(start_paused = true)]
async fn a_ui_reader_that_overflows_ends_without_done_and_says_where_it_got_to() {
    let plane = plane_with(memory(), |o| {
        o.chars = 1_000_000;
        o.max_queued_frames = 8;
    });
    let h = plane.open(ID).await.unwrap();
    let mut slow = plane.subscribe_ui(&(), ID, 0, true).await.unwrap();
    assert!(ui_now(&mut slow).is_some(), "the replay");
    h.push("a").unwrap();
    assert!(ui_now(&mut slow).is_some());
    for _ in 0..20 {
        h.push("b").unwrap();
    }
    let mut last = None;
    while let Some(batch) = ui_now(&mut slow) {
        last = Some(batch);
    }
    assert!(!last.is_some_and(|b| b.bytes.ends_with(b"[DONE]\n\n")), "no [DONE] after an overflow");
    let outcome = slow.ui_outcome().unwrap();
    assert!(!outcome.ended && outcome.at >= 1, "{outcome:?}");
    // Continued from there, without a second `start`, it reads on to the end.
    let mut on = plane.subscribe_ui(&(), ID, outcome.at, false).await.unwrap();
    let rest = String::from_utf8(ui_now(&mut on).unwrap().bytes.to_vec()).unwrap();
    assert!(!rest.contains("\"start\""), "{rest}");
    assert!(rest.contains("id: 21\n"), "brought to the stream's length: {rest}");
}

#[tokio::test(start_paused = true)]
async fn a_ui_join_asks_the_authorizer_once_and_takes_a_proof_for_its_own_stream_only() {
    let calls = Arc::new(Mutex::new(0u32));
    let seen = calls.clone();
    let auth = authorize_with(move |user: &String, _stream_id: &str, _from| {
        *seen.lock().unwrap() += 1;
        user == "alice"
    });
    let plane = plane_with(memory(), |o| o.authorizer = Some(auth));
    let h = plane.open(ID).await.unwrap();
    h.push("Hello").unwrap();
    let denied = plane.authorize_read(&"mallory".to_string(), ID, 0).await.unwrap_err();
    assert_eq!(denied.kind(), PlaneErrorKind::Forbidden);
    // One question for a request: the proof is taken by the join without asking again.
    let proof = plane.authorize_read(&"alice".to_string(), ID, 0).await.unwrap();
    assert_eq!(proof.stream_id(), ID);
    let mut sub = plane.hosted_ui(ID).expect("hosted here").join(proof, 0, true).unwrap();
    assert!(ui_now(&mut sub).is_some_and(|b| b.bytes.starts_with(b"id: 0\ndata: {\"type\":\"start\"")));
    assert_eq!(*calls.lock().unwrap(), 2);
    // A proof for another stream joins nothing.
    let other = plane.authorize_read(&"alice".to_string(), "other", 0).await.unwrap();
    let refused = plane.hosted_ui(ID).unwrap().join(other, 0, true).unwrap_err();
    assert_eq!(refused.kind(), PlaneErrorKind::Forbidden);
    assert!(plane.hosted_ui("other").is_none());
}

// ---------------------------------------------------------------- a stream that goes on

#[tokio::test(start_paused = true)]
async fn an_ended_stream_goes_on_from_its_durable_end_on_the_same_coordinate() {
    let m = memory();
    let plane = plane_with(m.clone(), |o| o.chars = 1_000_000);
    let h = plane.open(ID).await.unwrap();
    h.push("Hello").unwrap();
    h.close().await.unwrap();
    // A reader that reached the end, and resumes from its offset later.
    let mut ended = reader(&plane, 0, &[]).await;
    ended.read_to_end().await;
    assert!(matches!(ended.terminal(), Some(Frame::End { seq: 5, .. })));

    // Wrong offsets change nothing; the right one goes on.
    for wrong in [0, 4, 6] {
        let e = plane.reopen(ID, wrong).await.unwrap_err();
        assert_eq!(e.kind(), PlaneErrorKind::WrongOffset, "{e}");
    }
    assert_eq!(m.row(ID).unwrap().status.as_deref(), Some("complete"));
    let h = plane.reopen(ID, 5).await.unwrap();
    assert_eq!((h.seq(), h.durable_seq()), (5, 5), "the coordinate goes on from the end");
    assert_eq!(plane.reopen(ID, 5).await.unwrap_err().kind(), PlaneErrorKind::AlreadyOpen);
    let row = m.row(ID).unwrap();
    assert_eq!(row.status.as_deref(), Some("streaming"));
    assert_eq!(row.durable_text(), units("Hello"), "the compacted row went back to chunk rows, whole");
    let mut on = reader(&plane, 5, &units("Hello")).await;
    h.push(" world").unwrap();
    h.close().await.unwrap();
    on.read_to_end().await;
    assert_eq!(on.acc, units("Hello world"));
    let row = m.row(ID).unwrap();
    assert_eq!((row.status.as_deref(), row.seq, row.body.clone()), (Some("complete"), 11, units("Hello world")));
    assert!(row.chunks.is_empty(), "compacted again at its new end");
    // A reader joining from 0 now sees one message.
    let mut all = reader(&plane, 0, &[]).await;
    all.read_to_end().await;
    assert_eq!(all.acc, units("Hello world"));
}

#[tokio::test(start_paused = true)]
async fn a_stream_goes_on_from_the_store_after_its_host_forgot_it() {
    // A message with parts, interrupted with its chunk rows in place (a producer that died),
    // then a message compacted as text: both go on, on a plane that never hosted them.
    let m = memory();
    m.insert_message("text");
    let dead = m.clone();
    // The producer's process dies: its runtime goes, nothing of it seals anything.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let plane = plane_with(dead, |o| o.chars = 1);
            let h = plane.open(ID).await.unwrap();
            h.push("think").unwrap();
            let p = h.start_part("reasoning", vec![]).unwrap();
            h.push_part(p, "hmm").unwrap();
            h.flush().await.unwrap();
            let t = plane.open("text").await.unwrap();
            t.push("plain").unwrap();
            t.close().await.unwrap();
            std::mem::forget(h);
            std::mem::forget(plane);
        });
    })
    .join()
    .unwrap();
    // The sweep releases the dead producer's row; its chunk rows stay.
    assert!(m.sweep(ID));
    let before = m.row(ID).unwrap();
    assert!(!before.parts.is_empty() || !before.chunks.is_empty());
    let plane = plane_with(m.clone(), |o| o.chars = 1_000_000);
    let h = plane.reopen(ID, before.seq).await.unwrap();
    assert_eq!(h.part_count(), 2, "the parts came back from the rows");
    h.push_part(1, "!").unwrap();
    h.close().await.unwrap();
    let message = m.row(ID).unwrap().durable_message().unwrap();
    assert_eq!(message.parts()[0].body, "think");
    assert_eq!(message.parts()[1].body, "hmm!");
    let t = plane.reopen("text", 5).await.unwrap();
    t.push(" text").unwrap();
    t.close().await.unwrap();
    assert_eq!(m.row("text").unwrap().body, units("plain text"));
    // No row: refused.
    assert_eq!(plane.reopen("nothing", 0).await.unwrap_err().kind(), PlaneErrorKind::OpenRefused);
}

#[tokio::test]
async fn a_message_with_parts_sealed_at_its_end_goes_on_exactly_from_the_store() {
    // Interleaved parts, sealed (here by a failure) into its document: a plane that never hosted
    // it goes on from what the store holds, and the message is both turns, on one coordinate.
    let m = memory();
    let a = plane_with(m.clone(), |o| o.chars = 1_000_000);
    let h = a.open(ID).await.unwrap();
    let r = h.start_part("reasoning", vec![]).unwrap();
    h.push_part(r, "hm").unwrap();
    let t = h.start_part("text", vec![]).unwrap();
    h.push_part(t, "Hel").unwrap();
    h.push_part(r, "m").unwrap();
    h.end_part(r, vec![]).unwrap();
    h.push_part(t, "lo").unwrap();
    h.fail("the model went away").await.unwrap();
    let sealed = m.row(ID).unwrap();
    assert!(sealed.chunks.is_empty() && sealed.parts.is_empty(), "compacted into the document");
    assert!(sealed.document.as_deref().is_some_and(|d| d.contains("\"spans\"")), "{:?}", sealed.document);
    assert_eq!(sealed.status.as_deref(), Some("error"));
    let first = sealed.durable_message().unwrap();
    let b = plane_with(m.clone(), |o| o.chars = 1_000_000);
    let h = b.reopen(ID, sealed.seq).await.unwrap();
    assert_eq!((h.seq(), h.part_count()), (sealed.seq, 3), "the parts came back from the document");
    // A reader that held the message somewhere inside the first turn resumes exactly.
    let mut on = b.subscribe(&(), ID, 4).await.unwrap();
    h.push_part(t, " again").unwrap();
    h.close().await.unwrap();
    let whole = m.row(ID).unwrap().durable_message().unwrap();
    assert_eq!(m.row(ID).unwrap().status.as_deref(), Some("complete"));
    assert_eq!(whole.parts()[r as usize].body, "hmm");
    assert_eq!(whole.parts()[t as usize].body, "Hello again");
    assert_eq!(whole.len(), first.len() + 6);
    let mut frames = Vec::new();
    while let Some(f) = on.next().await {
        let end = f.is_terminal();
        frames.push(f);
        if end {
            break;
        }
    }
    let mut held = twoplane_core::message::assemble_durable_message_at(
        None,
        m.row(ID).unwrap().document.as_deref().map(twoplane_core::Text::from).as_ref(),
        whole.len(),
        &[],
        4,
    )
    .unwrap()
    .expect("the sealed document cuts at 4");
    for f in frames.iter().filter(|f| f.span().is_some()) {
        held.apply(f).unwrap();
    }
    assert_eq!(held.parts()[t as usize].body, "Hello again");
    assert_eq!(held.len(), whole.len(), "from 4 to the end, nothing missing and nothing twice");
}

mod goes_on_schedules {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        /// Any number of continuations, each after a seal (sometimes one whose host then forgets
        /// the stream): the row ends as the concatenation of every push, and a reader joining
        /// each turn from any offset of what came before folds exactly that (S and P across
        /// continuations).
        #[test]
        fn continuations_keep_one_coordinate(
            turns in proptest::collection::vec((proptest::collection::vec("[a-zé😀]{1,4}", 1..5), any::<bool>()), 1..5),
            from_seed in any::<u64>(),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
            rt.block_on(async {
                let m = memory();
                let mut plane = plane_with(m.clone(), |o| o.chars = 1_000_000);
                let mut produced: Vec<u16> = Vec::new();
                for (i, (pushes, forget)) in turns.iter().enumerate() {
                    let h = if i == 0 {
                        plane.open(ID).await.unwrap()
                    } else {
                        plane.reopen(ID, produced.len() as u64).await.unwrap()
                    };
                    assert_eq!(h.seq(), produced.len() as u64);
                    // A reader resuming from any offset of what the turns before made.
                    let from = from_seed % (produced.len() as u64 + 1);
                    let mut r = reader(&plane, from, &produced).await;
                    for p in pushes {
                        h.push(p).unwrap();
                        produced.extend(units(p));
                    }
                    h.close().await.unwrap();
                    r.read_to_end().await;
                    assert_eq!(r.acc, produced, "turn {i}, from {from}");
                    assert_eq!(m.row(ID).unwrap().body, produced);
                    if *forget {
                        plane = plane_with(m.clone(), |o| o.chars = 1_000_000);
                    }
                }
            });
        }
    }
}
