//! `twoplane`: the command-line entry point.
//!
//! `twoplane token --stream-id ID` mints a read token (see `twoplane_server::token`).
//! `twoplane serve [--demo] [--listen ADDR] [--db PATH | --pg URL] [--redis URL ...]` runs the
//! plane on an embedded SQLite file (one instance) or on a PostgreSQL server shared by several
//! instances, relaying live frames between them through Redis, and serves its streams over SSE;
//! `--demo` adds a simulated model and the chat page. `twoplane demo-answer` prints the text the
//! demo's model produces for a prompt and a seed. `twoplane relay --pg URL (--s2 URL | --redis
//! URL)` relays committed record rows from PostgreSQL into per-session logs (see
//! `twoplane_server::relay`). Every failure a user can cause (a bad flag, an unparseable address,
//! a database that cannot be used, a port in use) ends as one `twoplane: error: ...` line and exit
//! code 1 (2 for flag errors, as clap reports them), never a panic.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tracing_subscriber::EnvFilter;

use twoplane_redis::Topology;
use twoplane_server::access::{load_secret, Access, PRODUCER_TOKEN_ENV, READ_SECRET_ENV};
use twoplane_server::assets::PackageSource;
use twoplane_server::cors::AllowedOrigins;
use twoplane_server::demo::{answer, Pace};
use twoplane_server::serve::{self, LiveRelayConfig, ServeConfig, Store};
use twoplane_server::token::Claims;

