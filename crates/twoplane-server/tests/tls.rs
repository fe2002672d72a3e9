//! PostgreSQL and Redis over TLS, with passwords, through the library and the `twoplane` binary.
//! Needs the services `bash scripts/test-server.sh` starts (scripts/pg.sh and scripts/redis.sh,
//! plain and in their TLS modes, each with a throwaway CA and a random password); plain `cargo
//! test` skips this file (`#[ignore]`, and says why).
//!
//! What it shows: `verify-full` with the right CA connects (and the session is encrypted); the
//! wrong CA, or a host name the certificate does not carry, fails with a message that names the
//! server and the cause; `verify-ca` accepts the second; `require` against a server without TLS
//! fails clearly; `disable`, and the default `prefer`, still connect where TLS is not required;
//! a wrong password and a closed port each say so; a pool never opens more connections than its
//! size and replaces one whose backend was killed; `rediss://` works through the adapters. Every
//! message and log line those produce is searched for the configured passwords.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use twoplane_redis::{connect_relay, RedisRelayOptions, Topology};
use twoplane_stream::{PgClient, PgConnectError, PgEndpoint, PgFailure, SslMode};

use common::secrets::{assert_no_secrets_named, configured_secrets};

const BIN: &str = env!("CARGO_BIN_EXE_twoplane");

fn var(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!("{name} is not set: run `bash scripts/test-server.sh`, which starts the TLS services"),
    }
}

/// `url` with `params` added to its query.
fn with_params(url: &str, params: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{params}")
}

/// The port of a `scheme://user:pw@host:port/...` URL.
fn port_of(url: &str) -> u16 {
    let authority = url.split("://").nth(1).unwrap().split('/').next().unwrap();
    authority.rsplit(':').next().unwrap().parse().unwrap()
}

/// Connect once with `url` (and `ca`), return whether the session is encrypted.
async fn ssl_in_use(url: &str, ca: Option<&str>) -> Result<bool, PgConnectError> {
    let endpoint = PgEndpoint::parse(url, ca.map(std::path::Path::new))?;
    let client = PgClient::from_endpoint(endpoint, "test", 1);
    let session = client.lock().await?;
    let row = session
        .client()
        .query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])
        .await
        .expect("pg_stat_ssl");
    Ok(row.get(0))
}

/// Everything a test produced that must hold no password.
#[derive(Default)]
struct Said(Vec<(String, String)>);

impl Said {
    fn add(&mut self, what: &str, text: impl ToString) {
        self.0.push((what.to_owned(), text.to_string()));
    }
}

