//! The producer API over real HTTP against `twoplane serve`'s own assembly (`serve::prepare`, a
//! temporary SQLite file): races that only the server can settle, and the UTF-8 rule of the
//! streaming body under random chunkings.
//!
//! - Concurrent appends at the same offset: exactly one lands; every other one is `409
//!   offset_behind` naming the winner's end, and the store holds the winner's text only.
//! - Concurrent opens of one row: exactly one wins; the rest are `409 already_open`.
//! - A streaming body cut at random byte offsets (inside characters too), sent as separate chunks:
//!   the store holds exactly the text; with an invalid byte at a random place, exactly the
//!   longest valid UTF-8 prefix is kept, the answer is `400 invalid_utf8` with that prefix's
//!   length in UTF-16 code units, and the stream stays open.
//!
//! - A producer that goes quiet is sealed `interrupted` after the idle time; a sealed stream
//!   answers with how it ended for the linger time, then `not_open`; a second streaming body is
//!   `409 busy`; a body over the limit is `413` with what fit kept.
//! - A reader's cancel stops a stream hosted here at once, with no text flowing: the next append
//!   is `409 cancelled` and the close seals `cancelled`.
//!
//! Seeded; `TWOPLANE_PRODUCER_API_SEED=N` replays a run (its seed is printed).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{Full, StreamBody};
use hyper::body::Frame;
use twoplane_server::producer::Limits;

mod common;

use common::producer::{get, open, post, send, start, start_with, stored_text};

fn units(s: &str) -> u64 {
    s.encode_utf16().count() as u64
}

