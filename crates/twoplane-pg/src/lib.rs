//! twoplane-pg: how every twoplane process reaches PostgreSQL. `twoplane serve` (through
//! twoplane-stream's pool) and `twoplane relay` (its replication stream and its record reader)
//! both read their `--pg` URL here, so a URL means the same thing, is secured the same way and
//! fails with the same words in both.
//!
//! - [`PgEndpoint`] (`endpoint.rs`): the URL parsed once, with libpq's `sslmode` and
//!   `sslrootcert`; connections for tokio-postgres; [`PgConnectError`] naming the server and the
//!   cause, never the password.
//! - `tls.rs`: the rustls client configuration for each `sslmode` (ring only), and the fully
//!   verifying one the relay's HTTPS client uses too ([`verifying_client_config`]).
//! - [`PgStream`] (`stream.rs`): a connection past PostgreSQL's TLS negotiation, for a client
//!   that speaks the protocol itself but cannot be handed a TLS configuration (the relay's
//!   replication client).
//! - [`redact_url`] (`redact.rs`): connection strings made safe for logs.
//!
//! Dependencies run one way: `redact` and `tls` know nothing else of the crate, `endpoint` uses
//! both, `stream` uses `endpoint`.

mod endpoint;
mod redact;
mod stream;
mod tls;

pub use endpoint::{PgConnectError, PgEndpoint, PgFailure};
pub use redact::redact_url;
pub use stream::PgStream;
pub use tls::{verifying_client_config, SslMode};