impl Drop for Said {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert_no_secrets_named(&self.0);
        }
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL with and without TLS: run `bash scripts/test-server.sh`"]
async fn postgres_sslmodes_check_what_they_promise() {
    let tls_url = var("TWOPLANE_PG_TLS_URL");
    let plain_url = var("TWOPLANE_PG_URL");
    let (ca, wrong_ca) = (var("TWOPLANE_PG_TLS_CA"), var("TWOPLANE_PG_TLS_WRONG_CA"));
    assert!(!configured_secrets().is_empty(), "the test services must require passwords");
    let mut said = Said::default();
    let tls_port = port_of(&tls_url);

    // verify-full with the CA that signed the server's certificate: encrypted.
    let full = with_params(&tls_url, "sslmode=verify-full");
    assert!(ssl_in_use(&full, Some(&ca)).await.unwrap(), "verify-full must encrypt");
    // The CA named in the URL instead of beside it.
    let in_url = with_params(&full, &format!("sslrootcert={ca}"));
    assert!(ssl_in_use(&in_url, None).await.unwrap());

    // The wrong CA: refused, naming the server, the database and the certificate problem.
    let err = ssl_in_use(&full, Some(&wrong_ca)).await.unwrap_err();
    said.add("wrong CA", &err);
    assert_eq!(err.failure(), PgFailure::Tls, "{err}");
    let shown = err.to_string();
    assert!(shown.contains(&format!("127.0.0.1:{tls_port}, database twoplane_test")), "{shown}");
    assert!(shown.contains("certificate") && shown.contains("UnknownIssuer"), "{shown}");

    // A name the certificate does not carry (the address is right): verify-full refuses,
    // verify-ca (chain only) accepts.
    let renamed = tls_url.replacen("@127.0.0.1:", "@wrong-name.invalid:", 1);
    let renamed = with_params(&renamed, "hostaddr=127.0.0.1");
    let err = ssl_in_use(&with_params(&renamed, "sslmode=verify-full"), Some(&ca)).await.unwrap_err();
    said.add("wrong name", &err);
    assert_eq!(err.failure(), PgFailure::Tls, "{err}");
    assert!(err.to_string().contains("not valid for name"), "{err}");
    assert!(err.to_string().contains("wrong-name.invalid"), "{err}");
    assert!(ssl_in_use(&with_params(&renamed, "sslmode=verify-ca"), Some(&ca)).await.unwrap());
    // verify-ca still checks the chain.
    let err = ssl_in_use(&with_params(&renamed, "sslmode=verify-ca"), Some(&wrong_ca)).await.unwrap_err();
    assert_eq!(err.failure(), PgFailure::Tls, "{err}");

    // require: encrypted, certificate unchecked (libpq's meaning), unless a CA file is given.
    assert!(ssl_in_use(&with_params(&tls_url, "sslmode=require"), None).await.unwrap());
    let err = ssl_in_use(&with_params(&tls_url, "sslmode=require"), Some(&wrong_ca)).await.unwrap_err();
    assert_eq!(err.failure(), PgFailure::Tls, "{err}");

    // Plain connections where TLS is not required: disable on the TLS server, and the default
    // (prefer) on both; prefer encrypts when the server can.
    assert!(!ssl_in_use(&with_params(&tls_url, "sslmode=disable"), None).await.unwrap());
    assert!(ssl_in_use(&tls_url, None).await.unwrap());
    assert!(!ssl_in_use(&plain_url, None).await.unwrap());

    // require against a server without TLS: refused, saying so.
    let err = ssl_in_use(&with_params(&plain_url, "sslmode=require"), None).await.unwrap_err();
    said.add("require on plain", &err);
    assert_eq!(err.failure(), PgFailure::Tls, "{err}");
    assert!(err.to_string().contains("server does not support TLS"), "{err}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{}", port_of(&plain_url))), "{err}");

    // A wrong password and a closed port.
    let wrong_password = {
        let (head, tail) = plain_url.split_once('@').unwrap();
        let user = head.rsplit_once(':').unwrap().0;
        format!("{user}:not-the-password@{tail}")
    };
    let err = ssl_in_use(&wrong_password, None).await.unwrap_err();
    said.add("wrong password", &err);
    assert_eq!(err.failure(), PgFailure::Auth, "{err}");
    assert!(err.to_string().contains("password authentication failed"), "{err}");
    assert!(!err.to_string().contains("not-the-password"), "{err}");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let refused = plain_url.replacen(&format!(":{}/", port_of(&plain_url)), &format!(":{port}/"), 1);
    let err = ssl_in_use(&refused, None).await.unwrap_err();
    said.add("refused", &err);
    assert_eq!(err.failure(), PgFailure::Refused, "{err}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")), "{err}");

    // Settings that cannot work are refused before connecting.
    let err = PgEndpoint::parse(&with_params(&tls_url, "sslmode=allow"), None).unwrap_err();
    said.add("allow", &err);
    assert_eq!(err.failure(), PgFailure::Config);
    let endpoint = PgEndpoint::parse(&tls_url, Some(std::path::Path::new(&ca))).unwrap();
    assert_eq!(endpoint.ssl_mode(), SslMode::VerifyFull, "a CA file without sslmode means verify-full");
}

async fn backend(s: &twoplane_stream::PgSession) -> i32 {
    s.client().query_one("SELECT pg_backend_pid()", &[]).await.unwrap().get(0)
}

#[tokio::test]
#[ignore = "needs PostgreSQL: run `bash scripts/test-server.sh`"]
async fn a_pool_stays_within_its_size_and_replaces_lost_connections() {
    let url = with_params(&var("TWOPLANE_PG_TLS_URL"), "sslmode=verify-full");
    let endpoint = PgEndpoint::parse(&url, Some(std::path::Path::new(&var("TWOPLANE_PG_TLS_CA")))).unwrap();
    let pool = PgClient::from_endpoint(endpoint, "test", 2);
    assert_eq!(pool.max_size(), 2);
    let a = pool.lock().await.unwrap();
    let b = pool.lock().await.unwrap();
    let (pa, pb) = (backend(&a).await, backend(&b).await);
    assert_ne!(pa, pb, "two sessions, two connections");
    // Pooled connections are opened by the endpoint, with its session settings.
    let idle: String = a.client().query_one("SHOW idle_in_transaction_session_timeout", &[]).await.unwrap().get(0);
    assert_eq!(idle, "5s", "a pooled connection without the endpoint's session settings");
    // A third waits until one comes back.
    let third = tokio::time::timeout(Duration::from_millis(300), pool.lock()).await;
    assert!(third.is_err(), "a pool of 2 handed out a third connection");
    drop(b);
    let c = tokio::time::timeout(Duration::from_secs(5), pool.lock()).await.expect("freed").unwrap();
    assert_eq!(backend(&c).await, pb, "the freed connection is reused");
    // Kill the backend of `c` from `a`; the pool replaces it on the next take.
    a.client().execute("SELECT pg_terminate_backend($1)", &[&pb]).await.unwrap();
    drop(c);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = pool.lock().await.unwrap();
        match s.client().query_one("SELECT pg_backend_pid()", &[]).await {
            Ok(row) => {
                let p: i32 = row.get(0);
                assert_ne!(p, pb, "the killed connection came back");
                break;
            }
            // The socket's close may not have been seen yet: that session goes back broken and
            // the next take drops it.
            Err(_) if Instant::now() < deadline => continue,
            Err(e) => panic!("no working connection after the kill: {e}"),
        }
    }
}

