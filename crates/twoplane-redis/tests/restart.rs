//! Redis going away mid-stream. Each test runs its own redis-server (no persistence, on a free
//! loopback port) so it can kill and restart it without disturbing other tests. The binary is
//! `$TWOPLANE_REDIS_SERVER`, else `redis-server` on the PATH or in /usr/bin (scripts/redis.sh
//! installs it); these tests run only when `TWOPLANE_REDIS_URL` is set, like the others, so a
//! machine without Redis skips them, except under `TWOPLANE_REQUIRE_SERVICES=1` (the test
//! command), where a missing variable or binary fails.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use twoplane_redis::{BroadcastRelay, LogOptions, LogRelay, RedisRelayOptions};
use twoplane_stream::{Relay, RelayPhase};

const LIMIT: Duration = Duration::from_secs(40);

struct Server {
    bin: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Server {
    fn start() -> Option<Server> {
        redis_url()?;
        let bin = std::env::var_os("TWOPLANE_REDIS_SERVER")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("PATH")
                    .and_then(|p| std::env::split_paths(&p).map(|d| d.join("redis-server")).find(|c| c.is_file()))
            })
            .or_else(|| Some(PathBuf::from("/usr/bin/redis-server")).filter(|p| p.is_file()));
        let Some(bin) = bin else {
            no_service("no redis-server binary on the PATH or in /usr/bin (set TWOPLANE_REDIS_SERVER)");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut server = Server { bin, port, child: None };
        server.up();
        Some(server)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn up(&mut self) {
        let child = Command::new(&self.bin)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("redis-server did not listen on {}", self.port);
    }

    /// SIGKILL: an abrupt outage, every connection reset, every key gone.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn options(test: &str) -> RedisRelayOptions {
    RedisRelayOptions {
        prefix: prefix(test),
        first_frame_timeout_ms: 5_000,
        idle_timeout_ms: 10_000,
        ..Default::default()
    }
}

/// The log survives a restart: the writer retries what failed, the tail reconnects and resumes
/// each reader after the last entry it was given, and replays are skipped. The reader that
/// followed all along ends with every character.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_readers_ride_out_a_redis_restart() {
    let Some(mut server) = Server::start() else { return };
    let options = options("restart-log");
    let relay_a: Arc<dyn Relay> =
        Arc::new(LogRelay::connect(&server.url(), options.clone(), LogOptions::default()).await.unwrap());
    let a = plane(store(&["s"]), relay_a, |_| {});
    let (errors, hook) = recorder();
    let relay_b: Arc<dyn Relay> =
        Arc::new(LogRelay::connect(&server.url(), options.clone(), LogOptions::default()).await.unwrap());
    let b = plane(store(&[]), relay_b, |o| o.on_relay_error = Some(hook));

    let h = a.open("s").await.unwrap();
    let follower = tokio::spawn(read_all(b.subscribe(&(), "s", 0).await.unwrap(), 0, LIMIT));
    let mut rng = Rng::new(9);
    let mut produced = Vec::new();
    for i in 0..120 {
        let d = delta(&mut rng, i);
        produced.extend(units(&d));
        h.push(&d).unwrap();
        tokio::time::sleep(Duration::from_millis(3)).await;
        if i == 50 {
            server.kill();
            tokio::time::sleep(Duration::from_millis(300)).await;
            server.up();
        }
    }
    h.close().await.unwrap();
    let got = follower.await.unwrap();
    assert_eq!(got.ending(), Ending::End, "{:?} {:?}", got.frames.last(), errors.lock().unwrap());
    assert_eq!(got.check(&produced), produced);
    // A reader that comes after the restart finds only what was written since (the restart lost
    // the rest): from the start it is told to read the store; near the end it is served.
    let late = read_all(b.subscribe(&(), "s", 0).await.unwrap(), 0, LIMIT).await;
    late.check(&produced);
    assert_eq!(late.ending(), Ending::Stale, "{:?}", errors.lock().unwrap());
    let at = produced.len() as u64 - 3;
    let near_end = read_all(b.subscribe(&(), "s", at).await.unwrap(), at, LIMIT).await;
    assert_eq!(near_end.ending(), Ending::End);
    assert_eq!(near_end.check(&produced), produced);
}

