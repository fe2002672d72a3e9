//! Several `twoplane serve --demo` processes sharing one PostgreSQL and one Redis, driven over
//! real HTTP on loopback. Needs both servers: `bash scripts/test-multi.sh` starts them (Debian's
//! packages, on 127.0.0.1), builds the binary and runs this file; `cargo test` alone skips it
//! (it is `#[ignore]`d, and says why).
//!
//! The log topology (three instances A, B, C):
//! 1. Answers are produced on A; SSE readers join on B and C at random moments and at random
//!    offsets (anywhere between 0 and the durable length `/api/messages` shows them), some drop
//!    their connection and resume with `Last-Event-ID`, some join again after a `stale`; Redis is
//!    killed and restarted in the middle. Every reader must end with exactly the produced text,
//!    which the test knows without asking A: the demo's answer is a pure function of the prompt
//!    and the seed the request names (`answer_text`). Every live leg holds a prefix of it, and a
//!    leg that stopped on `end` holds all of it (the store, complete by then, cannot cover for a
//!    relay that lost the tail). The restart is planned inside the answers (see below); at least
//!    one answer must still be streaming once Redis is back, and at least one relay leg opened
//!    before the restart must reach `end` after it.
//! 2. More answers on A, one on B; A is killed with SIGKILL in the middle. The sweeper of B or C
//!    must mark A's rows `interrupted` within a few lease times to live (every answer that was
//!    certainly still streaming at the kill, and at least one), and must not touch B's
//!    answer, which completes. For A's answers: the store (body plus chunk rows) is a prefix of
//!    the produced text, its chunk rows tile it exactly (nothing duplicated), it holds at least
//!    every length any reader was told was durable (nothing lost), and every reader's text, and
//!    its splice with the final store text, is a prefix of the produced text.
//!    An instance D started meanwhile must not touch the live rows of A or B.
//! 3. SIGTERM on B, C and D: each exits cleanly and gives its lease up.
//!
//! The broadcast topology (two instances): readers that join behind the live position end with
//! `stale` (pub/sub has no history) and converge on the store; every reader ends with the
//! produced text. One reader per answer is planned late (it joins at 0 once the store holds
//! text), and must be answered `stale`.
//!
//! The "at least one" conditions hold by plan, not by luck: the demo's schedule is a pure
//! function too (`demo::script`), and its gaps are sleeps that never end early, so their sum is
//! the least time an answer takes. Seeds are drawn until an answer takes at least
//! [`LEAST_ANSWER`], and the restart and the kill are placed a fraction of the way to the first
//! moment any answer may finish.
//!
//! Every random choice comes from one seed, printed first (`TWOPLANE_MULTI_SEED=N` replays the
//! same plan; the machine's timing still varies). Each scenario uses a fresh database. Every wait
//! is bounded, the processes are killed if the test fails, and their logs are kept under
//! `target/tmp/multi-instance/` (the tails are printed on failure). The processes, databases,
//! HTTP and SSE clients and the closing secrets check are the shared harness, `common::cluster`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::cluster::{self, http, pg, report, service_url, Database, Instance, Sse, Timings};
use common::store::{is_prefix, stored_row, tiled_text};
use twoplane_core::json::decode_frame;
use twoplane_core::reader::StopReason;
use twoplane_core::{splice_stream_text, Frame, ReaderAction, Text, TextReader};
use twoplane_server::demo::answer::{answer_text, Rng};
use twoplane_server::demo::{script, Pace};

mod common;

/// Each scenario's database is named `twoplane_multi_<scenario>_<pid>_<seed>`; a run drops what
/// earlier runs left under this prefix.
const DB_PREFIX: &str = "twoplane_multi";
/// The instances' `RUST_LOG`: the Redis adapter's debug lines too, in the logs kept for a failure
/// and read by the secrets check.
const RUST_LOG: &str = "info,twoplane_redis=debug";
const LEASE_TTL_MS: u64 = 2_000;
const SWEEP_INTERVAL_MS: u64 = 500;
/// Slow enough that an answer (about 90 to 200 tokens) lasts several seconds, so Redis restarts
/// and a producer dies in its middle.
const TOKENS_PER_SECOND: u32 = 25;
/// How often a reader that lost the live leg re-reads the store (the demo page uses 400 ms).
const STORE_POLL: Duration = Duration::from_millis(200);
/// Every answer's seed is drawn (from the run's seed) until its schedule takes at least this
/// long, so a restart or a kill planned as a fraction of it lands in the answer's middle.
const LEAST_ANSWER: Duration = Duration::from_millis(4_000);

/// The scenarios restart the one Redis and would disturb each other: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

// ------------------------------------------------------------------------------------------
// Environment

struct Env {
    pg_url: String,
    redis_url: String,
    seed: u64,
}

