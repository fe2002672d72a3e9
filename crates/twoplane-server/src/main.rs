//! `twoplane`: the command-line entry point.
//!
//! `twoplane serve [--demo] [--listen ADDR] [--db PATH] [--assets DIR]` runs the plane on an
//! embedded SQLite file and serves its streams over SSE; `--demo` adds a simulated model and the
//! chat page. Every failure a user can cause (a bad flag, an unparseable address, a database path
//! that cannot be written, a port in use) ends as one `twoplane: error: ...` line and exit code 1
//! (2 for flag errors, as clap reports them), never a panic.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tracing_subscriber::EnvFilter;

use twoplane_server::app::{self, ServeConfig};

#[derive(Parser, Debug)]
#[command(
    name = "twoplane",
    version,
    about = "Two-plane LM response streaming: the live plane over SSE, checkpoints in SQLite."
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
    Serve(ServeArgs),
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
    #[arg(long, default_value = "./twoplane.db")]
    db: PathBuf,
    /// The browser package directory served at /pkg/twoplane/ (default: npm/twoplane in the
    /// source tree this binary was built from).
    #[arg(long)]
    assets: Option<PathBuf>,
    /// Milliseconds between SSE keep-alive comments.
    #[arg(long, default_value_t = twoplane_core::sse::DEFAULT_KEEP_ALIVE_MS, value_parser = clap::value_parser!(u64).range(10..))]
    keep_alive_ms: u64,
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
    init_logging(cli.log_format);
    let Command::Serve(args) = cli.command;
    let config = ServeConfig {
        demo: args.demo,
        listen: args.listen,
        db: args.db,
        package_dir: args.assets.unwrap_or_else(app::default_package_dir),
        keep_alive: std::time::Duration::from_millis(args.keep_alive_ms),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(app::run(config, app::shutdown_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e.to_string()),
    }
}

/// One line on stderr and a failing exit code: the person at the terminal reads this, so it is
/// not a log record (which would say the same thing twice).
fn fail(message: &str) -> ExitCode {
    eprintln!("twoplane: error: {message}");
    ExitCode::FAILURE
}
