//! A producer that stalls past its lease and comes back, with real processes: three
//! `twoplane serve --demo` instances A, B and C on one PostgreSQL database and one Redis (the
//! log relay), driven over HTTP on loopback. Needs both servers: `bash scripts/test-multi.sh`
//! starts them and runs this file with `--ignored`; `cargo test` alone skips it.
//!
//! The scenario: A produces an answer that lasts several seconds; SSE readers follow it from 0
//! on A (locally) and on B and C (relayed). A is stopped with SIGSTOP mid-answer. Its lease
//! lapses, and the sweeper of B or C marks the row `interrupted`. Then A is continued with
//! SIGCONT: its producer goes on pushing and checkpointing as if nothing happened, and the
//! database must refuse it (the fence, docs/contract.md §6). More readers join on every
//! instance after the sweep. Asserted:
//!
//! - from the sweep on, the row never changes: status `interrupted`, the body, the length column
//!   and the chunk rows exactly as the sweep found them (so no chunk row is written after it),
//!   watched every 100 ms until every reader finished and A's producer has learnt of the fence;
//! - the swept row is consistent: its chunk rows tile the text after the body, the length column
//!   matches, and the text is a prefix of the produced answer;
//! - A's producer stops with `fenced` (its log says so);
//! - every reader on every instance ends, and ends with the store's text: a reader that stopped
//!   on `end` holds exactly the store's text and saw the store's status; one sent to the store
//!   (`stale`, `absent`) takes the store's text, as the client rule says (npm/twoplane README,
//!   `onStop`); no reader was ever told a length was durable that the store does not hold, and
//!   every reader's live text is a prefix of the produced answer; `/api/messages` on every
//!   instance shows the store's text and `interrupted`;
//! - no configured password appears in any process's output, any error or any response body the
//!   test saw (`common::secrets`).
//!
//! Every wait is bounded; the processes are killed if the test fails, and their logs are kept
//! under `target/tmp/stall/` (the tails are printed on failure). `TWOPLANE_STALL_SEED=N` replays
//! the choice of the answer.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cluster::{self, http, pg, service_url, Database, Instance, Sse, Timings};
use common::store::{is_prefix, stored_row, tiled_text};
use twoplane_core::json::decode_frame;
use twoplane_core::reader::StopReason;
use twoplane_core::{Frame, ReaderAction, Text, TextReader};
use twoplane_server::demo::answer::{answer_text, Rng};
use twoplane_server::demo::{script, Pace};

const LEASE_TTL_MS: u64 = 1_000;
const SWEEP_INTERVAL_MS: u64 = 250;
const TOKENS_PER_SECOND: u32 = 20;
/// The answer lasts at least this long (its planned gaps), so it is certainly still streaming
/// when A is stopped and when it is continued.
const LEAST_ANSWER: Duration = Duration::from_secs(8);
/// How long the answer runs before A is stopped: long enough for a checkpoint or two.
const RUN_BEFORE_STOP: Duration = Duration::from_millis(1_800);
/// How long the row is watched after SIGCONT at the least (A's next checkpoint comes within an
/// interval and its jitter; this is several of them).
const WATCH_AFTER_CONT: Duration = Duration::from_secs(4);
const SWEEP_DEADLINE: Duration = Duration::from_secs(15);
const READERS_DEADLINE: Duration = Duration::from_secs(40);

/// Everything the test saw that a secret must not be in: (where, text).
type Seen = Arc<Mutex<Vec<(String, String)>>>;

fn note(seen: &Seen, place: impl Into<String>, text: impl Into<String>) {
    seen.lock().unwrap().push((place.into(), text.into()));
}

// ------------------------------------------------------------------------------------------
// HTTP

async fn ask(addr: SocketAddr, prompt: &str, seed: u64, seen: &Seen) -> Result<String, String> {
    let body = serde_json::json!({ "prompt": prompt, "seed": seed }).to_string();
    let (status, value, raw) = http(addr, "POST", "/api/chat", Some(body)).await?;
    note(seen, format!("POST /api/chat on {addr}"), raw);
    if status != 201 {
        return Err(format!("POST /api/chat on {addr}: {status} {value}"));
    }
    value["assistant"]["id"].as_str().map(str::to_owned).ok_or_else(|| format!("no assistant id in {value}"))
}

