//! A PostgreSQL connection URL read once: where to connect, how to secure it, and how to say
//! which server a failure concerns without ever showing the password.
//!
//! Guarantees:
//! - The URL (or libpq key/value string) is parsed by tokio-postgres, except two parameters it
//!   does not know, read here: `sslmode` with all of libpq's values but `allow` (see
//!   [`SslMode`]; the default is `prefer`, as in libpq) and `sslrootcert`, a PEM file of trusted
//!   CA certificates.
//! - Every error is a [`PgConnectError`]: the server (hosts, ports, database, user) and the
//!   cause in words (refused, unreachable, TLS handshake or certificate, authentication, the
//!   server's own message). No message built here holds the URL or the password: the URL is
//!   never formatted, and the password is scrubbed from whatever a library put into a cause.
//! - A connection attempt that gets no answer gives up after 10 s unless the URL sets
//!   `connect_timeout`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres_rustls::MakeRustlsConnect;

pub use crate::tls::SslMode;

/// How long a connection attempt may wait for the server when the URL does not say.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server lets one of twoplane's sessions sit idle inside a transaction before it
/// ends the session (see [`PgEndpoint::connect`]); well under the default lease of 15 s.
pub(crate) const IDLE_IN_TRANSACTION_TIMEOUT_MS: u64 = 5_000;

/// A parsed connection URL (see the module guarantees).
#[derive(Clone)]
pub struct PgEndpoint {
    config: tokio_postgres::Config,
    ssl: SslMode,
    ca_file: Option<PathBuf>,
    tls: MakeRustlsConnect,
    /// The same configuration as `tls`, for [`PgEndpoint::connect_stream`].
    rustls: Arc<rustls::ClientConfig>,
    server: String,
}

impl fmt::Debug for PgEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgEndpoint").field("server", &self.server).field("sslmode", &self.ssl.as_str()).finish()
    }
}

/// What went wrong, in the classes an operator acts on differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgFailure {
    /// The URL or a TLS setting is unusable.
    Config,
    /// Nothing listens there (connection refused).
    Refused,
    /// No answer in time, or the host name did not resolve.
    Unreachable,
    /// The TLS handshake failed: the server refused TLS, or its certificate did not verify.
    Tls,
    /// The server refused the user or the password.
    Auth,
    /// The server answered with another error (no such database, too many connections...).
    Server,
    /// Anything else on the way (the connection closed during setup...).
    Other,
}

/// A connection failure that names the server and the cause (see the module guarantees).
#[derive(Clone, Debug)]
pub struct PgConnectError {
    server: String,
    failure: PgFailure,
    cause: String,
}

impl PgConnectError {
    pub fn new(server: &str, failure: PgFailure, cause: String) -> PgConnectError {
        PgConnectError { server: server.to_owned(), failure, cause }
    }

    pub fn failure(&self) -> PgFailure {
        self.failure
    }

    /// The server as shown in the message (`127.0.0.1:5432, database app, user twoplane`).
    pub fn server(&self) -> &str {
        &self.server
    }

    pub fn cause(&self) -> &str {
        &self.cause
    }
}

impl fmt::Display for PgConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.server.is_empty() {
            write!(f, "PostgreSQL: {}", self.cause)
        } else {
            write!(f, "PostgreSQL at {}: {}", self.server, self.cause)
        }
    }
}

impl std::error::Error for PgConnectError {}