/// `twoplane serve` with `args`: its stderr once it listens (then SIGTERM and its exit status),
/// or once it exited on its own.
struct Served {
    listened: bool,
    success: bool,
    output: String,
}

fn serve(args: &[&str]) -> Served {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tls");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join(format!("serve-{}.log", std::process::id()));
    let file = std::fs::File::create(&log).unwrap();
    let mut child: Child = Command::new(BIN)
        .arg("serve")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    loop {
        if read().contains("listening addr=") {
            // SAFETY: signalling the child this test spawned, by its pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let status = child.wait().unwrap();
            return Served { listened: true, success: status.success(), output: read() };
        }
        if let Some(status) = child.try_wait().unwrap() {
            return Served { listened: false, success: status.success(), output: read() };
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("twoplane serve neither listened nor exited within 30 s:\n{}", read());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs PostgreSQL with TLS: run `bash scripts/test-server.sh`"]
fn the_binary_connects_with_verify_full_and_names_the_server_when_it_cannot() {
    let tls_url = var("TWOPLANE_PG_TLS_URL");
    let (ca, wrong_ca) = (var("TWOPLANE_PG_TLS_CA"), var("TWOPLANE_PG_TLS_WRONG_CA"));
    let full = with_params(&tls_url, "sslmode=verify-full");
    let mut said = Said::default();

    let ok = serve(&["--pg", &full, "--pg-ca-file", &ca, "--pg-pool-size", "2"]);
    said.add("serve verify-full", &ok.output);
    assert!(ok.listened && ok.success, "{}", ok.output);

    let bad = serve(&["--pg", &full, "--pg-ca-file", &wrong_ca]);
    said.add("serve wrong CA", &bad.output);
    assert!(!bad.listened && !bad.success, "{}", bad.output);
    let line =
        bad.output.lines().find(|l| l.starts_with("twoplane: error: ")).unwrap_or_else(|| panic!("{}", bad.output));
    assert!(line.contains(&format!("PostgreSQL at 127.0.0.1:{}, database twoplane_test", port_of(&tls_url))), "{line}");
    assert!(line.contains("TLS failed") && line.contains("UnknownIssuer"), "{line}");

    let plain = serve(&["--pg", &with_params(&var("TWOPLANE_PG_URL"), "sslmode=require")]);
    said.add("serve require on plain", &plain.output);
    assert!(!plain.listened, "{}", plain.output);
    assert!(plain.output.contains("server does not support TLS"), "{}", plain.output);

    let missing = serve(&["--pg", &full, "--pg-ca-file", "/nonexistent/ca.pem"]);
    said.add("serve missing CA", &missing.output);
    assert!(!missing.listened && missing.output.contains("/nonexistent/ca.pem"), "{}", missing.output);
}

#[tokio::test]
#[ignore = "needs Redis with TLS: run `bash scripts/test-server.sh`"]
async fn rediss_urls_work_through_the_adapters_and_the_binary() {
    let url = var("TWOPLANE_REDIS_TLS_URL");
    let ca = var("TWOPLANE_REDIS_TLS_CA");
    assert!(url.starts_with("rediss://"), "{url}");
    let mut said = Said::default();
    for topology in [Topology::Log, Topology::Broadcast] {
        let options = RedisRelayOptions { tls_ca_file: Some(ca.clone().into()), ..RedisRelayOptions::default() };
        let relay = connect_relay(&url, topology, options, None).await;
        assert!(relay.is_ok(), "{topology:?} over rediss:// with the CA: {:?}", relay.err().map(|e| e.to_string()));
    }
    // Without the CA the server's certificate is unknown: a clear failure, no password.
    let err = match connect_relay(&url, Topology::Log, RedisRelayOptions::default(), None).await {
        Ok(_) => panic!("rediss:// connected without trusting the test CA"),
        Err(e) => e.to_string(),
    };
    said.add("rediss without CA", &err);
    assert!(err.contains(&format!("127.0.0.1:{}", port_of(&url))), "{err}");

    let db = tempfile::tempdir().unwrap();
    let db = db.path().join("t.db");
    let ok = serve(&["--db", db.to_str().unwrap(), "--redis", &url, "--redis-ca-file", &ca]);
    said.add("serve rediss", &ok.output);
    assert!(ok.listened && ok.success, "{}", ok.output);
}
