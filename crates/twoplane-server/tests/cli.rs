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

#[test]
fn multi_instance_flags_are_checked_before_anything_starts() {
    // Mutually exclusive stores, and relay settings without a relay: usage errors.
    let (code, err) = run(&["serve", "--db", "x.db", "--pg", "postgresql://u@127.0.0.1/db"]);
    assert_eq!(code, 2);
    assert!(err.contains("'--db <DB>' cannot be used with '--pg <URL>'"), "{err}");
    for flag in [["--relay", "log"], ["--relay-idle-ms", "100"], ["--relay-first-frame-ms", "100"]] {
        let (code, err) = run(&["serve", flag[0], flag[1]]);
        assert_eq!(code, 2, "{flag:?}: {err}");
        assert!(err.contains("--redis <URL>"), "{err}");
    }
    let (code, err) = run(&["serve", "--redis", "redis://127.0.0.1:1/", "--relay", "pubsub"]);
    assert_eq!(code, 2);
    assert!(err.contains("possible values: log, broadcast"), "{err}");
    let (code, err) = run(&["serve", "--demo-tokens-per-second", "5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--demo"), "{err}");

    // Settings that only mean something with several instances, and a lease that cannot hold.
    let (code, err) = run(&["serve", "--listen", "127.0.0.1:0", "--host-id", "A", "--lease-ttl-ms", "9000"]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "--host-id, --lease-ttl-ms only apply to several instances sharing one database");
    let pg = "postgresql://u@127.0.0.1:1/db";
    let (code, err) = run(&["serve", "--pg", pg, "--lease-ttl-ms", "1000", "--sweep-interval-ms", "600"]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "--sweep-interval-ms 600 must be at most half of --lease-ttl-ms 1000");
    let (code, err) = run(&["serve", "--pg", pg, "--sweep-interval-ms", "9000"]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "at most half of --lease-ttl-ms 15000");
    let (code, err) = run(&["serve", "--pg", pg, "--host-id", " "]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "--host-id \" \" is not usable");

    // Servers that are not there: one sentence each, with any password hidden.
    let (code, err) = run(&["serve", "--listen", "127.0.0.1:0", "--pg", "postgresql://u:secret@127.0.0.1:1/db"]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "cannot use PostgreSQL");
    assert!(err.contains("PostgreSQL at 127.0.0.1:1, database db, user u: connection refused"), "{err}");
    assert!(!err.contains("secret"), "{err}");
    let (code, err) = run(&["serve", "--pg", "not a url"]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "is not a PostgreSQL connection URL");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let (code, err) =
        run(&["serve", "--listen", "127.0.0.1:0", "--db", db.to_str().unwrap(), "--redis", "redis://:pw@127.0.0.1:1/"]);
    assert_eq!(code, 1);
    assert_one_line_error(&err, "cannot start the Redis relay");
    assert!(!err.contains(":pw@"), "{err}");
}

#[test]
fn demo_answer_prints_exactly_what_the_demo_produces() {
    let out = Command::new(BIN).args(["demo-answer", "--prompt", " why? ", "--seed", "42"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text, twoplane_server::demo::answer::answer_text("why?", 42));
    assert!(text.contains("why?"), "{text}");
}

fn http(addr: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// `twoplane serve --listen 127.0.0.1:0 ARGS`, logging at `info`, and its log's lines.
fn serve(args: &[&str]) -> (std::process::Child, std::io::Lines<BufReader<std::process::ChildStderr>>) {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    (child, lines)
}

/// SIGTERM `child` and wait (at most 15 s) for it to exit.
fn terminate(child: &mut std::process::Child) -> std::process::ExitStatus {
    // SAFETY: signalling the child this test spawned, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A SIGTERM that arrives while the server starts (here at its first log line, before it says
/// it listens) stops it cleanly: the handler is in place from the start, where it was installed
/// only once the server served, and the signal's default action killed the process.
#[test]
fn sigterm_while_starting_stops_the_server_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let (mut child, mut lines) = serve(&["--db", db.to_str().unwrap()]);
    let first = lines.next().expect("the server logs while it starts").unwrap();
    assert!(!first.contains("listening addr="), "{first}");
    let status = terminate(&mut child);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(status.success(), "{status:?}: {rest:#?}");
    assert!(rest.iter().any(|l| l.contains("shutting down")), "{rest:#?}");
}

#[test]
fn sigterm_drains_live_answers_then_exits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let (mut child, mut lines) = serve(&["--demo", "--db", db.to_str().unwrap()]);
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

    let status = terminate(&mut child);
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