/// One message as `GET /api/messages` on `addr` shows it: (status, durable text).
async fn durable_view(addr: SocketAddr, id: &str, seen: &Seen) -> Result<(String, String), String> {
    let (status, value, raw) = http(addr, "GET", "/api/messages", None).await?;
    note(seen, format!("GET /api/messages on {addr}"), raw);
    if status != 200 {
        return Err(format!("GET /api/messages on {addr}: {status} {value}"));
    }
    let messages = value["messages"].as_array().ok_or("no messages array")?;
    let m = messages.iter().find(|m| m["id"] == id).ok_or_else(|| format!("message {id} missing on {addr}"))?;
    Ok((m["status"].as_str().unwrap_or("").to_owned(), m["body"].as_str().unwrap_or("").to_owned()))
}

// ------------------------------------------------------------------------------------------
// Readers

/// What one reader saw, from its join at 0 to the frame that stopped it.
#[derive(Debug)]
struct ReaderLog {
    label: String,
    reason: StopReason,
    /// The reader's live text when it stopped.
    text: Text,
    /// The status `end` carried, when it stopped on `end`.
    end_status: Option<String>,
    /// The largest length any frame announced durable (`durable`, or `end`'s seq).
    max_durable: u64,
    /// When it stopped.
    stopped: Instant,
}

async fn run_reader(label: String, addr: SocketAddr, id: String, seen: Seen) -> Result<ReaderLog, String> {
    let sid = Text::from(id.as_str());
    let mut reader = TextReader::new(sid, Text::new());
    let mut sse = Sse::get(addr, &format!("/api/stream?streamId={id}&from=0"), None).await?;
    let mut max_durable = 0;
    let mut end_status = None;
    let reason = loop {
        let Some(event) = sse.event().await.map_err(|e| format!("{label}: {e}"))? else {
            return Err(format!("{label}: the SSE body ended without a terminal frame"));
        };
        note(&seen, format!("{label}: an SSE event"), event.data.clone());
        let frame = decode_frame(&event.data).map_err(|e| format!("{label}: bad frame {:?}: {e}", event.data))?;
        match &frame {
            Frame::Durable { seq } => max_durable = max_durable.max(*seq),
            Frame::End { seq, status, .. } => {
                max_durable = max_durable.max(*seq);
                end_status = Some(status.as_str().to_owned());
            }
            _ => {}
        }
        if let ReaderAction::Stop(reason) = reader.feed(&frame) {
            break reason;
        }
    };
    Ok(ReaderLog { label, reason, text: reader.text().clone(), end_status, max_durable, stopped: Instant::now() })
}

// ------------------------------------------------------------------------------------------
// The scenario

const TIMINGS: Timings =
    Timings { lease_ttl_ms: LEASE_TTL_MS, sweep_interval_ms: SWEEP_INTERVAL_MS, tokens_per_second: TOKENS_PER_SECOND };

fn serve_args(db: &Database, redis: &str, host: &str) -> Vec<String> {
    // Relay idle longer than the stall: relayed readers must hear A's fence, not time out first.
    cluster::serve_args(db, redis, host, &TIMINGS, &["--relay", "log", "--relay-idle-ms", "30000"])
}

