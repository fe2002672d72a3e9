//! The offset check of the producer API (`/append?offset=N` and `/body?offset=N`) at every
//! distance from the stream's length, over real HTTP against `twoplane serve`'s own assembly.
//!
//! docs/server.md, "Producer API": an append lands only when its offset is the stream's `seq`;
//! any other offset appends nothing and answers `409 offset_behind` (behind) or `409
//! offset_ahead` (past the end) with the current `seq`. So a retried delta whose first try landed
//! is refused with `seq` = its offset plus its length, and never lands twice.
//!
//! - Every distance -K..=K (and far ones: offset 0, 2^32 past, u64::MAX), for one-unit deltas
//!   (ASCII, a two-byte character), a surrogate pair (two units), and longer mixed ones, on both
//!   routes; after each accepted delta the same delta retried at the same offset (distance
//!   -len, exactly -1 for a one-unit delta) and an offset inside a surrogate pair the stream ends
//!   with. After every answer, the live `seq` is what the model says; at the end the stored text
//!   is exactly the accepted deltas, each once.
//! - Half a surrogate pair cannot travel in a delta (UTF-8 has no encoding for it): each half
//!   alone is `400 invalid_utf8` and appends nothing; the pair in one delta lands.
//! - A random schedule (proptest) of deltas and distances, with retries and offsets inside pairs
//!   weighted in, against a model of the rule.

use std::net::SocketAddr;

use bytes::Bytes;
use common::served::{self, Served};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use twoplane_server::access::{Access, Secret};
use twoplane_server::producer::Limits;

mod common;

const SECRET: &str = "append-offsets-test-secret-0123456789";

async fn start() -> Served {
    let access = Access { producer_token: Some(Secret::new(SECRET.as_bytes(), "test").unwrap()), ..Access::default() };
    served::start(access, Limits::default()).await
}

/// `method path` with `body` on a fresh connection: the status and the JSON answer.
async fn call(addr: SocketAddr, method: &str, path: &str, body: impl Into<Bytes>) -> (u16, Value) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let request = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .header("authorization", format!("Bearer {SECRET}"))
        .header("content-type", "text/plain; charset=utf-8")
        .body(Full::new(body.into()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into())))
}

fn units(s: &str) -> u64 {
    s.encode_utf16().count() as u64
}

/// The two routes that take text with an offset.
#[derive(Clone, Copy, Debug)]
enum Route {
    Append,
    Body,
}

impl Route {
    fn path(self, id: &str, offset: u64) -> String {
        match self {
            Route::Append => format!("/v1/streams/{id}/append?offset={offset}"),
            Route::Body => format!("/v1/streams/{id}/body?offset={offset}"),
        }
    }
}

/// One stream and what the rule says it holds.
struct Probe {
    addr: SocketAddr,
    id: String,
    route: Route,
    text: String,
}

impl Probe {
    async fn open(addr: SocketAddr, id: String, route: Route) -> Probe {
        let (status, answer) = call(addr, "POST", &format!("/v1/streams/{id}/open"), r#"{"create":true}"#).await;
        assert_eq!(status, 200, "{answer}");
        Probe { addr, id, route, text: String::new() }
    }

    fn seq(&self) -> u64 {
        units(&self.text)
    }

    /// Send `delta` at `offset` and check the answer against the rule; the model follows.
    async fn send(&mut self, delta: &str, offset: u64) {
        let seq = self.seq();
        let (status, answer) = call(self.addr, "POST", &self.route.path(&self.id, offset), delta.to_owned()).await;
        let what =
            format!("{:?} {delta:?} at offset {offset} on a stream of {seq} units: {status} {answer}", self.route);
        if offset == seq {
            assert_eq!(status, 200, "{what}");
            self.text.push_str(delta);
            assert_eq!(answer["seq"], self.seq(), "{what}");
            assert!(answer["durableSeq"].as_u64().is_some_and(|d| d <= self.seq()), "{what}");
        } else {
            assert_eq!(status, 409, "{what}");
            let kind = if offset < seq { "offset_behind" } else { "offset_ahead" };
            assert_eq!(answer["kind"], kind, "{what}");
            assert_eq!(answer["seq"], seq, "{what}: the refusal names the current seq");
        }
        self.check_live(&what).await;
    }

    /// The live `seq` is the model's: nothing refused was appended, nothing accepted was lost.
    async fn check_live(&self, what: &str) {
        let (status, answer) = call(self.addr, "GET", &format!("/v1/streams/{}", self.id), "").await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["live"]["seq"], self.seq(), "after {what}");
    }

    /// Flush, then the stored text is exactly the model's (each accepted delta once).
    async fn check_stored(&self) {
        let (status, answer) = call(self.addr, "POST", &format!("/v1/streams/{}/flush", self.id), "").await;
        assert_eq!(status, 200, "{answer}");
        let (_, answer) = call(self.addr, "GET", &format!("/v1/streams/{}", self.id), "").await;
        assert_eq!(answer["stored"]["text"].as_str(), Some(self.text.as_str()), "{:?} {}", self.route, self.id);
    }
}

