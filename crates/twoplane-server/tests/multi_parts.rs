//! A message made of parts (docs/contract.md §8) across two `twoplane serve --demo` processes
//! sharing one PostgreSQL and one Redis (the log relay), driven over real HTTP on loopback. Needs
//! both servers: `bash scripts/test-multi.sh` starts them and runs this file (it is `#[ignore]`d
//! under plain `cargo test`).
//!
//! 1. A producer streams the issue's message (reasoning, a tool call whose input arrives in 40
//!    pieces, its output set twice, two texts, a data part replaced once, a transient part,
//!    metadata, the finish reason) into A through `POST /v1/streams/{id}/events`, a line at a
//!    time. Readers on B join at 0 and, again and again while it streams, at the durable message
//!    B's `/api/messages` shows (the row and chunk rows, assembled by the core: every checkpoint
//!    boundary), each folding what it receives with the core's reader; some drop their
//!    connection after a few frames (mid-part) and resume from what they hold with
//!    `Last-Event-ID`. Every reader must end on `end` with exactly the produced message, and the
//!    store must hold it.
//! 2. The same with A killed by SIGKILL in the middle: B's sweeper must mark the row
//!    `interrupted`; every reader on B must stop (`stale`, the relay gone quiet) holding exactly
//!    the produced message at its resume point; the store's message must be the produced message
//!    at the store's length (a prefix: P), and at least as long as every `durable` a reader saw.
//!
//! The plan is random from one seed, printed first (`TWOPLANE_MULTI_SEED=N` replays it).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::cluster::{self, http, report, service_url, Database, Instance, Sse, Timings};
use common::parts::{issue_events, log_of};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame as BodyFrame;
use serde_json::Value;
use twoplane_core::message::{
    assemble_durable_message, decode_message_frame, Message, MessageAction, MessageChunkRow, MessageFrame, MessageLog,
    MessageReader,
};
use twoplane_core::reader::StopReason;
use twoplane_core::Text;
use twoplane_server::demo::answer::Rng;

mod common;

const DB_PREFIX: &str = "twoplane_parts";
const RUST_LOG: &str = "info";
const TIMINGS: Timings = Timings { lease_ttl_ms: 2_000, sweep_interval_ms: 500, tokens_per_second: 25 };

/// The scenarios kill instances: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn seed() -> u64 {
    std::env::var("TWOPLANE_MULTI_SEED").ok().and_then(|s| s.trim().parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 & 0xFFFF_FFFF
    })
}

fn serve_args(db: &Database, redis: &str, host: &str) -> Vec<String> {
    let relay = ["--relay", "log", "--relay-idle-ms", "1500", "--relay-first-frame-ms", "3000"];
    cluster::serve_args(db, redis, host, &TIMINGS, &relay)
}