impl PgEndpoint {
    /// Parse `url`. `ca_file`, when given, is used as if the URL said `sslrootcert=` (giving
    /// both, different, is an error).
    pub fn parse(url: &str, ca_file: Option<&Path>) -> Result<PgEndpoint, PgConnectError> {
        let (rest, sslmode, rootcert) = split_tls_params(url);
        let unknown_server =
            |cause: String| PgConnectError { server: String::new(), failure: PgFailure::Config, cause };
        let mut config = tokio_postgres::Config::from_str(&rest).map_err(|e| {
            // The parser's messages name options, not values; scrub anyway, in case.
            unknown_server(format!("the URL is not a PostgreSQL connection URL ({})", scrub_all(&e.to_string(), url)))
        })?;
        let server = describe(&config);
        let fail = |cause: String| PgConnectError { server: server.clone(), failure: PgFailure::Config, cause };
        let ssl = match sslmode.as_deref() {
            None => SslMode::Prefer,
            Some(value) => SslMode::parse(value).ok_or_else(|| {
                fail(format!(
                    "sslmode={value} is not supported (use disable, prefer, require, verify-ca or verify-full)"
                ))
            })?,
        };
        let ca_file = match (rootcert.map(PathBuf::from), ca_file) {
            (Some(a), Some(b)) if a != b => {
                return Err(fail(format!(
                    "the URL's sslrootcert ({}) and the CA file ({}) differ",
                    a.display(),
                    b.display()
                )))
            }
            (Some(a), _) => Some(a),
            (None, b) => b.map(Path::to_path_buf),
        };
        if ca_file.is_some() && matches!(ssl, SslMode::Disable | SslMode::Prefer) && sslmode.is_some() {
            return Err(fail(format!(
                "a CA file is given but sslmode={} does not check certificates (use verify-full, verify-ca or \
                 require)",
                ssl.as_str()
            )));
        }
        // A CA file and no sslmode: the operator wants the server checked.
        let ssl = if ca_file.is_some() && sslmode.is_none() { SslMode::VerifyFull } else { ssl };
        config.ssl_mode(match ssl {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => tokio_postgres::config::SslMode::Require,
        });
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        let tls = crate::tls::client_config(ssl, ca_file.as_deref()).map_err(fail)?;
        let rustls = Arc::new(tls.clone());
        Ok(PgEndpoint { config, ssl, ca_file, tls: MakeRustlsConnect::new(tls), rustls, server })
    }

    pub fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    pub fn ssl_mode(&self) -> SslMode {
        self.ssl
    }

    pub fn ca_file(&self) -> Option<&Path> {
        self.ca_file.as_deref()
    }

    /// The TLS connector for this endpoint's mode (used only when the mode is not `disable`).
    pub fn tls(&self) -> MakeRustlsConnect {
        self.tls.clone()
    }

    /// The rustls configuration of this endpoint's mode.
    pub(crate) fn rustls_config(&self) -> Arc<rustls::ClientConfig> {
        self.rustls.clone()
    }

    /// Hosts, ports, database and user, for messages.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// One new connection, its driver spawned on the current runtime (it logs at `warn` when the
    /// connection ends with an error; `name` says whose connection it was).
    pub async fn connect(&self, name: &'static str) -> Result<tokio_postgres::Client, PgConnectError> {
        self.open(name).await.map(|(client, _driver)| client).map_err(|e| self.error(&e))
    }

    /// [`connect`](PgEndpoint::connect) with the library's error and the driver task's handle
    /// (what a pool's connector returns). Every connection twoplane opens comes through here.
    pub async fn open(
        &self,
        name: &'static str,
    ) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), tokio_postgres::Error> {
        let (client, connection) = self.config.connect(self.tls()).await?;
        let driver = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(connection = name, error = %e, "postgres connection ended");
            }
        });
        // A process stopped in the middle of a transaction (SIGSTOP, a paused VM) would keep its
        // row locks for as long as it stays stopped, and another instance's sweep would wait on
        // them. The server ends such a transaction instead, so the sweep goes ahead; the stopped
        // process finds its connection gone when it resumes, and its retry meets the fence
        // (docs/contract.md §6). None of twoplane's transactions waits on anything but the
        // database between its statements. A proxy that refuses the setting costs only this.
        let guard = format!("SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_TIMEOUT_MS}");
        if let Err(e) = client.batch_execute(&guard).await {
            tracing::debug!(connection = name, error = %self.error(&e), "could not bound idle transactions");
        }
        Ok((client, driver))
    }

    /// `e` (from connecting or from a statement) as a sentence naming this server.
    pub fn error(&self, e: &tokio_postgres::Error) -> PgConnectError {
        let (failure, cause) = classify(e);
        let cause = match self.config.get_password() {
            Some(password) => scrub(&cause, password),
            None => cause,
        };
        PgConnectError { server: self.server.clone(), failure, cause }
    }
}