/// Deltas of one unit (ASCII, a two-byte character), a surrogate pair, and longer mixed ones.
const DELTAS: [&str; 5] = ["x", "é", "😀", "a😀b", "€ 𝄞"];
const K: u64 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_distance_from_the_end_gets_the_documented_answer() {
    let served = start().await;
    let addr = served.addr;
    for route in [Route::Append, Route::Body] {
        for (d, delta) in DELTAS.iter().enumerate() {
            let mut p = Probe::open(addr, format!("dist-{route:?}-{d}"), route).await;
            // Each round: every distance but 0 is refused, then the delta lands, then its retry
            // (the first try's response lost) is refused as behind by exactly its length.
            for round in 0..4 {
                let seq = p.seq();
                for k in 1..=K {
                    p.send(delta, seq + k).await;
                    if let Some(behind) = seq.checked_sub(k) {
                        p.send(delta, behind).await;
                    }
                }
                for far in [0, seq + (1 << 32), u64::MAX] {
                    if far != seq {
                        p.send(delta, far).await;
                    }
                }
                p.send(delta, seq).await;
                assert_eq!(p.seq(), seq + units(delta), "round {round}");
                // The retry of what just landed: distance -len (-1 for a one-unit delta).
                p.send(delta, seq).await;
                // An offset inside the surrogate pair the stream may now end with.
                if p.text.ends_with(|c: char| c.len_utf16() == 2) {
                    p.send(delta, p.seq() - 1).await;
                }
                // A one-unit delta retried once more after another one-unit delta landed.
                p.send("y", p.seq()).await;
                p.send("y", p.seq() - 1).await;
            }
            p.check_stored().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_a_surrogate_pair_is_not_a_delta() {
    let served = start().await;
    let addr = served.addr;
    let mut p = Probe::open(addr, "halves".to_owned(), Route::Append).await;
    p.send("a", 0).await;
    // U+1F600 as UTF-16 is D83D DE00; each half on its own, encoded as if it were a character
    // (which UTF-8 forbids), and the pair split between two deltas.
    for (label, bytes) in [
        ("high half", &b"\xED\xA0\xBD"[..]),
        ("low half", b"\xED\xB8\x80"),
        ("both halves", b"\xED\xA0\xBD\xED\xB8\x80"),
    ] {
        let (status, answer) = call(addr, "POST", &Route::Append.path("halves", 1), Bytes::from_static(bytes)).await;
        assert_eq!((status, answer["kind"].as_str()), (400, Some("invalid_utf8")), "{label}: {answer}");
        assert_eq!(answer["seq"], 1, "{label}: {answer}");
        p.check_live(label).await;
    }
    p.send("😀", 1).await;
    p.send("😀", 1).await;
    p.send("😀", 2).await;
    p.send("!", 3).await;
    p.check_stored().await;
    assert_eq!(p.text, "a😀!");
}

mod schedule {
    use super::*;
    use proptest::prelude::*;

    /// A step: a delta and where its offset is, relative to the end or as a retry.
    #[derive(Clone, Debug)]
    enum Step {
        /// Offset `seq + k`.
        Distance(String, i64),
        /// The last accepted delta again, at the offset it was accepted at.
        Retry,
    }

    fn delta() -> impl Strategy<Value = String> {
        let piece = proptest::sample::select(vec!["a", "é", "😀", "𝄞", "\n", "流"]);
        proptest::collection::vec(piece, 1..4).prop_map(|v| v.concat())
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => delta().prop_map(|d| Step::Distance(d, 0)),
            3 => (delta(), -3i64..=3).prop_map(|(d, k)| Step::Distance(d, k)),
            2 => delta().prop_map(|d| Step::Distance(d, -1)),
            2 => Just(Step::Retry),
        ]
    }

    proptest! {
        // Each case starts a server; a failure prints its minimal schedule (no regression file:
        // the cases are cheap to find again).
        #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

        /// Whatever the schedule, each answer is the rule's and the text is each accepted delta once.
        #[test]
        fn a_random_schedule_of_offsets_follows_the_rule(
            steps in proptest::collection::vec(step(), 1..40),
            use_body in any::<bool>(),
        ) {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(async {
                let served = start().await;
                let route = if use_body { Route::Body } else { Route::Append };
                let mut p = Probe::open(served.addr, "schedule".to_owned(), route).await;
                let mut last: Option<(String, u64)> = None;
                for step in &steps {
                    match step {
                        Step::Distance(delta, k) => {
                            let seq = p.seq();
                            let Some(offset) = seq.checked_add_signed(*k) else { continue };
                            p.send(delta, offset).await;
                            if offset == seq {
                                last = Some((delta.clone(), offset));
                            }
                        }
                        Step::Retry => {
                            if let Some((delta, offset)) = &last {
                                p.send(delta, *offset).await;
                            }
                        }
                    }
                }
                p.check_stored().await;
            });
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offset_that_is_not_a_number_gets_a_json_error_and_appends_nothing() {
    let served = start().await;
    let addr = served.addr;
    let mut p = Probe::open(addr, "bad-offsets".to_owned(), Route::Append).await;
    p.send("a", 0).await;
    for route in ["append", "body"] {
        for offset in ["abc", "-1", "1.5", "18446744073709551616", ""] {
            let path = format!("/v1/streams/bad-offsets/{route}?offset={offset}");
            let (status, answer) = call(addr, "POST", &path, "x").await;
            // `?offset=` with nothing after it is not "no offset" (a body may omit the parameter).
            assert_eq!(
                (status, answer["kind"].as_str()),
                (400, Some("bad_offset")),
                "{route} ?offset={offset}: {answer}"
            );
            p.check_live(&format!("{route} ?offset={offset}")).await;
        }
    }
    p.check_stored().await;
}