/// Open `id` on `addr` and stream `events` into it, one line every `gap`, through one
/// `/events` body. Returns the answer's status and body (or the transport's error: a killed
/// server breaks the body off).
async fn produce(addr: SocketAddr, id: String, events: Vec<Value>, gap: Duration) -> Result<(u16, Value), String> {
    let (status, open, _) =
        http(addr, "POST", &format!("/v1/streams/{id}/open"), Some(r#"{"create":true}"#.into())).await?;
    if status != 200 {
        return Err(format!("open: {status} {open}"));
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<BodyFrame<Bytes>, std::io::Error>>(4);
    tokio::spawn(async move {
        for e in events {
            tokio::time::sleep(gap).await;
            if tx.send(Ok(BodyFrame::data(Bytes::from(format!("{e}\n"))))).await.is_err() {
                return;
            }
        }
    });
    let body = StreamBody::new(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) }));
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let request = hyper::Request::post(format!("/v1/streams/{id}/events?offset=0"))
        .header("host", addr.to_string())
        .header("content-type", "application/x-ndjson")
        .body(body)
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

/// The message `id` as `GET /api/messages` on `addr` shows it: its status and its durable
/// message (the row and chunk rows assembled by the core; a view without rows is a text).
async fn durable(addr: SocketAddr, id: &str) -> Result<(Option<String>, Message), String> {
    let (status, value, _) = http(addr, "GET", "/api/messages", None).await?;
    if status != 200 {
        return Err(format!("GET /api/messages: {status}"));
    }
    let Some(m) = value["messages"].as_array().and_then(|all| all.iter().find(|m| m["id"] == id)) else {
        return Ok((None, Message::new()));
    };
    let state = m["status"].as_str().map(str::to_owned);
    let Some(rows) = m.get("rows") else {
        return Ok((state, Message::from_text(Text::from(m["body"].as_str().unwrap_or_default()))));
    };
    let text = |v: &Value| v.as_str().map(Text::from);
    let chunks: Vec<MessageChunkRow> = rows["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| MessageChunkRow { seq: c["seq"].as_u64().unwrap(), text: text(&c["text"]), parts: text(&c["parts"]) })
        .collect();
    let message = assemble_durable_message(
        text(&rows["body"]).as_ref(),
        text(&rows["document"]).as_ref(),
        rows["seq"].as_u64().unwrap(),
        &chunks,
    )
    .map_err(|e| format!("{id}: the view's rows do not assemble: {e}"))?;
    Ok((state, message))
}

/// What one reader saw.
struct Seen {
    name: String,
    reader: MessageReader,
    /// The largest `durable` it was told.
    durable: u64,
    connections: usize,
    /// The last frames it received (for a failure's message).
    last: std::collections::VecDeque<String>,
}

/// Read `id` on `addr` holding `held`, dropping the connection after `drop_after` frames (then
/// resuming from what it holds, `Last-Event-ID` naming it), until it stops.
async fn read(
    addr: SocketAddr,
    id: String,
    name: String,
    held: Message,
    drop_after: Option<usize>,
) -> Result<Seen, String> {
    let mut seen = Seen {
        name,
        reader: MessageReader::new(id.as_str().into(), held),
        durable: 0,
        connections: 0,
        last: Default::default(),
    };
    let mut drop_after = drop_after;
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.reader.core().stopped().is_none() {
        if Instant::now() > deadline {
            return Err(format!("{}: still reading after 60 s", seen.name));
        }
        let from = seen.reader.core().resume_from();
        let last = (seen.connections > 0).then(|| from.to_string());
        let mut sse = Sse::get(addr, &format!("/api/stream?streamId={id}&from={from}"), last.as_deref()).await?;
        seen.connections += 1;
        let mut taken = 0;
        while let Some(event) = sse.event_within(Duration::from_secs(20)).await? {
            let frame = decode_message_frame(&event.data).map_err(|e| format!("{}: {e}: {}", seen.name, event.data))?;
            seen.last.push_back(event.data.chars().take(120).collect());
            if seen.last.len() > 4 {
                seen.last.pop_front();
            }
            if let MessageFrame::Durable { seq } = frame {
                seen.durable = seen.durable.max(seq);
            }
            if let MessageAction::Stop(reason) = seen.reader.feed(&frame) {
                if !matches!(reason, StopReason::End | StopReason::Stale) {
                    return Err(format!("{}: stopped on {reason:?} at {frame:?}", seen.name));
                }
                break;
            }
            taken += 1;
            if drop_after.is_some_and(|n| taken >= n) {
                drop_after = None;
                break;
            }
        }
    }
    Ok(seen)
}

/// Readers on `b`: one at 0 now, then one every `every` at the durable message B shows, every
/// third dropping its connection mid-way; until the stream is no longer `streaming` or
/// `until`.
async fn spawn_readers(
    b: SocketAddr,
    id: &str,
    rng: &mut Rng,
    every: Duration,
    until: Instant,
) -> Vec<tokio::task::JoinHandle<Result<Seen, String>>> {
    let mut handles = vec![tokio::spawn(read(b, id.to_owned(), "at 0".into(), Message::new(), None))];
    let mut k = 0;
    while Instant::now() < until {
        tokio::time::sleep(every).await;
        let Ok((status, held)) = durable(b, id).await else { continue };
        if status.as_deref() != Some("streaming") {
            break;
        }
        k += 1;
        let drop_after = (k % 3 == 0).then(|| 1 + rng.between(0, 12) as usize);
        let name = format!("joined at the store's {} (drop after {drop_after:?})", held.len());
        handles.push(tokio::spawn(read(b, id.to_owned(), name, held, drop_after)));
    }
    handles
}

/// The scenario's turn, its seed's generator, a fresh database, an emptied log directory, the
/// Redis URL and a message id of its own (Redis keeps a finished stream's log for a while, so an
/// id used by an earlier run would be read back).
async fn begin(
    scenario: &str,
) -> (tokio::sync::MutexGuard<'static, ()>, Rng, Database, std::path::PathBuf, String, String) {
    let serial = SERIAL.lock().await;
    let seed = seed();
    println!("{scenario}: seed {seed} (rerun with TWOPLANE_MULTI_SEED={seed})");
    let db = Database::create(&service_url("TWOPLANE_PG_URL"), DB_PREFIX, scenario, seed).await;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("multi-parts").join(format!("{seed}-{scenario}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let id = format!("parts-{scenario}-{}-{seed}", std::process::id());
    (serial, Rng::new(seed), db, dir, service_url("TWOPLANE_REDIS_URL"), id)
}

/// `m` is exactly the produced message at its own length.
fn check_prefix(what: &str, m: &Message, log: &MessageLog, failures: &mut Vec<String>) {
    if m.len() > log.len() || m.document() != log.message_at(m.len()).document() {
        failures.push(format!(
            "{what}: holds {} units that are not the produced message's first ones:\n  held     {}\n  produced {}",
            m.len(),
            m.document().to_string_lossy(),
            log.message_at(m.len()).document().to_string_lossy()
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis on loopback: run `bash scripts/test-multi.sh`"]
async fn a_message_with_parts_reaches_readers_on_another_instance() {
    let (_serial, mut rng, db, dir, redis, id) = begin("relayed").await;
    let specs: Vec<(&str, Vec<String>)> = ["A", "B"].iter().map(|h| (*h, serve_args(&db, &redis, h))).collect();
    let mut instances = Instance::start_all_logging(&specs, &dir, RUST_LOG);
    let (a, b) = (instances[0].addr, instances[1].addr);
    let events = issue_events();
    let log = log_of(&events);
    let mut failures = Vec::new();

    // The producer streams the events, then closes: the readers keep joining until then.
    let produced_id = id.clone();
    let producer = tokio::spawn(async move {
        let body = produce(a, produced_id.clone(), events, Duration::from_millis(40)).await;
        let close =
            http(a, "POST", &format!("/v1/streams/{produced_id}/close"), None).await.map(|(status, _, _)| status);
        (body, close)
    });
    let readers =
        spawn_readers(b, &id, &mut rng, Duration::from_millis(250), Instant::now() + Duration::from_secs(20)).await;
    match producer.await.unwrap() {
        (Ok((200, _)), Ok(200)) => {}
        other => failures.push(format!("the producer's body and close: {other:?}")),
    }
    let mut count = 0;
    for handle in readers {
        match handle.await.unwrap() {
            Err(e) => failures.push(e),
            Ok(seen) => {
                count += 1;
                if seen.reader.core().stopped() != Some(StopReason::End) {
                    failures.push(format!(
                        "{}: stopped on {:?}, want end; its last frames: {:?}",
                        seen.name,
                        seen.reader.core().stopped(),
                        seen.last
                    ));
                }
                if seen.reader.message().document() != log.message().document() {
                    check_prefix(&seen.name, seen.reader.message(), &log, &mut failures);
                    failures.push(format!("{}: did not end with the produced message", seen.name));
                }
            }
        }
    }
    println!("relayed: {count} readers on B checked");
    if count < 4 {
        failures.push(format!("only {count} readers joined while the message streamed"));
    }
    let (status, stored) = durable(b, &id).await.unwrap();
    if status.as_deref() != Some("complete") || stored.document() != log.message().document() {
        failures.push(format!("the store holds {status:?} {}", stored.document().to_string_lossy()));
    }
    for i in &mut instances {
        let _ = i.terminate();
    }
    report(failures, &instances, &[], 40);
    drop(instances);
    db.drop_it().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis on loopback: run `bash scripts/test-multi.sh`"]
async fn a_killed_host_leaves_a_prefix_of_the_message_that_readers_converge_on() {
    let (_serial, mut rng, db, dir, redis, id) = begin("killed").await;
    let specs: Vec<(&str, Vec<String>)> = ["A", "B"].iter().map(|h| (*h, serve_args(&db, &redis, h))).collect();
    let mut instances = Instance::start_all_logging(&specs, &dir, RUST_LOG);
    let (a, b) = (instances[0].addr, instances[1].addr);
    let events = issue_events();
    let log = log_of(&events);
    let mut failures = Vec::new();

    // About 75 lines, 60 ms apart: killed between a quarter and a half of the way.
    let gap = Duration::from_millis(60);
    let producer = tokio::spawn(produce(a, id.clone(), events.clone(), gap));
    let kill_after = gap * (events.len() as u32) * (25 + rng.between(0, 25) as u32) / 100;
    let kill_at = Instant::now() + kill_after;
    let readers = spawn_readers(b, &id, &mut rng, Duration::from_millis(200), kill_at).await;
    tokio::time::sleep_until(kill_at.into()).await;
    instances[0].kill();
    let killed = Instant::now();
    let _ = producer.await;
    // B's sweeper releases A's row within the lease time to live plus a sweep.
    let mut status = None;
    let mut stored = Message::new();
    while killed.elapsed() < Duration::from_secs(15) {
        if let Ok((s, m)) = durable(b, &id).await {
            (status, stored) = (s, m);
            if status.as_deref() == Some("interrupted") {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if status.as_deref() != Some("interrupted") {
        failures.push(format!("the row is {status:?} {:?} after the kill, want interrupted", killed.elapsed()));
    }
    check_prefix("the store", &stored, &log, &mut failures);
    if stored.len() >= log.len() {
        failures.push("the kill came after the whole message was durable: it cut nothing".into());
    }
    let mut count = 0;
    for handle in readers {
        match handle.await.unwrap() {
            Err(e) => failures.push(e),
            Ok(seen) => {
                count += 1;
                check_prefix(&seen.name, seen.reader.message(), &log, &mut failures);
                if seen.durable > stored.len() {
                    failures.push(format!(
                        "{}: was told {} units were durable, the store holds {}",
                        seen.name,
                        seen.durable,
                        stored.len()
                    ));
                }
            }
        }
    }
    println!("killed: {count} readers on B checked; the store kept {} of {} units", stored.len(), log.len());
    let _ = instances[1].terminate();
    report(failures, &instances, &[], 40);
    drop(instances);
    db.drop_it().await;
}
