//! `twoplane`: the command-line entry point.
//!
//! `twoplane serve [--demo] [--listen ADDR] [--db PATH | --pg URL] [--redis URL ...]` runs the
//! plane on an embedded SQLite file (one instance) or on a PostgreSQL server shared by several
//! instances, relaying live frames between them through Redis, and serves its streams over SSE;
//! `--demo` adds a simulated model and the chat page. `twoplane demo-answer` prints the text the
//! demo's model produces for a prompt and a seed. Every failure a user can cause (a bad flag, an
//! unparseable address, a database that cannot be used, a port in use) ends as one `twoplane:
//! error: ...` line and exit code 1 (2 for flag errors, as clap reports them), never a panic.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tracing_subscriber::EnvFilter;

use twoplane_redis::Topology;
use twoplane_server::app::{self, RelayConfig, ServeConfig, Store};
use twoplane_server::assets::PackageSource;
use twoplane_server::demo::{answer, Pace};

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
    /// Redis URL: relay live frames between instances (readers may land on any instance).
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
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
    /// instances (with --pg or --redis) [default: <hostname>-<pid>-<random>].
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
    /// Serve the browser package at /pkg/twoplane/ from this directory (laid out like
    /// npm/twoplane) instead of the copy compiled into the binary.
    #[arg(long)]
    assets: Option<PathBuf>,
    /// Milliseconds between SSE keep-alive comments.
    #[arg(long, default_value_t = twoplane_core::sse::DEFAULT_KEEP_ALIVE_MS, value_parser = clap::value_parser!(u64).range(10..))]
    keep_alive_ms: u64,
    /// Pace of the demo's model, in tokens per second [default: 20 to 50].
    #[arg(long, value_name = "N", requires = "demo", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    demo_tokens_per_second: Option<u32>,
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
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("warn,twoplane=info,twoplane_server=info,twoplane_stream=info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
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
    };
    init_logging(cli.log_format);
    let store = match args.pg {
        Some(url) => Store::Postgres(url),
        None => Store::Sqlite(args.db),
    };
    let relay = args.redis.map(|url| RelayConfig {
        url,
        topology: match args.relay {
            Some(RelayArg::Broadcast) => Topology::Broadcast,
            Some(RelayArg::Log) | None => Topology::Log,
        },
        idle_ms: args.relay_idle_ms,
        first_frame_ms: args.relay_first_frame_ms,
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
        demo_pace: args.demo_tokens_per_second.map_or(Pace::Natural, Pace::TokensPerSecond),
    };
    // Refuse bad combinations before the runtime and the database are touched.
    if let Err(e) = config.check() {
        return fail(&e.to_string());
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(app::run(config, app::shutdown_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e.to_string()),
    }
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