fn log_dir(seed: u64) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("stall").join(seed.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run_seed() -> u64 {
    match std::env::var("TWOPLANE_STALL_SEED") {
        Ok(s) => s.trim().parse().unwrap_or_else(|_| panic!("TWOPLANE_STALL_SEED={s:?} is not an integer")),
        Err(_) => {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 & 0xFFFF_FFFF
        }
    }
}

/// An answer seed (from `rng`) whose answer to `prompt` lasts at least [`LEAST_ANSWER`].
fn long_answer(rng: &mut Rng, prompt: &str) -> u64 {
    loop {
        let seed = rng.next_u64() >> 12;
        let least: Duration =
            script(prompt, seed, Pace::TokensPerSecond(TOKENS_PER_SECOND)).iter().map(|(gap, _)| *gap).sum();
        if least >= LEAST_ANSWER {
            return seed;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis on loopback: run `bash scripts/test-multi.sh`"]
async fn a_producer_stalled_past_its_lease_is_fenced_and_every_reader_ends_with_the_store() {
    let (pg_url, redis_url) = (service_url("TWOPLANE_PG_URL"), service_url("TWOPLANE_REDIS_URL"));
    let seed = run_seed();
    eprintln!("stall: seed {seed} (TWOPLANE_STALL_SEED={seed} replays the answer)");
    let mut rng = Rng::new(seed);
    let seen: Seen = Arc::default();
    let mut failures: Vec<String> = Vec::new();

    let db = Database::create(&pg_url, "twoplane_stall", "log", seed).await;
    let dir = log_dir(seed);
    let specs: Vec<(&str, Vec<String>)> =
        ["a", "b", "c"].iter().map(|h| (*h, serve_args(&db, &redis_url, &format!("stall-{h}-{seed}")))).collect();
    let mut nodes = Instance::start_all(&specs, &dir);
    let addrs: Vec<(String, SocketAddr)> = nodes.iter().map(|n| (n.name.clone(), n.addr)).collect();
    let client = pg(&db.url).await;

    let prompt = "What is a fencing token, and why does a lease need one?";
    let answer_seed = long_answer(&mut rng, prompt);
    let produced = Text::from(answer_text(prompt, answer_seed).as_str());
    let id = match ask(nodes[0].addr, prompt, answer_seed, &seen).await {
        Ok(id) => id,
        Err(e) => panic!("{e}"),
    };

    // Readers from 0 on every instance, joined while the answer streams.
    let mut readers = Vec::new();
    for (name, addr) in &addrs {
        let label = format!("early reader on {name}");
        readers.push(tokio::spawn(run_reader(label, *addr, id.clone(), seen.clone())));
    }
    tokio::time::sleep(RUN_BEFORE_STOP).await;

    // Stop A past its lease; B's or C's sweeper releases its row.
    nodes[0].signal(libc::SIGSTOP);
    let stopped = Instant::now();
    let swept = loop {
        match stored_row(&client, &id).await {
            Ok(row) if row.status.as_deref() == Some("interrupted") => break Some(row),
            Ok(_) => {}
            Err(e) => failures.push(e),
        }
        if stopped.elapsed() > SWEEP_DEADLINE {
            failures.push(format!("the row was not swept within {SWEEP_DEADLINE:?} of SIGSTOP"));
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let Some(swept) = swept else {
        nodes[0].signal(libc::SIGCONT);
        report(failures, &nodes, &seen);
        unreachable!("report panics on failures");
    };
    if swept.host.as_deref() != Some(format!("stall-a-{seed}").as_str()) {
        failures.push(format!("the swept row names host {:?}, not A", swept.host));
    }
    let store_text = tiled_text(&id, &swept, &mut failures);
    if !is_prefix(&store_text, &produced) {
        failures.push("the swept row's text is not a prefix of the answer".into());
    }
    if store_text.len() >= produced.len() {
        failures.push("the whole answer was durable at the sweep: the stall came too late to test the fence".into());
    }

    // Continue A: its producer goes on as if nothing happened, and must be refused.
    nodes[0].signal(libc::SIGCONT);
    let continued = Instant::now();
    for (name, addr) in &addrs {
        let label = format!("late reader on {name}");
        readers.push(tokio::spawn(run_reader(label, *addr, id.clone(), seen.clone())));
    }

    // Watch the row until every reader finished, A's producer has learnt of the fence, and a few
    // checkpoint intervals have passed.
    let mut changed = false;
    loop {
        match stored_row(&client, &id).await {
            Ok(row) if row != swept && !changed => {
                changed = true;
                failures.push(format!(
                    "the row changed after the sweep ({:.1} s after SIGCONT): status {:?} -> {:?}, length {} -> {}, \
                     {} -> {} chunk rows, body of {} -> {} bytes",
                    continued.elapsed().as_secs_f64(),
                    swept.status,
                    row.status,
                    swept.seq,
                    row.seq,
                    swept.chunks.len(),
                    row.chunks.len(),
                    swept.body.len(),
                    row.body.len()
                ));
            }
            Ok(_) => {}
            Err(e) => failures.push(e),
        }
        let fenced = nodes[0].log_text().contains("fenced");
        let done = readers.iter().all(|r| r.is_finished());
        if (fenced && done && continued.elapsed() >= WATCH_AFTER_CONT) || continued.elapsed() > READERS_DEADLINE {
            if !fenced {
                failures.push("A's producer never reported that the store fenced it off".into());
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Every reader ended, with the store's text.
    let final_row = match stored_row(&client, &id).await {
        Ok(row) => row,
        Err(e) => panic!("{e}"),
    };
    let final_text = tiled_text(&id, &final_row, &mut failures);
    let final_status = final_row.status.clone().unwrap_or_default();
    for handle in readers {
        if !handle.is_finished() {
            handle.abort();
            failures.push(format!("a reader did not end within {READERS_DEADLINE:?} of SIGCONT"));
            continue;
        }
        let log = match handle.await {
            Ok(Ok(log)) => log,
            Ok(Err(e)) => {
                failures.push(e);
                continue;
            }
            Err(e) => {
                failures.push(format!("a reader task failed: {e}"));
                continue;
            }
        };
        eprintln!(
            "stall: {} stopped on {} {:.1} s after SIGCONT, holding {} code units (the store: {})",
            log.label,
            log.reason.as_str(),
            log.stopped.saturating_duration_since(continued).as_secs_f64(),
            log.text.len(),
            final_text.len()
        );
        if !is_prefix(&log.text, &produced) {
            failures.push(format!("{}: its live text is not a prefix of the answer", log.label));
        }
        if log.max_durable > final_text.len() as u64 {
            failures.push(format!(
                "{}: told {} code units were durable, the store holds {}",
                log.label,
                log.max_durable,
                final_text.len()
            ));
        }
        // What the reader shows in the end: its own text after `end`, the store's otherwise.
        let shown = match log.reason {
            StopReason::End => {
                if log.end_status.as_deref() != Some(final_status.as_str()) {
                    failures.push(format!(
                        "{}: `end` said {:?}, the store says {final_status:?}",
                        log.label, log.end_status
                    ));
                }
                log.text.clone()
            }
            StopReason::Stale | StopReason::Absent => final_text.clone(),
            other => {
                failures.push(format!(
                    "{}: stopped on {} (the server must never send that)",
                    log.label,
                    other.as_str()
                ));
                continue;
            }
        };
        if shown != final_text {
            failures.push(format!(
                "{}: ends with {} code units, the store holds {} ({})",
                log.label,
                shown.len(),
                final_text.len(),
                log.reason.as_str()
            ));
        }
    }
    for (name, addr) in &addrs {
        match durable_view(*addr, &id, &seen).await {
            Ok((status, body)) => {
                if status != final_status || final_text != body.as_str() {
                    failures.push(format!(
                        "/api/messages on {name} shows {status:?} with {} code units; the store: {final_status:?}, {}",
                        Text::from(body.as_str()).len(),
                        final_text.len()
                    ));
                }
            }
            Err(e) => failures.push(e),
        }
    }
    if final_status != "interrupted" {
        failures.push(format!("the row ends {final_status:?}, not interrupted"));
    }

    for node in nodes.iter_mut() {
        if let Err(e) = node.terminate() {
            failures.push(e);
        }
    }
    if failures.is_empty() {
        db.drop_it().await;
    }
    report(failures, &nodes, &seen);
}

/// [`common::cluster::report`] over the texts `seen` as well, with each log's last 30 lines.
fn report(failures: Vec<String>, nodes: &[Instance], seen: &Seen) {
    let seen = seen.lock().unwrap().clone();
    common::cluster::report(failures, nodes, &seen, 30);
}