#[derive(Parser, Debug)]
#[command(
    name = "twoplane",
    version,
    about = "Two-plane LM response streaming: the live plane over SSE, checkpoints in SQLite or PostgreSQL."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log line format.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the plane's streams over HTTP (SSE at /api/stream).
    Serve(Box<ServeArgs>),
    /// Relay committed event rows of the record (PostgreSQL) into per-session logs (S2 or
    /// Redis Streams), exactly once and in order per session.
    Relay(Box<RelayArgs>),
    /// Mint a read token for one stream (signed with the server's read-token secret), for a
    /// browser to present as `?token=` or `Authorization: Bearer`.
    Token(TokenArgs),
    /// Print the answer the demo's model gives to a prompt with a seed (exactly the text
    /// `POST /api/chat {"prompt", "seed"}` streams; no newline is added).
    DemoAnswer(DemoAnswerArgs),
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Add a simulated model producer and the chat page at `/`.
    #[arg(long)]
    demo: bool,
    /// Address to listen on (IP:PORT).
    #[arg(long, default_value = "127.0.0.1:8787", value_parser = parse_listen)]
    listen: SocketAddr,
    /// SQLite database file (created when missing).
    #[arg(long, default_value = "./twoplane.db", conflicts_with = "pg")]
    db: PathBuf,
    /// PostgreSQL connection URL instead of the SQLite file; several instances share it.
    #[arg(long, value_name = "URL")]
    pg: Option<String>,
    /// Most connections in each PostgreSQL pool (the checkpoint writer's and the server's own;
    /// the sweeper uses one more).
    #[arg(long, value_name = "N", requires = "pg", default_value_t = twoplane_stream::DEFAULT_PG_POOL_SIZE as u16,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pg_pool_size: u16,
    /// Trusted CA certificates (PEM) for PostgreSQL over TLS, like the URL's `sslrootcert`;
    /// without `sslmode` in the URL it means `verify-full`.
    #[arg(long, value_name = "FILE", requires = "pg")]
    pg_ca_file: Option<PathBuf>,
    /// Redis URL: relay live frames between instances (readers may land on any instance);
    /// `rediss://` for TLS.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// Trusted CA certificates (PEM) for a `rediss://` URL instead of the system's roots.
    #[arg(long, value_name = "FILE", requires = "redis")]
    redis_ca_file: Option<PathBuf>,
    /// Relay topology: `log` (Redis Streams: serves any retained join offset) or `broadcast`
    /// (pub/sub: live position only; late joiners read the store). Default: log.
    #[arg(long, value_enum, requires = "redis")]
    relay: Option<RelayArg>,
    /// A relayed stream silent this long ends its readers with `stale` [default: the adapter's,
    /// 60000].
    #[arg(long, value_name = "MS", requires = "redis", value_parser = clap::value_parser!(u64).range(1..))]
    relay_idle_ms: Option<u64>,
    /// A relayed join that receives nothing at all this long ends with `absent` [default: the
    /// adapter's, 10000].
    #[arg(long, value_name = "MS", requires = "redis", value_parser = clap::value_parser!(u64).range(1..))]
    relay_first_frame_ms: Option<u64>,
    /// This instance's id in the `host` column and the lease table, unique among running
    /// instances (with --pg or --redis) [default: HOSTNAME-PID-RANDOM].
    #[arg(long, value_name = "ID")]
    host_id: Option<String>,
    /// How long a lease renewal keeps this host alive in the others' eyes (with --pg or
    /// --redis) [default: 15000].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    lease_ttl_ms: Option<u64>,
    /// Period of the lease renewal and the sweep for dead hosts; at most half the lease time to
    /// live (with --pg or --redis) [default: 5000].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    sweep_interval_ms: Option<u64>,
    /// Release `streaming` rows that name no host (left by an older single-instance run) once
    /// they have been seen this long, by the database's clock (with --pg or --redis) [default:
    /// never: such a row may belong to a live producer that takes no lease].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    release_hostless_after_ms: Option<u64>,
    /// Serve the browser package at /pkg/twoplane/ from this directory (laid out like
    /// npm/twoplane) instead of the copy compiled into the binary.
    #[arg(long)]
    assets: Option<PathBuf>,
    /// Serve SSE subscriptions through hyper like every other request, instead of the direct
    /// path that answers a connection whose first request subscribes (for comparison and tests).
    #[arg(long)]
    no_direct_sse: bool,
    /// Serve per-delta appends through the router like every other request, instead of the
    /// shortcut that answers them before it (for comparison and tests).
    #[arg(long)]
    no_append_shortcut: bool,
    /// Most connections open at once [default: the open-file limit (raised to its hard limit at
    /// start) less 256].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: Option<u32>,
    /// Most connections from one address [default: half of --max-connections]. Behind a reverse
    /// proxy every reader comes from the proxy's address: raise it to --max-connections there.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_connections_per_ip: Option<u32>,
    /// Most connections still waiting for their first request head [default: a quarter of
    /// --max-connections]. An eighth of --max-connections stays for producers and other requests:
    /// subscriptions take at most what is left.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_waiting_heads: Option<u32>,
    /// Most subscribers of one stream at once [default: half of the subscriptions the connection
    /// limits leave]; past it a subscribe answers 503 `too_many_subscribers`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_subscribers_per_stream: Option<u32>,
    /// Most subscriptions from one address at once [default: half of the subscriptions the
    /// connection limits leave]; past it a subscribe answers 503 `too_many_subscribers`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_subscribers_per_ip: Option<u32>,
    /// A response whose client takes no byte for this long is dropped (and its subscription
    /// released).
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    write_stall_ms: u64,
    /// Most text (UTF-16 code units) one stream holds that the store has not confirmed; past
    /// it an append gets `503 backpressure` and appends nothing.
    #[arg(long, value_name = "N", default_value_t = twoplane_stream::DEFAULT_MAX_UNDURABLE_CHARS,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_undurable_chars: u64,
    /// How long a stream takes appends after a checkpoint the store has not answered began;
    /// past it, `503 backpressure` until a checkpoint lands.
    #[arg(long, value_name = "MS", default_value_t = twoplane_stream::DEFAULT_MAX_UNDURABLE_MS,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_undurable_ms: u64,
    /// How long a close keeps retrying a store that fails before the stream ends at the length
    /// the store holds (readers get `end` only then, or once the seal landed).
    #[arg(long, value_name = "MS", default_value_t = twoplane_stream::DEFAULT_SEAL_DEADLINE_MS)]
    seal_deadline_ms: u64,
    /// How long the shutdown (SIGTERM, Ctrl-C) waits for the streams' seals [default:
    /// --seal-deadline-ms plus 1000]. Keep a supervisor's grace period above it.
    #[arg(long, value_name = "MS")]
    drain_timeout_ms: Option<u64>,
    /// A stream whose producer makes no call for this long (and has no body in flight) is
    /// sealed `interrupted`, so its readers end.
    #[arg(long, value_name = "MS", default_value_t = 300_000, value_parser = clap::value_parser!(u64).range(1..))]
    producer_idle_ms: u64,
    /// Display-rate writes: a reader is written to at most once per this many milliseconds, the
    /// frames that arrive meanwhile merged into that one write (the first frame after a quiet
    /// interval goes out at once). 0 writes every frame as it comes.
    #[arg(long, value_name = "MS", default_value_t = twoplane_server::serve::DEFAULT_WRITE_INTERVAL_MS,
          value_parser = clap::value_parser!(u64).range(0..=twoplane_stream::MAX_WRITE_INTERVAL_MS))]
    write_interval_ms: u64,
    /// Milliseconds between SSE keep-alive comments.
    #[arg(long, default_value_t = twoplane_core::sse::DEFAULT_KEEP_ALIVE_MS, value_parser = clap::value_parser!(u64).range(10..))]
    keep_alive_ms: u64,
    /// Pace of the demo's model, in tokens per second [default: 20 to 50].
    #[arg(long, value_name = "N", requires = "demo", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    demo_tokens_per_second: Option<u32>,
    /// File holding the producers' bearer secret (else $TWOPLANE_PRODUCER_TOKEN). Without one,
    /// the producer API answers loopback clients only.
    #[arg(long, value_name = "FILE")]
    producer_token_file: Option<PathBuf>,
    /// File holding the key read tokens are signed with (else $TWOPLANE_READ_TOKEN_SECRET).
    /// Without one, reads are open and only a loopback --listen is accepted.
    #[arg(long, value_name = "FILE")]
    read_token_secret_file: Option<PathBuf>,
    /// Serve open reads (no read token) on a non-loopback --listen, on purpose.
    #[arg(long)]
    open_reads: bool,
    /// Let pages on ORIGIN (like https://app.example.com) read streams from another origin;
    /// repeat it for several, or give '*' for every origin. Without it, same-origin pages only.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
}