/// xorshift64*: enough randomness for schedules, and replayable.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let seed = std::env::var("TWOPLANE_PRODUCER_API_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        println!("producer_api seed: {seed} (TWOPLANE_PRODUCER_API_SEED={seed} replays it)");
        Rng(seed | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

fn random_text(rng: &mut Rng, words: usize) -> String {
    const PIECES: [&str; 10] = ["a", "é", "€", "😀", "ß", "流", "\n", " ", "e\u{301}", "𝄞"];
    (0..words).map(|_| PIECES[rng.below(PIECES.len() as u64) as usize]).collect()
}

/// `bytes` as a chunked body, cut at random offsets, a little apart in time.
fn chunked(
    bytes: Vec<u8>,
    rng: &mut Rng,
) -> StreamBody<impl futures::Stream<Item = Result<Frame<Bytes>, std::io::Error>>> {
    let mut cuts = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let n = 1 + rng.below(7) as usize;
        cuts.push(Bytes::copy_from_slice(&bytes[at..(at + n).min(bytes.len())]));
        at += n;
    }
    StreamBody::new(futures::stream::unfold(cuts.into_iter(), |mut it| async move {
        let piece = it.next()?;
        tokio::time::sleep(Duration::from_micros(300)).await;
        Some((Ok(Frame::data(piece)), it))
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_at_one_offset_land_exactly_once() {
    let server = start().await;
    let addr = server.addr;
    for round in 0..5 {
        let id = format!("race-{round}");
        open(addr, &id).await;
        let tries: Vec<String> = (0..12).map(|i| format!("try {i} of round {round} 😀")).collect();
        let tasks: Vec<_> = tries
            .iter()
            .cloned()
            .map(|text| {
                let id = id.clone();
                tokio::spawn(async move { post(addr, &format!("/v1/streams/{id}/append?offset=0"), text).await })
            })
            .collect();
        let mut answers = Vec::new();
        for t in tasks {
            answers.push(t.await.unwrap());
        }
        let winners: Vec<usize> = (0..answers.len()).filter(|&i| answers[i].0 == 200).collect();
        assert_eq!(winners.len(), 1, "{answers:?}");
        let winner = &tries[winners[0]];
        for (status, answer) in &answers {
            if *status != 200 {
                assert_eq!(*status, 409);
                assert_eq!(answer["kind"], "offset_behind");
                assert_eq!(answer["seq"].as_u64(), Some(units(winner)));
            }
        }
        let (status, _) = post(addr, &format!("/v1/streams/{id}/close"), "").await;
        assert_eq!(status, 200);
        assert_eq!(stored_text(addr, &id).await, *winner);
    }
}

/// Every answer to text taken in says how much of it the store holds: `durableSeq`, never past
/// `seq`, never going back, and all of it after a flush.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_answer_how_much_is_durable() {
    let server = start().await;
    let addr = server.addr;
    assert_eq!(post(addr, "/v1/streams/d/open", r#"{"create":true}"#).await.0, 200);
    let (status, answer) = post(addr, "/v1/streams/d/append?offset=0", "abc").await;
    assert_eq!(status, 200);
    let first = answer["durableSeq"].as_u64().unwrap_or_else(|| panic!("no durableSeq in {answer}"));
    assert_eq!(answer["seq"].as_u64(), Some(3));
    assert!(first <= 3, "{answer}");
    let (status, answer) = post(addr, "/v1/streams/d/flush", "").await;
    assert_eq!((status, answer["durableSeq"].as_u64()), (200, Some(3)), "{answer}");
    let (status, answer) = post(addr, "/v1/streams/d/append?offset=3", "de").await;
    assert_eq!((status, answer["seq"].as_u64()), (200, Some(5)), "{answer}");
    let durable = answer["durableSeq"].as_u64().unwrap();
    assert!((3..=5).contains(&durable), "{answer}");
    let (status, answer) = send(addr, "/v1/streams/d/body", Full::new(Bytes::from_static(b"xyz"))).await;
    assert_eq!((status, answer["seq"].as_u64()), (200, Some(8)), "{answer}");
    let after = answer["durableSeq"].as_u64().unwrap_or_else(|| panic!("no durableSeq in {answer}"));
    assert!((durable..=8).contains(&after), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_opens_of_one_row_have_one_winner() {
    let server = start().await;
    let addr = server.addr;
    let (status, _) = post(addr, "/v1/streams/solo/open", r#"{"create":true}"#).await;
    assert_eq!(status, 200);
    let (status, _) = post(addr, "/v1/streams/solo/append?offset=0", "done").await;
    assert_eq!(status, 200);
    let (status, _) = post(addr, "/v1/streams/solo/close", "").await;
    assert_eq!(status, 200);
    // A fresh row opened by eight producers at once.
    let tasks: Vec<_> = (0..8)
        .map(|_| tokio::spawn(async move { post(addr, "/v1/streams/shared/open", r#"{"create":true}"#).await }))
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    assert_eq!(answers.iter().filter(|(s, _)| *s == 200).count(), 1, "{answers:?}");
    for (status, answer) in answers.iter().filter(|(s, _)| *s != 200) {
        assert_eq!((*status, answer["kind"].as_str()), (409, Some("already_open")), "{answer}");
    }
    // A finished row with text cannot be opened again (the plane's precondition: `seq = 0`).
    let (status, answer) = post(addr, "/v1/streams/solo/open", "").await;
    assert_eq!((status, answer["kind"].as_str()), (409, Some("open_refused")), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_body_keeps_exactly_the_longest_valid_prefix() {
    let server = start().await;
    let addr = server.addr;
    let mut rng = Rng::seeded();
    for case in 0..24 {
        let id = format!("body-{case}");
        open(addr, &id).await;
        let words = 20 + rng.below(60) as usize;
        let text = random_text(&mut rng, words);
        let mut bytes = text.clone().into_bytes();
        // Every other case turns one byte bad: a lone continuation byte, a byte that never
        // appears in UTF-8, or a truncated character at the very end.
        let valid = if case % 2 == 1 {
            let at = rng.below(bytes.len() as u64 + 1) as usize;
            match rng.below(3) {
                0 => bytes.insert(at, 0x80),
                1 => bytes.insert(at, 0xFF),
                _ => bytes.extend_from_slice(&[0xF0, 0x9F]),
            }
            let upto = std::str::from_utf8(&bytes).unwrap_err().valid_up_to();
            String::from_utf8(bytes[..upto].to_vec()).unwrap()
        } else {
            text.clone()
        };
        let (status, answer) = send(addr, &format!("/v1/streams/{id}/body"), chunked(bytes, &mut rng)).await;
        if case % 2 == 1 {
            assert_eq!((status, answer["kind"].as_str()), (400, Some("invalid_utf8")), "case {case}: {answer}");
        } else {
            assert_eq!(status, 200, "case {case}: {answer}");
        }
        assert_eq!(answer["seq"].as_u64(), Some(units(&valid)), "case {case}");
        // The stream stays open: a per-delta append continues it from there.
        let (status, answer) = post(addr, &format!("/v1/streams/{id}/append?offset={}", units(&valid)), "!").await;
        assert_eq!(status, 200, "case {case}: {answer}");
        let (status, _) = post(addr, &format!("/v1/streams/{id}/close"), "").await;
        assert_eq!(status, 200);
        assert_eq!(stored_text(addr, &id).await, format!("{valid}!"), "case {case}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_producers_are_sealed_and_sealed_streams_linger() {
    let limits = Limits {
        idle: Duration::from_millis(400),
        linger: Duration::from_millis(400),
        max_body_bytes: 64,
        ..Limits::default()
    };
    let server = start_with(limits).await;
    let addr = server.addr;

    open(addr, "quiet").await;
    assert_eq!(post(addr, "/v1/streams/quiet/append?offset=0", "half an answer").await.0, 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, answer) = get(addr, "/v1/streams/quiet").await;
    assert_eq!(answer["stored"]["status"], "interrupted", "{answer}");
    assert_eq!(answer["stored"]["text"], "half an answer");
    let (status, answer) = post(addr, "/v1/streams/quiet/append?offset=14", "more").await;
    assert_eq!((status, answer["kind"].as_str()), (409, Some("not_open")), "{answer}");

    open(addr, "done").await;
    assert_eq!(post(addr, "/v1/streams/done/append?offset=0", "all").await.0, 200);
    assert_eq!(post(addr, "/v1/streams/done/close", "").await.0, 200);
    let (status, answer) = post(addr, "/v1/streams/done/append?offset=3", "late").await;
    assert_eq!((status, answer["kind"].as_str(), answer["seq"].as_u64()), (409, Some("stream_closed"), Some(3)));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, answer) = post(addr, "/v1/streams/done/append?offset=3", "late").await;
    assert_eq!((status, answer["kind"].as_str()), (409, Some("not_open")), "{answer}");
    assert_eq!(stored_text(addr, "done").await, "all");

    // A body over the limit: the pieces before the one that crossed it stay.
    open(addr, "big").await;
    let pieces =
        futures::stream::iter((0..10).map(|_| Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(b"0123456789")))));
    let slow = futures::StreamExt::then(pieces, |piece| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        piece
    });
    let (status, answer) = send(addr, "/v1/streams/big/body", StreamBody::new(slow)).await;
    assert_eq!((status, answer["kind"].as_str()), (413, Some("too_large")), "{answer}");
    let kept = answer["seq"].as_u64().unwrap();
    assert!(kept <= 64 && kept % 10 == 0, "{answer}");
    assert_eq!(post(addr, "/v1/streams/big/close", "").await.0, 200);
    assert_eq!(stored_text(addr, "big").await, "0123456789".repeat(kept as usize / 10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_streaming_body_is_busy() {
    let server = start().await;
    let addr = server.addr;
    open(addr, "two-bodies").await;
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    // The first body sends one piece, then waits to be released.
    let first_body = futures::stream::unfold(Some(released), |state| async move {
        let released = state?;
        let _ = released.await;
        None::<(Result<Frame<Bytes>, std::io::Error>, _)>
    });
    let first_body = futures::StreamExt::chain(
        futures::stream::iter([Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(b"first ")))]),
        first_body,
    );
    let first =
        tokio::spawn(async move { send(addr, "/v1/streams/two-bodies/body", StreamBody::new(first_body)).await });
    // Wait until the first body's piece is in.
    for _ in 0..100 {
        let (_, answer) = get(addr, "/v1/streams/two-bodies").await;
        if answer["live"]["seq"].as_u64() == Some(6) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, answer) = post(addr, "/v1/streams/two-bodies/body", "second").await;
    assert_eq!((status, answer["kind"].as_str()), (409, Some("busy")), "{answer}");
    release.send(()).unwrap();
    let (status, answer) = first.await.unwrap();
    assert_eq!((status, answer["seq"].as_u64()), (200, Some(6)), "{answer}");
    // Once the first body ended, another one may follow.
    let (status, answer) = post(addr, "/v1/streams/two-bodies/body?offset=6", "second").await;
    assert_eq!((status, answer["seq"].as_u64()), (200, Some(12)), "{answer}");
}

/// A reader's cancel of a stream hosted here stops it at once, text flowing or not: the next
/// append answers `409 cancelled`, the server seals it `cancelled` on its own, and the
/// producer's close reports that. (The store's flag alone is
/// read back at a checkpoint, which a stream with no new text never reaches.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_stops_a_quiet_stream_at_once() {
    let server = start().await;
    let addr = server.addr;
    let id = "cancel-quiet";
    open(addr, id).await;
    let (status, answer) = post(addr, &format!("/v1/streams/{id}/append?offset=0"), "hello").await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = post(addr, &format!("/v1/streams/{id}/flush"), "").await;
    assert_eq!(status, 200, "{answer}");

    let (status, answer) = post(addr, &format!("/v1/streams/{id}/cancel"), "").await;
    assert_eq!((status, &answer), (202, &serde_json::json!({ "cancelRequested": true })));
    let (status, answer) = post(addr, &format!("/v1/streams/{id}/append?offset=5"), " more").await;
    assert_eq!((status, answer["kind"].as_str()), (409, Some("cancelled")), "{answer}");
    // The server seals it `cancelled` without waiting for its producer, so its readers end.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (_, row) = get(addr, &format!("/v1/streams/{id}")).await;
        if row["stored"]["status"] == "cancelled" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "not sealed by the cancel alone: {row}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, answer) = post(addr, &format!("/v1/streams/{id}/close"), "").await;
    assert_eq!((status, answer["status"].as_str()), (200, Some("cancelled")), "{answer}");
    let (_, row) = get(addr, &format!("/v1/streams/{id}")).await;
    assert_eq!(row["stored"]["status"], "cancelled", "{row}");
    assert_eq!(stored_text(addr, id).await, "hello");
    // A second cancel finds nothing live.
    let (status, answer) = post(addr, &format!("/v1/streams/{id}/cancel"), "").await;
    assert_eq!((status, answer["kind"].as_str()), (409, Some("not_streaming")), "{answer}");
}

/// A streaming body refused mid-way (here a chunk that is not JSON) while the client is still
/// sending: the server closes the connection after its answer, and a client whose write fails
/// first (Node says EPIPE) may never read it; the stream's status repeats the refusal. Raw TCP,
/// the client sending on after the refused chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_refused_while_the_client_still_sends_is_told_by_the_status_too() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let served = start().await;
    let id = "refused-mid-body";
    let stream = tokio::net::TcpStream::connect(served.addr).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let head = format!(
        "POST /v1/streams/{id}/ui-message-stream HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {}\r\n\
         content-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        served.addr,
        common::producer::SECRET
    );
    wr.write_all(head.as_bytes()).await.unwrap();
    let bad = "data: {\"type\":\"start\",\"messageId\":\"m\"}\n\ndata: not json\n\n";
    wr.write_all(format!("{:x}\r\n{bad}\r\n", bad.len()).as_bytes()).await.unwrap();
    // Keep sending (comments the server would skip) while the answer comes back.
    let filler = format!(": {}\n", "x".repeat(16 * 1024));
    let sending = tokio::spawn(async move {
        let until = tokio::time::Instant::now() + Duration::from_millis(300);
        while tokio::time::Instant::now() < until {
            wr.write_all(format!("{:x}\r\n{filler}\r\n", filler.len()).as_bytes()).await?;
        }
        wr.write_all(b"0\r\n\r\n").await
    });
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), rd.read_to_end(&mut answer)).await;
    let _ = sending.await;
    let (code, status) = get(served.addr, &format!("/v1/streams/{id}")).await;
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["live"]["refused"]["kind"], "bad_chunk", "{status}");
    assert!(status["live"]["refused"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{status}");
    assert_eq!(status["live"]["ended"], "error", "{status}");
}
