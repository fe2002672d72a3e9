//! The access flags as a user meets them: a non-loopback `--listen` without a read-token secret
//! is refused with one line naming the flags to add, short or unreadable secrets are refused the
//! same way, an `--allow-origin` that could never match a browser's `Origin` is refused naming
//! it, and `twoplane token` prints a token the server's rule accepts for exactly that stream until
//! its expiry.

use std::process::Command;

use twoplane_server::token::{verify, Denied};

const BIN: &str = env!("CARGO_BIN_EXE_twoplane");

fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("RUST_LOG", "off")
        .env_remove("TWOPLANE_READ_TOKEN_SECRET")
        .env_remove("TWOPLANE_PRODUCER_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

fn one_line_error(stderr: &str, contains: &[&str]) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line, got: {stderr}");
    assert!(lines[0].starts_with("twoplane: error: "), "{stderr}");
    for c in contains {
        assert!(lines[0].contains(c), "{c} missing in {stderr}");
    }
}

#[test]
fn a_public_listen_without_a_read_secret_is_refused_naming_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let (code, _, err) = run(&["serve", "--listen", "0.0.0.0:0", "--db", db.to_str().unwrap()], &[]);
    assert_eq!(code, 1);
    one_line_error(&err, &["0.0.0.0:0", "--read-token-secret-file", "--open-reads"]);
    // Nothing was created: the check runs before the database is touched.
    assert!(!db.exists());

    let secret = dir.path().join("secret");
    std::fs::write(&secret, "0123456789abcdef0123456789abcdef\n").unwrap();
    let (code, _, err) = run(
        &["serve", "--listen", "127.0.0.1:0", "--read-token-secret-file", secret.to_str().unwrap(), "--open-reads"],
        &[],
    );
    assert_eq!(code, 1);
    one_line_error(&err, &["--open-reads"]);
}

#[test]
fn short_or_missing_secrets_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short");
    std::fs::write(&short, "too short\n").unwrap();
    let (code, _, err) =
        run(&["serve", "--listen", "127.0.0.1:0", "--producer-token-file", short.to_str().unwrap()], &[]);
    assert_eq!(code, 1);
    one_line_error(&err, &["--producer-token-file", "at least 32"]);
    let missing = dir.path().join("missing");
    let (code, _, err) =
        run(&["serve", "--listen", "127.0.0.1:0", "--read-token-secret-file", missing.to_str().unwrap()], &[]);
    assert_eq!(code, 1);
    one_line_error(&err, &["cannot read it"]);
    let (code, _, err) = run(&["serve", "--listen", "127.0.0.1:0"], &[("TWOPLANE_READ_TOKEN_SECRET", "short")]);
    assert_eq!(code, 1);
    one_line_error(&err, &["TWOPLANE_READ_TOKEN_SECRET"]);
    let (code, _, err) = run(&["token", "--stream-id", "m"], &[]);
    assert_eq!(code, 1);
    one_line_error(&err, &["--read-token-secret-file"]);
}

#[test]
fn twoplane_token_mints_what_the_server_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("secret");
    let secret = "a secret of at least thirty-two bytes";
    std::fs::write(&file, format!("{secret}\r\n")).unwrap();
    let (code, out, err) = run(
        &["token", "--stream-id", "m-1", "--user-id", "u", "--expires-at", "2000000000", "--read-token-secret-file"],
        &[],
    );
    assert_eq!(code, 2, "a flag without its value is a usage error: {out}{err}");
    let (code, out, err) = run(
        &[
            "token",
            "--stream-id",
            "m-1",
            "--user-id",
            "u",
            "--expires-at",
            "2000000000",
            "--read-token-secret-file",
            file.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let token = out.trim_end();
    assert_eq!(out, format!("{token}\n"));
    let claims = verify(secret.as_bytes(), token, "m-1", 1_999_999_999).unwrap();
    assert_eq!(claims.user_id.as_deref(), Some("u"));
    assert_eq!(verify(secret.as_bytes(), token, "m-1", 2_000_000_000), Err(Denied::Expired));
    assert_eq!(verify(secret.as_bytes(), token, "m-2", 0), Err(Denied::WrongStream));

    // From the environment, with --ttl-seconds counted from now.
    let (code, out, err) =
        run(&["token", "--stream-id", "m-1", "--ttl-seconds", "60"], &[("TWOPLANE_READ_TOKEN_SECRET", secret)]);
    assert_eq!(code, 0, "{err}");
    let now = twoplane_server::token::unix_now();
    let claims = verify(secret.as_bytes(), out.trim_end(), "m-1", now).unwrap();
    assert!((now + 59..=now + 61).contains(&claims.expires_at), "{}", claims.expires_at);
}

#[test]
fn an_origin_that_could_never_match_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let db = db.to_str().unwrap();
    for (origin, why) in [("https://chat.example/", "trailing slash"), ("https://chat.example:443", "default port")] {
        let (code, _, err) = run(&["serve", "--listen", "127.0.0.1:0", "--db", db, "--allow-origin", origin], &[]);
        assert_eq!(code, 1);
        one_line_error(&err, &["--allow-origin", origin, why]);
    }
    assert!(!std::path::Path::new(db).exists());
}