#[derive(clap::Args, Debug)]
struct TokenArgs {
    /// The stream (message id) the token reads.
    #[arg(long, value_name = "ID")]
    stream_id: String,
    /// The application's user id, carried in the token.
    #[arg(long, value_name = "ID")]
    user_id: Option<String>,
    /// Seconds from now until the token expires.
    #[arg(long, value_name = "N", default_value_t = 300, conflicts_with = "expires_at")]
    ttl_seconds: u64,
    /// Unix time (seconds) at which the token expires, instead of --ttl-seconds.
    #[arg(long, value_name = "UNIX_SECONDS")]
    expires_at: Option<u64>,
    /// File holding the read-token secret (else $TWOPLANE_READ_TOKEN_SECRET).
    #[arg(long, value_name = "FILE")]
    read_token_secret_file: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("log").required(true).args(["s2", "redis"])))]
struct RelayArgs {
    /// PostgreSQL URL of the record (needs wal_level=logical and a role allowed to replicate).
    /// `sslmode` and `sslrootcert` as for `twoplane serve` (default `prefer`).
    #[arg(long, value_name = "URL")]
    pg: String,
    /// Trusted CA certificates (PEM) for PostgreSQL over TLS, like the URL's `sslrootcert`;
    /// without an sslmode in the URL, implies verify-full.
    #[arg(long, value_name = "FILE")]
    pg_ca_file: Option<PathBuf>,
    /// S2 endpoint the logs go to: s2-lite's (http://127.0.0.1:PORT), or the account endpoint of
    /// S2's service (https://:TOKEN@aws.s2.dev, with --s2-basin-url).
    #[arg(long, value_name = "URL")]
    s2: Option<String>,
    /// The basin endpoint, with `{basin}` where the basin name goes (S2's service:
    /// https://{basin}.b.s2.dev) [default: the --s2 endpoint, with an s2-basin header].
    #[arg(long, value_name = "URL", requires = "s2")]
    s2_basin_url: Option<String>,
    /// Trusted CA certificates (PEM) for an https:// S2 endpoint [default: the system's].
    #[arg(long, value_name = "FILE", requires = "s2")]
    s2_ca_file: Option<PathBuf>,
    /// Redis URL the logs go to instead (Redis Streams, redis://HOST:PORT/).
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// Logical replication slot (created when missing).
    #[arg(long, value_name = "NAME", default_value = "twoplane_relay")]
    slot: String,
    /// Publication of the events table (created when missing).
    #[arg(long, value_name = "NAME", default_value = "twoplane_relay")]
    publication: String,
    /// The record's tenants table (tenant_id, generation); may be schema-qualified.
    #[arg(long, value_name = "TABLE", default_value = "twoplane_relay_tenants")]
    tenants_table: String,
    /// The record's events table (tenant_id, session_id, seq, generation, body).
    #[arg(long, value_name = "TABLE", default_value = "twoplane_relay_events")]
    events_table: String,
    /// The table keeping each slot's reconcile-pending flag (created when missing).
    #[arg(long, value_name = "TABLE", default_value = "twoplane_relay_state")]
    state_table: String,
    /// Serve `GET /status` (JSON) on this address (IP:PORT).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    status_listen: Option<SocketAddr>,
}