/// The URL without `sslmode` and `sslrootcert`, and their values.
fn split_tls_params(url: &str) -> (String, Option<String>, Option<String>) {
    let mut sslmode = None;
    let mut rootcert = None;
    let mut take = |key: &str, value: &str| -> bool {
        match key {
            "sslmode" => sslmode = Some(value.to_owned()),
            "sslrootcert" => rootcert = Some(percent_decode(value)),
            _ => return false,
        }
        true
    };
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let (base, fragment) = match url.find('#') {
            Some(i) => url.split_at(i),
            None => (url, ""),
        };
        let Some((before, query)) = base.split_once('?') else { return (url.to_owned(), None, None) };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|item| match item.split_once('=') {
                Some((key, value)) => !take(key, value),
                None => true,
            })
            .collect();
        let rest = if kept.is_empty() { before.to_owned() } else { format!("{before}?{}", kept.join("&")) };
        (format!("{rest}{fragment}"), sslmode, rootcert)
    } else {
        // key=value form: the two keys are taken when written `key=value` (no quotes, no spaces
        // around `=`), which is how they are written in practice.
        let kept: Vec<&str> = url
            .split_whitespace()
            .filter(|item| match item.split_once('=') {
                Some((key, value)) if !value.starts_with('\'') => !take(key, value),
                _ => true,
            })
            .collect();
        (kept.join(" "), sslmode, rootcert)
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// `host:port` for each host, then the database and user.
fn describe(config: &tokio_postgres::Config) -> String {
    let ports = config.get_ports();
    let port_at = |i: usize| ports.get(i).or_else(|| ports.first()).copied().unwrap_or(5432);
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| match host {
            Host::Tcp(name) if name.contains(':') => format!("[{name}]:{}", port_at(i)),
            Host::Tcp(name) => format!("{name}:{}", port_at(i)),
            #[cfg(unix)]
            Host::Unix(path) => format!("{}/.s.PGSQL.{}", path.display(), port_at(i)),
        })
        .collect();
    let mut out = if hosts.is_empty() { "(no host)".to_owned() } else { hosts.join(",") };
    if let Some(db) = config.get_dbname() {
        out.push_str(&format!(", database {db}"));
    }
    if let Some(user) = config.get_user() {
        out.push_str(&format!(", user {user}"));
    }
    out
}

/// The class and the words of a tokio-postgres error (its whole cause chain, joined by `: `).
fn classify(e: &tokio_postgres::Error) -> (PgFailure, String) {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let failure = if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
            PgFailure::Auth
        } else {
            PgFailure::Server
        };
        let words = match failure {
            PgFailure::Auth => format!("authentication failed: {}", db.message()),
            _ => format!("the server refused: {} ({})", db.message(), code.code()),
        };
        return (failure, words);
    }
    // tokio-postgres's own words include its direct cause; deeper ones are added when new.
    let mut text = e.to_string();
    let mut failure = PgFailure::Other;
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            failure = io_failure(io).unwrap_or(failure);
        }
        if s.is::<rustls::Error>() {
            failure = PgFailure::Tls;
        }
        let words = s.to_string();
        if !text.contains(&words) {
            text = format!("{text}: {words}");
        }
        source = s.source();
    }
    if failure == PgFailure::Other {
        if text.starts_with("error performing TLS handshake") {
            failure = PgFailure::Tls;
        } else if ["timeout", "timed out", "failed to lookup address", "Name or service not known"]
            .iter()
            .any(|words| text.contains(words))
        {
            failure = PgFailure::Unreachable;
        } else if text.contains("password") {
            // The client refused before asking the server (no password given, SCRAM mismatch).
            failure = PgFailure::Auth;
        }
    }
    (failure, format!("{} ({text})", lead(failure)))
}

/// The class of an I/O error on the way to the server, when its kind tells one.
pub(crate) fn io_failure(io: &std::io::Error) -> Option<PgFailure> {
    match io.kind() {
        std::io::ErrorKind::ConnectionRefused => Some(PgFailure::Refused),
        std::io::ErrorKind::TimedOut => Some(PgFailure::Unreachable),
        _ if io.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) => Some(PgFailure::Tls),
        _ => None,
    }
}

