//! What a client chooses never shapes the server's log: a stream id with a line break (or any
//! control character) is written escaped, inside the one line that names it, so a client cannot
//! forge log lines. Runs the real binary and reads its log.

mod common;

use common::cluster::{http, Instance};

#[tokio::test]
async fn a_stream_id_cannot_forge_a_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let args: Vec<String> =
        ["--listen", "127.0.0.1:0", "--db", db.to_str().unwrap()].iter().map(|s| s.to_string()).collect();
    let (name, child, log) = Instance::spawn("logs", &args, dir.path());
    let mut server = Instance::ready(name, child, log);
    // The id, percent-decoded by the router: "a\nFAKE ERROR forged line".
    let path = "/v1/streams/a%0AFAKE%20ERROR%20forged%20line/open";
    let (status, _, raw) = http(server.addr, "POST", path, Some(r#"{"create":true}"#.into())).await.unwrap();
    assert_eq!(status, 200, "{raw}");
    let _ = server.terminate();
    let text = server.log_text();
    assert!(text.contains(r#"a\nFAKE ERROR forged line"#), "the id is logged escaped:\n{text}");
    assert!(!text.lines().any(|line| line.starts_with("FAKE ERROR")), "a forged line:\n{text}");
}