#[derive(clap::Args, Debug)]
struct DemoAnswerArgs {
    /// The prompt (trimmed, as `POST /api/chat` trims it).
    #[arg(long)]
    prompt: String,
    /// The seed (`"seed"` in the request, or the one its response reports).
    #[arg(long)]
    seed: u64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum RelayArg {
    Log,
    Broadcast,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.parse::<SocketAddr>()
        .map_err(|_| format!("{s:?} is not an IP:PORT address (for example 127.0.0.1:8787 or [::1]:8787)"))
}

fn init_logging(format: LogFormat) {
    // RUST_LOG wins; otherwise info for this program, warnings from libraries.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new("warn,twoplane=info,twoplane_server=info,twoplane_stream=info,twoplane_relay=info")
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        // A log line that cannot be written (stderr closed by whoever started us) is dropped; the
        // default would report it with `eprintln!` to the same closed stderr, which panics and
        // takes the server down.
        .log_internal_errors(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Command::Serve(args) => args,
        Command::DemoAnswer(args) => return demo_answer(&args),
        Command::Token(args) => return token(&args),
        Command::Relay(args) => {
            init_logging(cli.log_format);
            return relay(*args);
        }
    };
    init_logging(cli.log_format);
    let access = match load_access(&args) {
        Ok(access) => access,
        Err(e) => return fail(&e),
    };
    let conn_limits = conn_limits(&args);
    let store = match args.pg {
        Some(url) => Store::Postgres(url),
        None => Store::Sqlite(args.db),
    };
    let redis_ca_file = args.redis_ca_file.clone();
    let relay = args.redis.map(|url| LiveRelayConfig {
        url,
        topology: match args.relay {
            Some(RelayArg::Broadcast) => Topology::Broadcast,
            Some(RelayArg::Log) | None => Topology::Log,
        },
        idle_ms: args.relay_idle_ms,
        first_frame_ms: args.relay_first_frame_ms,
        ca_file: redis_ca_file,
    });
    let config = ServeConfig {
        demo: args.demo,
        listen: args.listen,
        store,
        package: args.assets.map_or(PackageSource::Embedded, PackageSource::Dir),
        keep_alive: std::time::Duration::from_millis(args.keep_alive_ms),
        relay,
        host_id: args.host_id,
        lease_ttl_ms: args.lease_ttl_ms,
        sweep_interval_ms: args.sweep_interval_ms,
        release_hostless_after_ms: args.release_hostless_after_ms,
        demo_pace: args.demo_tokens_per_second.map_or(Pace::Natural, Pace::TokensPerSecond),
        access,
        producer_limits: twoplane_server::producer::Limits {
            idle: std::time::Duration::from_millis(args.producer_idle_ms),
            ..twoplane_server::producer::Limits::default()
        },
        postgres: serve::PgSettings { pool_size: usize::from(args.pg_pool_size), ca_file: args.pg_ca_file },
        direct_sse: !args.no_direct_sse,
        append_shortcut: !args.no_append_shortcut,
        conn_limits,
        max_subscribers_per_stream: args.max_subscribers_per_stream.map(|n| n as usize),
        max_subscribers_per_ip: args.max_subscribers_per_ip.map(|n| n as usize),
        write_stall: std::time::Duration::from_millis(args.write_stall_ms),
        write_interval: std::time::Duration::from_millis(args.write_interval_ms),
        durability: serve::Durability {
            max_undurable_chars: args.max_undurable_chars,
            max_undurable_ms: args.max_undurable_ms,
            seal_deadline_ms: args.seal_deadline_ms,
            drain_timeout_ms: args.drain_timeout_ms,
        },
    };
    // Refuse bad combinations before the runtime and the database are touched.
    if let Err(e) = config.check() {
        return fail(&e.to_string());
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(SERVE_BLOCKING_THREADS)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    // The signal handlers are installed inside the runtime, before `run` says it listens.
    match runtime.block_on(async { serve::run(config, serve::shutdown_signal()).await }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e.to_string()),
    }
}

/// The most threads `twoplane serve` runs blocking calls on (tokio's default is 512): SQLite's
/// (the group commit's writer and the reads, each on its one connection, so more threads only
/// wait for it), the package's files, and name lookups. An opening burst of 1,000 streams left 64
/// of them behind, each kept alive by the next call handed to it: about 20 KiB of RSS each, 1.5
/// to 2 KiB per open stream at 1,000 streams (docs/server.md, "Memory per reader and per
/// stream"). Eight leave room for a slow name lookup or two beside the store.
const SERVE_BLOCKING_THREADS: usize = 8;

fn relay(args: RelayArgs) -> ExitCode {
    let log = match (args.s2, args.redis) {
        (Some(url), None) => twoplane_server::relay::LogTarget::S2(
            url,
            twoplane_relay::s2::S2Options { ca_file: args.s2_ca_file, basin_url: args.s2_basin_url },
        ),
        (None, Some(url)) => twoplane_server::relay::LogTarget::Redis(url),
        _ => return fail("give exactly one of --s2 URL and --redis URL"),
    };
    let mut source = twoplane_relay::pg_source::PgSourceConfig {
        slot: args.slot,
        publication: args.publication,
        state_table: args.state_table,
        ..Default::default()
    };
    source.tables.tenants = args.tenants_table;
    source.tables.events = args.events_table;
    let command = twoplane_server::relay::RelayCommand {
        pg: args.pg,
        pg_ca_file: args.pg_ca_file,
        log,
        source,
        status_listen: args.status_listen,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(async { twoplane_server::relay::run(command, serve::shutdown_signal()).await }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// The connection bounds the flags give, each one not given derived as the defaults are (from
/// the open-file limit as `twoplane serve` will raise it).
fn conn_limits(args: &ServeArgs) -> Option<twoplane_server::conn_limits::ConnLimitsConfig> {
    if args.max_connections.is_none() && args.max_connections_per_ip.is_none() && args.max_waiting_heads.is_none() {
        return None;
    }
    let (_, open_files) = twoplane_server::server::raise_open_file_limit();
    let mut limits = twoplane_server::conn_limits::ConnLimitsConfig::for_open_files(open_files);
    if let Some(max) = args.max_connections {
        let max = max as usize;
        limits = twoplane_server::conn_limits::ConnLimitsConfig {
            max_connections: max,
            max_per_ip: (max / 2).max(1),
            max_waiting: (max / 4).max(1),
            reserved: max / 8,
        };
    }
    if let Some(n) = args.max_connections_per_ip {
        limits.max_per_ip = n as usize;
    }
    if let Some(n) = args.max_waiting_heads {
        limits.max_waiting = n as usize;
    }
    Some(limits)
}

fn load_access(args: &ServeArgs) -> Result<Access, String> {
    Ok(Access {
        producer_token: load_secret(args.producer_token_file.as_deref(), PRODUCER_TOKEN_ENV, "--producer-token-file")?,
        read_secret: load_secret(args.read_token_secret_file.as_deref(), READ_SECRET_ENV, "--read-token-secret-file")?,
        open_reads: args.open_reads,
        allowed_origins: AllowedOrigins::parse(&args.allow_origin)?,
    })
}

fn token(args: &TokenArgs) -> ExitCode {
    let secret = match load_secret(args.read_token_secret_file.as_deref(), READ_SECRET_ENV, "--read-token-secret-file")
    {
        Ok(Some(secret)) => secret,
        Ok(None) => return fail(&format!("no secret: give --read-token-secret-file FILE or set {READ_SECRET_ENV}")),
        Err(e) => return fail(&e),
    };
    let expires_at =
        args.expires_at.unwrap_or_else(|| twoplane_server::token::unix_now().saturating_add(args.ttl_seconds));
    let claims = Claims { stream_id: args.stream_id.clone(), expires_at, user_id: args.user_id.clone() };
    println!("{}", twoplane_server::token::mint(secret.bytes(), &claims));
    ExitCode::SUCCESS
}

fn demo_answer(args: &DemoAnswerArgs) -> ExitCode {
    let text = answer::answer_text(&args.prompt, args.seed);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is the reader's choice, not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(&format!("cannot write the answer: {e}")),
    }
}

/// One line on stderr and a failing exit code: the person at the terminal reads this, so it is
/// not a log record (which would say the same thing twice).
fn fail(message: &str) -> ExitCode {
    eprintln!("twoplane: error: {message}");
    ExitCode::FAILURE
}