/// The words a cause starts with, by class: what every connection failure message leads with,
/// whichever client met it.
pub(crate) fn lead(failure: PgFailure) -> &'static str {
    match failure {
        PgFailure::Refused => "connection refused",
        PgFailure::Unreachable => "no answer",
        PgFailure::Tls => "TLS failed",
        PgFailure::Auth => "authentication failed",
        _ => "connection failed",
    }
}

/// `text` with `secret` replaced by `***` (both as given and percent-encoded forms are unlikely
/// in a library's words, but a password is never shown whatever form it takes).
fn scrub(text: &str, secret: &[u8]) -> String {
    match std::str::from_utf8(secret) {
        Ok(s) if !s.is_empty() => text.replace(s, "***"),
        _ => text.to_owned(),
    }
}

/// A parse error's words, with every password the raw URL holds (as [`crate::redact_url`]
/// finds them) replaced by `***`.
fn scrub_all(text: &str, url: &str) -> String {
    crate::redact::secrets_in(url).iter().fold(text.to_owned(), |out, secret| out.replace(secret.as_str(), "***"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_taken_out_and_the_rest_kept() {
        let (rest, mode, root) = split_tls_params(
            "postgresql://u:pw@h:5/db?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca.pem",
        );
        assert_eq!(rest, "postgresql://u:pw@h:5/db?application_name=x");
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/tmp/ca.pem"));
        let (rest, mode, root) = split_tls_params("postgres://h/db?sslmode=disable");
        assert_eq!((rest.as_str(), mode.as_deref(), root), ("postgres://h/db", Some("disable"), None));
        let (rest, mode, _) = split_tls_params("host=h sslmode=require user=u");
        assert_eq!((rest.as_str(), mode.as_deref()), ("host=h user=u", Some("require")));
    }

    #[test]
    fn the_server_is_named_without_the_password() {
        let e = PgEndpoint::parse("postgresql://tp:hunter22@127.0.0.1:55432/app?sslmode=disable", None).unwrap();
        assert_eq!(e.server(), "127.0.0.1:55432, database app, user tp");
        assert_eq!(e.ssl_mode(), SslMode::Disable);
        assert!(!format!("{e:?}").contains("hunter22"));
        let e = PgEndpoint::parse("postgresql://[::1]/app", None).unwrap();
        assert_eq!(e.server(), "[::1]:5432, database app");
        assert_eq!(e.ssl_mode(), SslMode::Prefer);
    }

    #[test]
    fn bad_settings_are_refused_with_reasons() {
        let err = PgEndpoint::parse("postgresql://u:hunter22@h/db?sslmode=allow", None).unwrap_err();
        assert_eq!(err.failure(), PgFailure::Config);
        assert!(err.to_string().contains("sslmode=allow is not supported"), "{err}");
        assert!(err.to_string().contains("h:5432, database db, user u"), "{err}");
        let err = PgEndpoint::parse("postgresql://u:hunter22@h/db?sslmode=disable", Some(Path::new("/x.pem")));
        assert!(err.unwrap_err().to_string().contains("does not check certificates"));
        let err = PgEndpoint::parse("postgresql://u:hunter22@h/db?sslrootcert=/a.pem", Some(Path::new("/b.pem")));
        assert!(err.unwrap_err().to_string().contains("differ"));
        let err = PgEndpoint::parse("postgresql://u:hunter22@h/db?bogus=1", None).unwrap_err();
        assert!(!err.to_string().contains("hunter22"), "{err}");
    }

    #[test]
    fn a_ca_file_without_sslmode_means_verify_full() {
        let err = PgEndpoint::parse("postgresql://h/db", Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }

    #[test]
    fn scrubbing_hides_the_password() {
        assert_eq!(scrub("bad password hunter22 here", b"hunter22"), "bad password *** here");
        assert_eq!(scrub_all("near 'hunter22'", "postgresql://u:hunter22@h/db"), "near '***'");
    }
}
