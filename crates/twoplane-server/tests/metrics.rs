//! `/metrics` against `twoplane serve`'s own assembly (a temporary SQLite file, a producer
//! token): what a scrape shows after real traffic, and who may scrape.
//!
//! - The route is guarded like the producer API: this server has a producer token, so a wrong
//!   one is `401 unauthorized`, from loopback too.
//! - After a stream is opened, appended to, read to its end by one reader and closed, and one
//!   reader was refused for want of a stream id: the scrape is the Prometheus text format, the
//!   stream shows as hosted, the delivered frames, writes and bytes are counted, a checkpoint
//!   was timed, the refusal is counted under its `kind`, and the stream id appears nowhere.
//! - A reader held open shows in `twoplane_readers{endpoint="stream"}` and in the subscriber
//!   bound's use, and is gone from both once it disconnects.

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;

use common::producer::{open, post, read_frames, start, SECRET};

/// GET `path` with `authorization`; the status, the content type and the body.
async fn get_text(addr: SocketAddr, path: &str, authorization: Option<&str>) -> (u16, String, String) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let mut request = Request::get(path).header("host", addr.to_string());
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    let response = sender.send_request(request.body(Full::new(Bytes::new())).unwrap()).await.unwrap();
    let status = response.status().as_u16();
    let kind = response.headers().get("content-type").map_or("", |v| v.to_str().unwrap()).to_owned();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, kind, String::from_utf8(bytes.to_vec()).unwrap())
}

/// Every sample of a scrape, by its name with labels as printed (`name{a="b"}`).
fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample line: {l:?}"));
            (name.to_owned(), value.parse::<f64>().unwrap_or_else(|_| panic!("not a value: {l:?}")))
        })
        .collect()
}

async fn scrape(addr: SocketAddr) -> HashMap<String, f64> {
    let (status, kind, text) = get_text(addr, "/metrics", Some(&format!("Bearer {SECRET}"))).await;
    assert_eq!(status, 200, "{text}");
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    samples(&text)
}

fn at(samples: &HashMap<String, f64>, name: &str) -> f64 {
    *samples.get(name).unwrap_or_else(|| {
        let mut names: Vec<&String> = samples.keys().collect();
        names.sort();
        panic!("{name} missing from the scrape: {names:?}")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_the_traffic_and_no_stream_id() {
    let served = start().await;
    let addr = served.addr;

    let (status, _, body) = get_text(addr, "/metrics", Some("Bearer wrong")).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains(r#""kind":"unauthorized""#), "{body}");

    let id = "metrics-stream-id-7c1e";
    open(addr, id).await;
    let (status, answer) = post(addr, &format!("/v1/streams/{id}/append?offset=0"), "hello, operators").await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = post(addr, &format!("/v1/streams/{id}/flush"), "").await;
    assert_eq!(status, 200, "{answer}");
    let live = scrape(addr).await;
    assert_eq!(at(&live, r#"twoplane_streams{status="live"}"#), 1.0);
    assert_eq!(at(&live, "twoplane_undurable_units"), 0.0, "flushed: nothing waits for the store");

    // A reader held open: counted as a reader and against the subscriber bound.
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    let conn = tokio::spawn(conn);
    let request = Request::get(format!("/api/stream?streamId={id}"))
        .header("host", addr.to_string())
        .body(Full::new(Bytes::new()))
        .unwrap();
    let held = sender.send_request(request).await.unwrap();
    assert_eq!(held.status(), 200);
    let holding = scrape(addr).await;
    assert_eq!(at(&holding, r#"twoplane_readers{endpoint="stream"}"#), 1.0);
    assert_eq!(at(&holding, r#"twoplane_limit_in_use{limit="subscribers"}"#), 1.0);
    assert_eq!(at(&holding, r#"twoplane_limit_in_use{limit="subscribers_per_stream"}"#), 1.0);
    assert!(at(&holding, r#"twoplane_limit_max{limit="connections"}"#) >= 64.0);
    drop(held);
    conn.abort();

    let (status, answer) = post(addr, &format!("/v1/streams/{id}/close"), "").await;
    assert_eq!(status, 200, "{answer}");
    let frames = read_frames(addr, id, 0).await;
    assert!(frames.len() >= 3, "{frames:?}");
    let (status, _, body) = get_text(addr, "/api/stream", None).await;
    assert_eq!(status, 400);
    assert!(body.contains(r#""kind":"missing_stream_id""#), "{body}");

    let (status, _, text) = get_text(addr, "/metrics", Some(&format!("Bearer {SECRET}"))).await;
    assert_eq!(status, 200);
    assert!(!text.contains(id), "a stream id became a label:\n{text}");
    for help in ["# HELP twoplane_checkpoint_duration_seconds", "# TYPE twoplane_refusals_total counter"] {
        assert!(text.contains(help), "{help} missing:\n{text}");
    }
    let after = samples(&text);
    assert_eq!(at(&after, r#"twoplane_streams{status="live"}"#), 0.0);
    assert_eq!(at(&after, r#"twoplane_streams{status="ended"}"#), 1.0, "sealed, lingering");
    assert!(at(&after, "twoplane_delivered_frames_total") >= frames.len() as f64);
    assert!(at(&after, "twoplane_delivered_writes_total") >= 1.0);
    assert!(at(&after, "twoplane_delivered_bytes_total") > "hello, operators".len() as f64);
    // The held reader caught up on the direct path and was handed to the stream's writer task.
    assert!(at(&after, "twoplane_direct_handovers_total") >= 1.0);
    assert_eq!(at(&after, "twoplane_direct_holds_total"), 0.0, "no socket filled");
    assert!(at(&after, "twoplane_checkpoint_duration_seconds_count") >= 1.0);
    assert!(at(&after, r#"twoplane_checkpoint_duration_seconds_bucket{le="+Inf"}"#) >= 1.0);
    assert!(at(&after, r#"twoplane_refusals_total{kind="missing_stream_id"}"#) >= 1.0);
    assert!(at(&after, r#"twoplane_refusals_total{kind="unauthorized"}"#) >= 1.0);

    // The held reader is gone once its connection is.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now = scrape(addr).await;
        if at(&now, r#"twoplane_readers{endpoint="stream"}"#) == 0.0 {
            assert_eq!(at(&now, r#"twoplane_limit_in_use{limit="subscribers"}"#), 0.0);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the reader is still counted after it left");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