fn env() -> Env {
    // One seed for the whole run, whichever scenario asks first.
    static SEED: OnceLock<u64> = OnceLock::new();
    let seed = *SEED.get_or_init(|| match std::env::var("TWOPLANE_MULTI_SEED") {
        Ok(s) => s.trim().parse().unwrap_or_else(|_| panic!("TWOPLANE_MULTI_SEED={s:?} is not an integer")),
        Err(_) => {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 & 0xFFFF_FFFF
        }
    });
    Env { pg_url: service_url("TWOPLANE_PG_URL"), redis_url: service_url("TWOPLANE_REDIS_URL"), seed }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A uniform fraction in [0, 1).
fn fraction(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn ms(rng: &mut Rng, lo: u64, hi: u64) -> Duration {
    Duration::from_millis(rng.between(lo, hi))
}

// ------------------------------------------------------------------------------------------
// The instances

const TIMINGS: Timings =
    Timings { lease_ttl_ms: LEASE_TTL_MS, sweep_interval_ms: SWEEP_INTERVAL_MS, tokens_per_second: TOKENS_PER_SECOND };

fn serve_args(db: &Database, redis: &str, relay: &str, host: &str) -> Vec<String> {
    let relay_settings = ["--relay", relay, "--relay-idle-ms", "1500", "--relay-first-frame-ms", "2000"];
    cluster::serve_args(db, redis, host, &TIMINGS, &relay_settings)
}

// ------------------------------------------------------------------------------------------
// HTTP

/// `POST /api/chat` with a seed; returns the assistant's message id.
async fn ask(addr: SocketAddr, prompt: &str, seed: u64) -> String {
    let body = serde_json::json!({ "prompt": prompt, "seed": seed }).to_string();
    let (status, value, _) = http(addr, "POST", "/api/chat", Some(body)).await.unwrap();
    assert_eq!(status, 201, "{value}");
    assert_eq!(value["seed"].as_u64(), Some(seed), "{value}");
    value["assistant"]["id"].as_str().unwrap().to_owned()
}

/// One message as `GET /api/messages` on `addr` shows it: (status, durable text).
async fn durable_view(addr: SocketAddr, id: &str) -> Result<(String, String), String> {
    let (status, value, _) = http(addr, "GET", "/api/messages", None).await?;
    if status != 200 {
        return Err(format!("GET /api/messages on {addr}: {status} {value}"));
    }
    let messages = value["messages"].as_array().ok_or("no messages array")?;
    let m = messages.iter().find(|m| m["id"] == id).ok_or_else(|| format!("message {id} missing on {addr}"))?;
    Ok((m["status"].as_str().unwrap_or("").to_owned(), m["body"].as_str().unwrap_or("").to_owned()))
}

// ------------------------------------------------------------------------------------------
// Readers

#[derive(Clone, Debug)]
struct ReaderPlan {
    label: String,
    stream_id: String,
    addr: SocketAddr,
    start_after: Duration,
    /// Join at this fraction of the durable length the store shows.
    offset: f64,
    /// Join at 0 right away, without reading the store first: what the page does with the
    /// assistant message `POST /api/chat` returns (the only way to meet pub/sub live).
    immediate: bool,
    /// Drop the connection after this many frames and resume with `Last-Event-ID`.
    reconnect_after: Option<usize>,
    /// After a `stale` or `absent` while the stream is still live, join again at the durable
    /// length (what a reload does) this many times; after that, follow the store only.
    rejoins: usize,
    /// Wait until the store holds some text of the still-streaming answer, then join at 0: a
    /// join certainly behind the live position (the durable length never passes it).
    late: bool,
}

/// One live leg: from the join to the frame that stopped the reader.
#[derive(Debug)]
struct Leg {
    from: usize,
    /// The reader's text when it stopped.
    text: Text,
    reason: StopReason,
    /// When the leg's first request went out, and when its last frame arrived.
    opened: Instant,
    stopped: Instant,
}

#[derive(Debug)]
struct ReaderLog {
    plan: ReaderPlan,
    legs: Vec<Leg>,
    /// Whether the join offset was strictly below the durable length the reader saw.
    behind: Vec<bool>,
    /// The largest durable length any frame announced (`durable`, or `end`'s seq).
    max_durable: u64,
    reconnected: bool,
    frames: usize,
    final_status: String,
    final_store: Text,
    /// `spliceStreamText(final store, this reader's text)`.
    rendered: Text,
}

async fn run_reader(plan: ReaderPlan, deadline: Instant) -> Result<ReaderLog, String> {
    tokio::time::sleep(plan.start_after).await;
    let sid = Text::from(plan.stream_id.as_str());
    let mut log = ReaderLog {
        plan: plan.clone(),
        legs: Vec::new(),
        behind: Vec::new(),
        max_durable: 0,
        reconnected: false,
        frames: 0,
        final_status: String::new(),
        final_store: Text::new(),
        rendered: Text::new(),
    };
    let mut last: Option<TextReader> = None;
    let mut rejoins_left = plan.rejoins;
    let mut reconnect_after = plan.reconnect_after;
    let (status, body) = loop {
        if Instant::now() > deadline {
            return Err(format!("{}: still not sealed at the deadline", plan.label));
        }
        let (status, body) = if plan.immediate && log.legs.is_empty() {
            ("streaming".to_owned(), String::new())
        } else {
            durable_view(plan.addr, &plan.stream_id).await?
        };
        if status != "streaming" {
            break (status, body);
        }
        let first = log.legs.is_empty();
        if first && plan.late && body.is_empty() {
            tokio::time::sleep(STORE_POLL).await;
            continue;
        }
        if !first {
            if rejoins_left == 0 {
                tokio::time::sleep(STORE_POLL).await;
                continue;
            }
            rejoins_left -= 1;
        }
        let store = Text::from(body.as_str());
        let from = if first { (store.len() as f64 * plan.offset) as usize } else { store.len() };
        log.behind.push(from < store.len());
        let mut reader = TextReader::new(sid.clone(), Text::from_slice(&store.units()[..from]));
        let path = format!("/api/stream?streamId={}&from={from}", plan.stream_id);
        let opened = Instant::now();
        let mut sse = Sse::get(plan.addr, &path, None).await?;
        let mut in_connection = 0;
        let reason = loop {
            let Some(event) = sse.event().await.map_err(|e| format!("{}: {e}", plan.label))? else {
                return Err(format!("{}: the SSE body ended without a terminal frame", plan.label));
            };
            let frame =
                decode_frame(&event.data).map_err(|e| format!("{}: bad frame {:?}: {e}", plan.label, event.data))?;
            // The id of the last event processed (not the decoder's, which may be ahead of it).
            let last_id = event.last_event_id.clone();
            log.frames += 1;
            in_connection += 1;
            match &frame {
                Frame::Durable { seq } | Frame::End { seq, .. } => log.max_durable = log.max_durable.max(*seq),
                _ => {}
            }
            if let ReaderAction::Stop(reason) = reader.feed(&frame) {
                break reason;
            }
            if reconnect_after.is_some_and(|n| in_connection >= n) {
                // What an EventSource does after a dropped connection: resume from the id of
                // the last event it processed.
                reconnect_after = None;
                log.reconnected = true;
                drop(sse);
                sse = Sse::get(plan.addr, &path, Some(&last_id)).await?;
                in_connection = 0;
            }
        };
        if matches!(reason, StopReason::Gap | StopReason::ForeignStream | StopReason::Malformed) {
            return Err(format!(
                "{}: the reader stopped on {} (the server must never send that)",
                plan.label,
                reason.as_str()
            ));
        }
        log.legs.push(Leg { from, text: reader.text().clone(), reason, opened, stopped: Instant::now() });
        last = Some(reader);
        if reason == StopReason::End {
            // The seal is the compaction and it landed before `end` went out: the store says so.
            let (status, body) = durable_view(plan.addr, &plan.stream_id).await?;
            if status == "streaming" {
                return Err(format!("{}: `end` received but the store still says streaming", plan.label));
            }
            break (status, body);
        }
    };
    log.final_status = status;
    log.final_store = Text::from(body.as_str());
    log.rendered = match &last {
        Some(reader) => reader.rendered(&sid, log.final_store.units()),
        None => log.final_store.clone(),
    };
    Ok(log)
}

/// A short description of where two texts part, for failure messages.
fn diverge(a: &Text, b: &Text) -> String {
    let at = a.units().iter().zip(b.units()).take_while(|(x, y)| x == y).count();
    format!("lengths {} and {}, first difference at {at}", a.len(), b.len())
}

struct Answer {
    id: String,
    produced: Text,
    readers: Vec<ReaderPlan>,
    /// Just before `POST /api/chat` went out.
    asked: Instant,
    /// The least time the producer takes (its planned gaps; a sleep never ends early): until
    /// `asked + least` the answer is certainly still streaming, unless its producer died.
    least: Duration,
}

impl Answer {
    /// The first moment the answer may have finished.
    fn earliest_end(&self) -> Instant {
        self.asked + self.least
    }
}

/// The least time the demo's producer takes over the answer to `prompt` with `seed`.
fn least_duration(prompt: &str, seed: u64) -> Duration {
    script(prompt, seed, Pace::TokensPerSecond(TOKENS_PER_SECOND)).iter().map(|(gap, _)| *gap).sum()
}

/// Ask `addr` for an answer to `prompt`, with a seed drawn from `rng` whose answer lasts at least
/// [`LEAST_ANSWER`] (the draw depends on the run's seed only, so a replay asks the same).
async fn start_answer(rng: &mut Rng, addr: SocketAddr, prompt: &str) -> Answer {
    let (seed, least) = loop {
        let seed = rng.next_u64() >> 12;
        let least = least_duration(prompt, seed);
        if least >= LEAST_ANSWER {
            break (seed, least);
        }
    };
    let asked = Instant::now();
    let id = ask(addr, prompt, seed).await;
    Answer { id, produced: Text::from(answer_text(prompt, seed).as_str()), readers: Vec::new(), asked, least }
}

/// A point `lo..=hi` percent of the way from `from` to `to` (or `from`, if `to` is not later).
fn between_instants(rng: &mut Rng, from: Instant, to: Instant, lo: u64, hi: u64) -> Instant {
    from + to.saturating_duration_since(from) * rng.between(lo, hi) as u32 / 100
}

fn plan_readers(
    rng: &mut Rng,
    answer: &mut Answer,
    nodes: &[(&str, SocketAddr)],
    count: usize,
    start_within_ms: u64,
    rejoin: bool,
) {
    for i in 0..count {
        let (node, addr) = nodes[i % nodes.len()];
        let plan = ReaderPlan {
            label: format!("{} reader {i} on {node}", answer.id),
            stream_id: answer.id.clone(),
            addr,
            start_after: ms(rng, 0, start_within_ms),
            offset: fraction(rng),
            immediate: false,
            reconnect_after: (rng.below(10) < 4).then(|| rng.between(2, 40) as usize),
            rejoins: if rejoin && rng.below(2) == 0 { rng.between(1, 3) as usize } else { 0 },
            late: false,
        };
        answer.readers.push(plan);
    }
}

/// A reader that joins at 0 the moment the answer is created, as the page that asked does.
fn plan_immediate(answer: &mut Answer, node: &str, addr: SocketAddr) {
    answer.readers.push(ReaderPlan {
        label: format!("{} immediate reader on {node}", answer.id),
        stream_id: answer.id.clone(),
        addr,
        start_after: Duration::ZERO,
        offset: 0.0,
        immediate: true,
        reconnect_after: None,
        rejoins: 0,
        late: false,
    });
}

/// A reader that joins at 0 once the answer has some durable text, starting to look `start_after`
/// after the answer's creation (`plan_readers` readers may join behind too, but only by chance).
fn plan_late(answer: &mut Answer, node: &str, addr: SocketAddr, start_after: Duration) {
    answer.readers.push(ReaderPlan {
        label: format!("{} late reader on {node}", answer.id),
        stream_id: answer.id.clone(),
        addr,
        start_after,
        offset: 0.0,
        immediate: false,
        reconnect_after: None,
        rejoins: 0,
        late: true,
    });
}

fn spawn_readers(answers: &[Answer], deadline: Instant) -> Vec<tokio::task::JoinHandle<Result<ReaderLog, String>>> {
    answers
        .iter()
        .flat_map(|a| a.readers.iter().cloned())
        .map(|plan| tokio::spawn(run_reader(plan, deadline)))
        .collect()
}

async fn collect(
    handles: Vec<tokio::task::JoinHandle<Result<ReaderLog, String>>>,
    failures: &mut Vec<String>,
) -> Vec<ReaderLog> {
    let mut logs = Vec::new();
    for h in handles {
        match h.await {
            Ok(Ok(log)) => logs.push(log),
            Ok(Err(e)) => failures.push(e),
            Err(e) => failures.push(format!("a reader task failed: {e}")),
        }
    }
    logs
}

/// Every leg of every reader holds a prefix of the produced text (nothing duplicated, nothing
/// out of place, at every stop, not just the last), and a leg that stopped on `end` holds the
/// produced text exactly: `end` promises the reader has the whole answer, so a relay that lost
/// the tail and still passed `end` on shows here (the store, complete by then, would hide it in
/// the splice).
fn check_legs(log: &ReaderLog, produced: &Text, failures: &mut Vec<String>) {
    for leg in &log.legs {
        if !is_prefix(&leg.text, produced) {
            failures.push(format!(
                "{}: the leg joined at {} (stopped on {}) holds text that is not a prefix of the produced text ({})",
                log.plan.label,
                leg.from,
                leg.reason.as_str(),
                diverge(&leg.text, produced)
            ));
        } else if leg.reason == StopReason::End && leg.text != *produced {
            failures.push(format!(
                "{}: the leg joined at {} stopped on `end` holding {} of the {} produced units",
                log.plan.label,
                leg.from,
                leg.text.len(),
                produced.len()
            ));
        }
    }
}

fn summary(logs: &[ReaderLog]) -> String {
    let mut ends = 0;
    let mut stales = 0;
    let mut absents = 0;
    for log in logs {
        for leg in &log.legs {
            match leg.reason {
                StopReason::End => ends += 1,
                StopReason::Stale => stales += 1,
                StopReason::Absent => absents += 1,
                _ => {}
            }
        }
    }
    let reconnects = logs.iter().filter(|l| l.reconnected).count();
    let legs: usize = logs.iter().map(|l| l.legs.len()).sum();
    let frames: usize = logs.iter().map(|l| l.frames).sum();
    format!(
        "{} readers, {legs} live legs ({ends} ended with end, {stales} stale, {absents} absent), {reconnects} \
         Last-Event-ID resumes, {frames} frames",
        logs.len()
    )
}

/// SIGTERM to each instance in turn; a failure for each that does not exit cleanly in time.
fn terminate_all(instances: &mut [Instance], failures: &mut Vec<String>) {
    for inst in instances {
        match inst.terminate() {
            Ok(status) if status.success() => {}
            Ok(status) => failures.push(format!("{} exited with {status} after SIGTERM", inst.name)),
            Err(e) => failures.push(e),
        }
    }
}

fn restart_redis() -> Result<(), String> {
    let script = repo_root().join("scripts/redis.sh");
    let out = Command::new("bash").arg(&script).arg("restart").output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("redis.sh restart failed: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// What every scenario starts from.
struct Scenario {
    /// The scenario's turn (see [`SERIAL`]), held until the scenario ends.
    _serial: tokio::sync::MutexGuard<'static, ()>,
    env: Env,
    /// Seeded from the run's seed mixed with the scenario's salt, so scenarios draw differently.
    rng: Rng,
    /// A fresh database, named for the scenario.
    db: Database,
    /// An emptied log directory, named for the scenario and the seed.
    dir: PathBuf,
}

impl Scenario {
    /// Wait for the turn, print the run's seed, create the database and the log directory.
    async fn begin(scenario: &str, salt: u64) -> Scenario {
        let serial = SERIAL.lock().await;
        let env = env();
        println!("{scenario}: seed {} (rerun with TWOPLANE_MULTI_SEED={})", env.seed, env.seed);
        let rng = Rng::new(env.seed ^ salt);
        let db = Database::create(&env.pg_url, DB_PREFIX, scenario, env.seed).await;
        let dir = log_dir(scenario, env.seed);
        Scenario { _serial: serial, env, rng, db, dir }
    }
}

fn log_dir(scenario: &str, seed: u64) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("multi-instance").join(format!("{seed}-{scenario}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ------------------------------------------------------------------------------------------
// The log topology: three instances, a Redis restart, a SIGKILL

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis on loopback: run `bash scripts/test-multi.sh`"]
async fn three_instances_survive_a_redis_restart_and_a_killed_producer() {
    let Scenario { _serial, env, mut rng, db, dir } = Scenario::begin("log", 0).await;
    let specs: Vec<(&str, Vec<String>)> =
        ["A", "B", "C"].iter().map(|h| (*h, serve_args(&db, &env.redis_url, "log", h))).collect();
    let mut instances = Instance::start_all_logging(&specs, &dir, RUST_LOG);
    let (a, b, c) = (instances[0].addr, instances[1].addr, instances[2].addr);
    println!("instances: A {a} (pid {}), B {b}, C {c}; logs in {}", instances[0].pid(), dir.display());
    let store = pg(&db.url).await;
    let mut failures = Vec::new();
    let readers_on = [("B", b), ("C", c)];

    // ---- 1. Answers on A, readers on B and C, Redis restarted in the middle.
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(60);
    let mut answers = Vec::new();
    let mut handles = Vec::new();
    for i in 0..3 {
        let prompt = format!("multi-instance answer {i}");
        let mut answer = start_answer(&mut rng, a, &prompt).await;
        plan_immediate(&mut answer, "C", c);
        plan_readers(&mut rng, &mut answer, &readers_on, 6, 4_000, true);
        // Each answer's readers start counting from its creation.
        handles.extend(spawn_readers(std::slice::from_ref(&answer), deadline));
        answers.push(answer);
        tokio::time::sleep(ms(&mut rng, 0, 300)).await;
    }
    // Redis restarts while every answer is certainly mid-stream: a third to a half of the way to
    // the first moment any of them may have finished. The immediate readers on C are attached
    // by then, so their legs span the restart.
    let earliest = answers.iter().map(Answer::earliest_end).min().unwrap();
    tokio::time::sleep_until(between_instants(&mut rng, t0, earliest, 33, 50).into()).await;
    let restart_began = Instant::now();
    let restarted = tokio::task::spawn_blocking(restart_redis).await.unwrap();
    let restart_done = Instant::now();
    println!(
        "phase 1: Redis restarted {:?} after the first answer started, in {:?}: {restarted:?}",
        restart_began - t0,
        restart_done - restart_began
    );
    if let Err(e) = restarted {
        failures.push(e);
    }
    // The restart must land inside an answer: one still streaming once Redis is back (empty)
    // makes its relay legs carry on over a fresh log.
    let mut streaming_over_restart = 0;
    for answer in &answers {
        match durable_view(b, &answer.id).await {
            Ok((status, _)) if status == "streaming" => streaming_over_restart += 1,
            Ok(_) => {}
            Err(e) => failures.push(e),
        }
    }
    println!("phase 1: {streaming_over_restart} of {} answers still streaming after the restart", answers.len());
    if streaming_over_restart == 0 {
        failures.push("phase 1: every answer had finished when Redis came back: the restart hit no stream".into());
    }
    let logs = collect(handles, &mut failures).await;
    println!("phase 1: {} ({:?})", summary(&logs), t0.elapsed());
    for answer in &answers {
        let row = stored_row(&store, &answer.id).await.unwrap();
        let text = tiled_text(&answer.id, &row, &mut failures);
        if row.status.as_deref() != Some("complete") || text != answer.produced || !row.chunks.is_empty() {
            failures.push(format!(
                "{}: stored {:?} with {} chunk rows, want complete and compacted ({})",
                answer.id,
                row.status,
                row.chunks.len(),
                diverge(&text, &answer.produced)
            ));
        }
        if row.host.as_deref() != Some("A") {
            failures.push(format!("{}: host column {:?}, want A", answer.id, row.host));
        }
    }
    for log in &logs {
        let answer = answers.iter().find(|a| a.id == log.plan.stream_id).unwrap();
        check_legs(log, &answer.produced, &mut failures);
        if log.final_status != "complete" || log.rendered != answer.produced {
            failures.push(format!(
                "{}: ended {} with text unequal to the produced text ({})",
                log.plan.label,
                log.final_status,
                diverge(&log.rendered, &answer.produced)
            ));
        }
    }
    let relayed_ends = logs.iter().filter(|l| l.legs.iter().any(|leg| leg.reason == StopReason::End)).count();
    if relayed_ends == 0 {
        failures.push("phase 1: no reader on B or C got its `end` through the relay: the live leg never worked".into());
    }
    // Every reader here is on B or C, so every leg is relayed; one open before Redis went down
    // and ended by `end` after it came back is the relay surviving the restart.
    let spanning: Vec<&Leg> = logs
        .iter()
        .flat_map(|l| &l.legs)
        .filter(|leg| leg.opened < restart_began && leg.stopped > restart_done)
        .collect();
    let spanning_ends = spanning.iter().filter(|leg| leg.reason == StopReason::End).count();
    println!("phase 1: {} live legs spanned the restart, {spanning_ends} of them reached `end`", spanning.len());
    if spanning_ends == 0 {
        failures.push(format!(
            "phase 1: none of the {} relay legs open across the Redis restart reached `end`",
            spanning.len()
        ));
    }

    // ---- 2. More answers on A and one on B; A is killed with SIGKILL in the middle.
    let t1 = Instant::now();
    let deadline = t1 + Duration::from_secs(60);
    let mut handles = Vec::new();
    let mut doomed = Vec::new();
    for i in 0..2 {
        let prompt = format!("multi-instance doomed answer {i}");
        let mut answer = start_answer(&mut rng, a, &prompt).await;
        plan_readers(&mut rng, &mut answer, &readers_on, 6, 4_000, true);
        handles.extend(spawn_readers(std::slice::from_ref(&answer), deadline));
        doomed.push(answer);
    }
    let mut survivor = start_answer(&mut rng, b, "multi-instance answer produced on B").await;
    plan_readers(&mut rng, &mut survivor, &[("C", c), ("B", b), ("C", c)], 4, 3_000, false);
    handles.extend(spawn_readers(std::slice::from_ref(&survivor), deadline));
    // An instance that starts while others produce must leave their rows alone: at startup it
    // releases only its own host id's leftovers.
    let late_args = serve_args(&db, &env.redis_url, "log", "D");
    let (name, child, log) = Instance::spawn_logging("D", &late_args, &dir, RUST_LOG);
    // Waiting for it blocks; the readers keep the runtime's workers.
    instances.push(tokio::task::spawn_blocking(move || Instance::ready(name, child, log)).await.unwrap());
    let d = instances[3].addr;
    for answer in doomed.iter().chain([&survivor]) {
        match durable_view(d, &answer.id).await {
            Ok((status, _)) if status == "streaming" => {}
            Ok((status, _)) => failures.push(format!("{}: {status} right after D started, want streaming", answer.id)),
            Err(e) => failures.push(e),
        }
    }
    // A dies while its answers are certainly mid-stream: 40 to 60 % of the way to the first
    // moment either may have finished (unless starting D took longer than that).
    let earliest = doomed.iter().map(Answer::earliest_end).min().unwrap();
    tokio::time::sleep_until(between_instants(&mut rng, t1, earliest, 40, 60).into()).await;
    let kill_sent = Instant::now();
    instances[0].kill();
    let killed = Instant::now();
    println!("phase 2: A killed with SIGKILL {:?} after its answers started", kill_sent - t1);
    if doomed.iter().all(|answer| answer.earliest_end() <= kill_sent) {
        failures.push(format!(
            "phase 2: the kill came {:?} after the first answer started, when both of A's answers may have \
             finished: the machine fell behind the plan, so the kill tested nothing",
            kill_sent - t1
        ));
    }

    // The sweeper of B or C marks A's rows within a few lease times to live.
    let mut swept_after = None;
    let mut pending: Vec<&Answer> = doomed.iter().collect();
    while !pending.is_empty() && killed.elapsed() < Duration::from_millis(5 * LEASE_TTL_MS) {
        let mut still = Vec::new();
        for answer in pending {
            match durable_view(b, &answer.id).await {
                Ok((status, _)) if status == "streaming" => still.push(answer),
                Ok((status, _)) => {
                    if status != "interrupted" && status != "complete" {
                        failures.push(format!("{}: swept to {status:?}, want interrupted", answer.id));
                    }
                }
                Err(e) => {
                    failures.push(e);
                }
            }
        }
        pending = still;
        if pending.is_empty() {
            swept_after = Some(killed.elapsed());
        } else {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    match swept_after {
        Some(t) => println!("phase 2: A's rows released {t:?} after the kill (lease {LEASE_TTL_MS} ms)"),
        None => failures.push(format!("A's rows still streaming {} ms after the kill", 5 * LEASE_TTL_MS)),
    }
    let logs = collect(handles, &mut failures).await;
    println!("phase 2: {} ({:?})", summary(&logs), t1.elapsed());
    for answer in &doomed {
        let row = stored_row(&store, &answer.id).await.unwrap();
        let text = tiled_text(&answer.id, &row, &mut failures);
        let readers: Vec<&ReaderLog> = logs.iter().filter(|l| l.plan.stream_id == answer.id).collect();
        let max_durable = readers.iter().map(|l| l.max_durable).max().unwrap_or(0);
        println!(
            "phase 2: {} {:?}: store holds {} of {} units in {} chunk rows; readers were told {max_durable} was durable",
            answer.id,
            row.status,
            text.len(),
            answer.produced.len(),
            row.chunks.len()
        );
        if row.host.as_deref() != Some("A") {
            failures.push(format!("{}: host column {:?}, want A", answer.id, row.host));
        }
        if answer.earliest_end() > kill_sent && row.status.as_deref() != Some("interrupted") {
            // Its producer could not have finished before the kill, so the sweep must mark it.
            failures.push(format!(
                "{}: certainly streaming when A was killed, yet stored {:?}, want interrupted",
                answer.id, row.status
            ));
        }
        if row.status.as_deref() == Some("complete") {
            // It finished before the kill: the full checks apply.
            if text != answer.produced {
                failures.push(format!("{}: complete but {}", answer.id, diverge(&text, &answer.produced)));
            }
        } else if row.status.as_deref() != Some("interrupted") {
            failures.push(format!("{}: status {:?} after the sweep, want interrupted", answer.id, row.status));
        }
        if !is_prefix(&text, &answer.produced) {
            failures.push(format!(
                "{}: the store's text is not a prefix of the produced text ({})",
                answer.id,
                diverge(&text, &answer.produced)
            ));
        }
        if (text.len() as u64) < max_durable {
            failures.push(format!(
                "{}: the store holds {} units but a reader was told {max_durable} were durable (lost from the store)",
                answer.id,
                text.len()
            ));
        }
        for log in readers {
            check_legs(log, &answer.produced, &mut failures);
            if log.final_store != text {
                failures.push(format!("{}: read a final store text unlike the database's", log.plan.label));
            }
            // The durable plane completes the reader: the splice of the final store text and the
            // reader's text is a prefix of the produced text, and at least the store's text.
            if !is_prefix(&log.rendered, &answer.produced) || log.rendered.len() < text.len() {
                failures.push(format!(
                    "{}: spliceStreamText(store, reader) is not a prefix of the produced text holding the store ({})",
                    log.plan.label,
                    diverge(&log.rendered, &answer.produced)
                ));
            }
            if splice_stream_text(text.units(), log.rendered.units()) != log.rendered {
                failures.push(format!("{}: the rendering does not extend the store's text", log.plan.label));
            }
        }
    }
    let mut interrupted = 0;
    for answer in &doomed {
        if stored_row(&store, &answer.id).await.unwrap().status.as_deref() == Some("interrupted") {
            interrupted += 1;
        }
    }
    println!("phase 2: {interrupted} of A's {} answers ended interrupted", doomed.len());
    if interrupted == 0 {
        failures.push("phase 2: none of A's answers ended interrupted: the kill and the sweep were not tested".into());
    }
    // B's answer is untouched by the sweep (B's lease is live) and completes.
    let row = stored_row(&store, &survivor.id).await.unwrap();
    let text = tiled_text(&survivor.id, &row, &mut failures);
    if row.status.as_deref() != Some("complete") || text != survivor.produced || row.host.as_deref() != Some("B") {
        failures.push(format!(
            "{}: B's answer stored {:?} by {:?}, want complete by B ({})",
            survivor.id,
            row.status,
            row.host,
            diverge(&text, &survivor.produced)
        ));
    }
    for log in logs.iter().filter(|l| l.plan.stream_id == survivor.id) {
        check_legs(log, &survivor.produced, &mut failures);
        if log.rendered != survivor.produced {
            failures.push(format!("{}: {}", log.plan.label, diverge(&log.rendered, &survivor.produced)));
        }
    }
    // Phase 1's answers were sealed before the kill: the sweep leaves them alone.
    for answer in &answers {
        let row = stored_row(&store, &answer.id).await.unwrap();
        if row.status.as_deref() != Some("complete") {
            failures.push(format!("{}: was complete, now {:?}", answer.id, row.status));
        }
    }

    // ---- 3. SIGTERM on B, C and D: clean exits, leases given up.
    terminate_all(&mut instances[1..], &mut failures);
    let leases = store.query("SELECT host, expires_at FROM twoplane_hosts ORDER BY host", &[]).await.unwrap();
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    for row in leases {
        let (host, expires): (String, i64) = (row.get(0), row.get(1));
        if expires > now_ms {
            failures.push(format!("the lease of {host} is still live after its instance stopped"));
        }
    }
    drop(store);
    report(failures, &instances, &[], 40);
    drop(instances);
    db.drop_it().await;
}

// ------------------------------------------------------------------------------------------
// The broadcast topology: late joiners are `stale` and read the store

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis on loopback: run `bash scripts/test-multi.sh`"]
async fn broadcast_late_joiners_fall_back_to_the_store() {
    let Scenario { _serial, env, mut rng, db, dir } = Scenario::begin("broadcast", 0xB0AD_CA57).await;
    let specs: Vec<(&str, Vec<String>)> =
        ["D", "E"].iter().map(|h| (*h, serve_args(&db, &env.redis_url, "broadcast", h))).collect();
    let mut instances = Instance::start_all_logging(&specs, &dir, RUST_LOG);
    let (d, e) = (instances[0].addr, instances[1].addr);
    let store = pg(&db.url).await;
    let mut failures = Vec::new();

    let deadline = Instant::now() + Duration::from_secs(60);
    let mut answers = Vec::new();
    let mut handles = Vec::new();
    for i in 0..2 {
        let prompt = format!("broadcast answer {i}");
        let mut answer = start_answer(&mut rng, d, &prompt).await;
        plan_immediate(&mut answer, "E", e);
        plan_immediate(&mut answer, "E", e);
        // One reader certainly late: it starts looking 15 to 30 % into the answer's least
        // duration and joins at 0 once the store holds some text, so pub/sub cannot serve it.
        let look_after = answer.least * rng.between(15, 30) as u32 / 100;
        plan_late(&mut answer, "E", e, look_after);
        plan_readers(&mut rng, &mut answer, &[("E", e)], 6, 3_000, false);
        handles.extend(spawn_readers(std::slice::from_ref(&answer), deadline));
        answers.push(answer);
    }
    let logs = collect(handles, &mut failures).await;
    println!("broadcast: {}", summary(&logs));
    for answer in &answers {
        let row = stored_row(&store, &answer.id).await.unwrap();
        let text = tiled_text(&answer.id, &row, &mut failures);
        if row.status.as_deref() != Some("complete") || text != answer.produced {
            failures.push(format!("{}: stored {:?}, {}", answer.id, row.status, diverge(&text, &answer.produced)));
        }
    }
    let mut late = 0;
    let mut late_stale = 0;
    for log in &logs {
        let answer = answers.iter().find(|a| a.id == log.plan.stream_id).unwrap();
        check_legs(log, &answer.produced, &mut failures);
        if log.rendered != answer.produced {
            failures.push(format!("{}: {}", log.plan.label, diverge(&log.rendered, &answer.produced)));
        }
        // Pub/sub has no history: a join behind the live position cannot be served live.
        if let (Some(true), Some(leg)) = (log.behind.first(), log.legs.first()) {
            late += 1;
            if leg.reason == StopReason::End {
                failures
                    .push(format!("{}: joined behind at {} yet was served to the end live", log.plan.label, leg.from));
            }
        }
        if log.plan.late {
            match (log.behind.first(), log.legs.first()) {
                (Some(true), Some(leg)) if leg.reason == StopReason::Stale => late_stale += 1,
                (behind, Some(leg)) => failures.push(format!(
                    "{}: joined at {} (behind the store: {behind:?}) and stopped on {}, want stale",
                    log.plan.label,
                    leg.from,
                    leg.reason.as_str()
                )),
                (_, None) => {
                    failures.push(format!("{}: the answer was sealed before the late reader joined", log.plan.label))
                }
            }
        }
    }
    println!(
        "broadcast: {late} readers joined behind the live position and fell back to the store, {late_stale} of them \
         planned late and answered stale"
    );
    if late_stale == 0 {
        failures.push("broadcast: no reader joined late and was answered `stale`".into());
    }
    terminate_all(&mut instances, &mut failures);
    drop(store);
    report(failures, &instances, &[], 40);
    drop(instances);
    db.drop_it().await;
}

// ------------------------------------------------------------------------------------------
// SIGTERM on a producer whose streams are read on another instance

/// What one relayed reader saw of a stream whose producer got SIGTERM.
struct RelayedEnd {
    id: String,
    /// The terminal frame, as its `type` (`end` with its status, or `stale`/`absent`).
    terminal: String,
    /// When the terminal frame arrived.
    at: Instant,
    text: Text,
}

/// Read `id` live on `addr` from offset 0 until the terminal frame.
async fn read_relayed(addr: SocketAddr, id: String) -> Result<RelayedEnd, String> {
    let sid = Text::from(id.as_str());
    let mut reader = TextReader::new(sid, Text::new());
    let mut sse = Sse::get(addr, &format!("/api/stream?streamId={id}&from=0"), None).await?;
    loop {
        let Some(event) = sse.event().await.map_err(|e| format!("{id}: {e}"))? else {
            return Err(format!("{id}: the SSE body ended without a terminal frame"));
        };
        let frame = decode_frame(&event.data).map_err(|e| format!("{id}: bad frame {:?}: {e}", event.data))?;
        let terminal = match &frame {
            Frame::End { status, .. } => Some(format!("end/{}", status.as_str())),
            Frame::Stale { .. } => Some("stale".to_owned()),
            Frame::Absent => Some("absent".to_owned()),
            _ => None,
        };
        reader.feed(&frame);
        if let Some(terminal) = terminal {
            return Ok(RelayedEnd { id, terminal, at: Instant::now(), text: reader.text().clone() });
        }
    }
}

/// The pid of the Redis server at `url`, as it reports it.
async fn redis_pid(url: &str) -> i32 {
    let mut conn = redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO").arg("server").query_async(&mut conn).await.unwrap();
    info.lines().find_map(|l| l.strip_prefix("process_id:")).and_then(|p| p.trim().parse().ok()).unwrap()
}

/// Answers produced on P are read on R through the Redis log; P gets SIGTERM mid-answer while
/// Redis is paused (SIGSTOP for a second: a slow Redis, a failover), so P's writer is stuck with
/// frames queued when the drain seals every answer `interrupted`. The `end` frames must still
/// leave P before it exits: every reader on R ends on `end` within a few seconds of the signal,
/// holding exactly the text the store kept. R's relay idle timeout is set far beyond that, so a
/// reader whose `end` stayed behind in P's queue would end `stale` only much later, and the test
/// says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis on loopback: run `bash scripts/test-multi.sh`"]
async fn sigterm_ends_relayed_readers_with_their_end() {
    let Scenario { _serial, env, mut rng, db, dir } = Scenario::begin("sigterm", 0x51_6E_7E_44).await;
    const IDLE_MS: u64 = 15_000;
    let with_idle = |host: &str| {
        let mut args = serve_args(&db, &env.redis_url, "log", host);
        let at = args.iter().position(|a| a == "--relay-idle-ms").unwrap();
        args[at + 1] = IDLE_MS.to_string();
        args
    };
    let specs: Vec<(&str, Vec<String>)> = vec![("P", with_idle("P")), ("R", with_idle("R"))];
    let mut instances = Instance::start_all_logging(&specs, &dir, RUST_LOG);
    let (p, r) = (instances[0].addr, instances[1].addr);
    let store = pg(&db.url).await;
    let mut failures = Vec::new();

    let mut answers = Vec::new();
    for i in 0..3 {
        answers.push(start_answer(&mut rng, p, &format!("sigterm answer {i}")).await);
    }
    let readers: Vec<_> =
        answers.iter().flat_map(|a| [a.id.clone(), a.id.clone()]).map(|id| tokio::spawn(read_relayed(r, id))).collect();
    // Well inside every answer (each lasts at least LEAST_ANSWER): all three are streaming.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let redis = redis_pid(&env.redis_url).await;
    // SAFETY: signalling the test's own Redis server, by the pid it reported.
    assert_eq!(unsafe { libc::kill(redis, libc::SIGSTOP) }, 0, "SIGSTOP Redis");
    let signalled = Instant::now();
    assert!(answers.iter().all(|a| signalled < a.earliest_end()), "the signal came after an answer may have ended");
    // SAFETY: as above, P by the pid this test spawned.
    unsafe { libc::kill(instances[0].pid(), libc::SIGTERM) };
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(redis, libc::SIGCONT) }, 0, "SIGCONT Redis");
    let exited = tokio::task::block_in_place(|| instances[0].terminate());
    let exited_at = Instant::now();
    match exited {
        Ok(status) if status.success() => {}
        Ok(status) => failures.push(format!("P exited with {status} after SIGTERM")),
        Err(e) => failures.push(e),
    }
    for handle in readers {
        let seen = match handle.await.unwrap() {
            Ok(seen) => seen,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let row = stored_row(&store, &seen.id).await.unwrap();
        let kept = tiled_text(&seen.id, &row, &mut failures);
        let after = seen.at.saturating_duration_since(signalled);
        if seen.terminal != "end/interrupted" {
            failures.push(format!(
                "{}: the relayed reader ended on {} {after:?} after SIGTERM (P exited {:?} after it), want end/interrupted",
                seen.id,
                seen.terminal,
                exited_at.saturating_duration_since(signalled)
            ));
        } else if after > Duration::from_secs(5) {
            failures.push(format!("{}: `end` reached the relayed reader only {after:?} after SIGTERM", seen.id));
        }
        if row.status.as_deref() != Some("interrupted") || seen.text != kept {
            failures.push(format!(
                "{}: stored {:?}; reader against store: {}",
                seen.id,
                row.status,
                diverge(&seen.text, &kept)
            ));
        }
    }
    println!(
        "sigterm: P exited {:?} after the signal; {} relayed readers checked",
        exited_at.saturating_duration_since(signalled),
        answers.len() * 2
    );
    terminate_all(&mut instances[1..], &mut failures);
    drop(store);
    report(failures, &instances, &[], 40);
    drop(instances);
    db.drop_it().await;
}
