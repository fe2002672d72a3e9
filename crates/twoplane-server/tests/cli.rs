//! The `twoplane` binary as a user meets it: bad flags and bad configuration end with one clear
//! line and a non-zero exit (never a panic), and SIGTERM drains the plane before exiting, so an
//! answer that was streaming is sealed `interrupted` in the database.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_twoplane");

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).env("RUST_LOG", "off").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn assert_one_line_error(stderr: &str, contains: &str) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line, got: {stderr}");
    assert!(lines[0].starts_with("twoplane: error: "), "{stderr}");
    assert!(lines[0].contains(contains), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_flags_are_usage_errors() {
    let (code, err) = run(&["serve", "--bogus"]);
    assert_eq!(code, 2);
    assert!(err.contains("unexpected argument '--bogus'"), "{err}");
    let (code, err) = run(&["serve", "--listen", "localhost"]);
    assert_eq!(code, 2);
    assert!(err.contains("is not an IP:PORT address"), "{err}");
    let (code, err) = run(&["serve", "--keep-alive-ms", "0"]);
    assert_eq!(code, 2, "{err}");
    let (code, _) = run(&[]);
    assert_eq!(code, 2);
}

#[test]
fn bad_configuration_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/t.db");
    let (code, err) = run(&["serve", "--listen", "127.0.0.1:0", "--db", missing.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "does not exist");

    let (code, err) = run(&["serve", "--listen", "127.0.0.1:0", "--db", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "is a directory");

    // /proc refuses new files even to root.
    let (code, err) = run(&["serve", "--listen", "127.0.0.1:0", "--db", "/proc/twoplane-test.db"]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "cannot use database");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let db = dir.path().join("ok.db");
    let (code, err) = run(&["serve", "--listen", &addr, "--db", db.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "already in use");
}

fn http(addr: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn sigterm_drains_live_answers_then_exits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let mut child = Command::new(BIN)
        .args(["serve", "--demo", "--listen", "127.0.0.1:0", "--db", db.to_str().unwrap()])
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("the server logs its address").unwrap();
        if let Some(rest) = line.split("listening addr=").nth(1) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    let body = r#"{"prompt":"a long one please"}"#;
    let created = http(
        &addr,
        &format!(
            "POST /api/chat HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    std::thread::sleep(Duration::from_millis(300));

    // SAFETY: signalling the child this test spawned, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the server did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.contains("stream plane drained sealed=1")), "{rest:#?}");

    // The answer was sealed `interrupted`, its text compacted into the body.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (status, seq, len): (String, i64, i64) = conn
        .query_row("SELECT status, seq, length(body) FROM messages WHERE role = 'assistant'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(status, "interrupted");
    assert!(seq > 0 && len > 0, "seq {seq}, body length {len}");
    let chunks: i64 = conn.query_row("SELECT count(*) FROM message_chunks", [], |r| r.get(0)).unwrap();
    assert_eq!(chunks, 0, "the seal compacts the chunk rows");
}