/// Pub/sub cannot replay what was published while the connection was down, so its readers end
/// with `stale` (never corrupted, never hanging); once Redis is back, new readers are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcast_readers_end_stale_when_redis_restarts() {
    let Some(mut server) = Server::start() else { return };
    let options = options("restart-bc");
    let relay_a: Arc<dyn Relay> = Arc::new(BroadcastRelay::connect(&server.url(), options.clone()).await.unwrap());
    let a = plane(store(&["s"]), relay_a, |_| {});
    let (errors, hook) = recorder();
    let relay_b: Arc<dyn Relay> = Arc::new(BroadcastRelay::connect(&server.url(), options.clone()).await.unwrap());
    let b = plane(store(&[]), relay_b, |o| o.on_relay_error = Some(hook));

    let h = a.open("s").await.unwrap();
    let before = tokio::spawn(read_all(b.subscribe(&(), "s", 0).await.unwrap(), 0, LIMIT));
    let mut produced = Vec::new();
    for i in 0..40 {
        let d = format!("before {i} ");
        produced.extend(units(&d));
        h.push(&d).unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    server.kill();
    let got = before.await.unwrap();
    assert_eq!(got.ending(), Ending::Stale);
    got.check(&produced);
    assert!(
        errors.lock().unwrap().iter().any(|(p, m)| *p == RelayPhase::Frames && m.contains("connection was lost")),
        "{:?}",
        errors.lock().unwrap()
    );
    server.up();
    // Give the writer's connection a moment to come back, then join at the live position.
    for i in 0..5 {
        let d = format!("reconnecting {i} ");
        produced.extend(units(&d));
        h.push(&d).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let live = h.seq();
    let after = tokio::spawn(read_all(b.subscribe(&(), "s", live).await.unwrap(), live, LIMIT));
    for i in 0..40 {
        let d = format!("after {i} ");
        produced.extend(units(&d));
        h.push(&d).unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    h.close().await.unwrap();
    let got = after.await.unwrap();
    assert_eq!(got.ending(), Ending::End, "{:?}", got.frames.last());
    assert_eq!(got.check(&produced), produced);
}

/// With Redis gone for good: the writer gives up after its retry window and says so through
/// the adapter's hook; a new reader gets `absent` (the attach failure is reported); the
/// producer and its store never notice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_reported_and_never_reaches_the_producer() {
    let Some(mut server) = Server::start() else { return };
    for topology in ["log", "broadcast"] {
        let (writer_errors, writer_hook) = recorder();
        let options = RedisRelayOptions {
            publish_retry_ms: 300,
            on_error: Some(writer_hook),
            connect_timeout_ms: 300,
            ..options(&format!("outage-{topology}"))
        };
        if server.child.is_none() {
            server.up();
        }
        let relay = |url: String, options: RedisRelayOptions| async move {
            let r: Arc<dyn Relay> = match topology {
                "log" => Arc::new(LogRelay::connect(&url, options, LogOptions::default()).await.unwrap()),
                _ => Arc::new(BroadcastRelay::connect(&url, options).await.unwrap()),
            };
            r
        };
        let m = store(&["s"]);
        let a = plane(m.clone(), relay(server.url(), options.clone()).await, |_| {});
        let (errors, hook) = recorder();
        let b = plane(store(&[]), relay(server.url(), options.clone()).await, |o| o.on_relay_error = Some(hook));
        let h = a.open("s").await.unwrap();
        h.push("written while Redis was up ").unwrap();
        h.flush().await.unwrap();
        server.kill();
        h.push("and while it was down").unwrap();
        h.close().await.unwrap();
        assert_eq!(
            String::from_utf16(&m.row("s").unwrap().durable_text()).unwrap(),
            "written while Redis was up and while it was down"
        );
        for _ in 0..100 {
            if !writer_errors.lock().unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        {
            let reported = writer_errors.lock().unwrap();
            assert!(!reported.is_empty(), "{topology}: the writer's failure was reported");
            assert!(reported.iter().all(|(p, m)| *p == RelayPhase::Publish && m.contains("dropped")), "{reported:?}");
        }
        let got = read_all(b.subscribe(&(), "s", 0).await.unwrap(), 0, LIMIT).await;
        assert_eq!(got.ending(), Ending::Absent, "{topology}");
        assert!(errors.lock().unwrap().iter().any(|(p, _)| *p == RelayPhase::Attach), "{:?}", errors.lock().unwrap());
    }
}
