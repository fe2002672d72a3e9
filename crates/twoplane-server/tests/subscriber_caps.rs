//! The subscriber caps of `twoplane serve` over real HTTP: past `--max-subscribers-per-stream`
//! or `--max-subscribers-per-ip` a subscribe answers `503` with `{"kind":
//! "too_many_subscribers"}` and a `Retry-After`, other streams and addresses are unaffected, and
//! a reader that leaves gives its place back.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{http, http_full, Instance, Sse};

fn start(dir: &std::path::Path) -> Instance {
    let db = dir.join("caps.db");
    let args: Vec<String> = [
        "--listen",
        "127.0.0.1:0",
        "--db",
        db.to_str().unwrap(),
        "--max-subscribers-per-stream",
        "2",
        "--max-subscribers-per-ip",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (name, child, log) = Instance::spawn("caps", &args, dir);
    Instance::ready(name, child, log)
}

async fn refused(server: &Instance, id: &str) {
    let reply = http_full(server.addr, "GET", &format!("/api/stream?streamId={id}&from=0"), None).await.unwrap();
    assert_eq!((reply.status, reply.json["kind"].as_str()), (503, Some("too_many_subscribers")), "{}", reply.raw);
    assert_eq!(reply.headers["retry-after"], "5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_a_cap_a_subscribe_is_refused_in_json_and_a_leaving_reader_gives_its_place_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    for id in ["a", "b"] {
        let (status, _, raw) =
            http(server.addr, "POST", &format!("/v1/streams/{id}/open"), Some(r#"{"create":true}"#.into()))
                .await
                .unwrap();
        assert_eq!(status, 200, "{raw}");
    }
    let path = |id: &str| format!("/api/stream?streamId={id}&from=0");
    let a1 = Sse::get(server.addr, &path("a"), None).await.unwrap();
    let _a2 = Sse::get(server.addr, &path("a"), None).await.unwrap();
    refused(&server, "a").await;
    // Another stream from the same address: one place left under the address's cap of 3.
    let _b1 = Sse::get(server.addr, &path("b"), None).await.unwrap();
    refused(&server, "b").await;
    // A reader that hangs up gives its place back (within a moment: the server notices the close).
    drop(a1);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match Sse::get(server.addr, &path("a"), None).await {
            Ok(_) => break,
            Err(e) => assert!(Instant::now() < deadline, "the place was not given back: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
