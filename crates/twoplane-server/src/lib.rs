//! twoplane-server: the HTTP/SSE layer over a [`twoplane_stream::Plane`], and the `twoplane`
//! binary's application.
//!
//! - [`http`]: the SSE endpoint, mountable in any axum app ([`http::sse_router`]).
//! - [`server`]: the accept loop with the socket settings SSE needs (no Nagle, a bounded
//!   per-connection buffer, vectored writes, TCP keepalive), within the bounds of
//!   [`conn_limits`] (connections in all, per address, waiting for a head), and graceful
//!   shutdown; [`sse_conn`], the direct SSE connection layer, answers a connection whose first
//!   request subscribes to a stream without hyper (its `framing.rs` is the server's only
//!   hand-written HTTP; `--no-direct-sse` turns the layer off); a [`server::Shortcut`] serves
//!   requests hyper read before the router (the producer's appends; `--no-append-shortcut`).
//! - [`serve`]: `twoplane serve`: database (SQLite or a PostgreSQL shared by several instances),
//!   plane, the live relay between instances (Redis), host-lease sweeper, routes, signals. One
//!   module per subcommand: this one and [`relay`].
//! - [`relay`]: `twoplane relay`: the commit-log relay from PostgreSQL into S2 or Redis logs.
//! - [`store`]: the server's database (the message and chunk tables) on SQLite or PostgreSQL,
//!   its statements run by the plane's one executor, and the message view that the demo and the
//!   producer API read.
//! - [`demo`]: `--demo`: the simulated model and the chat page.
//! - [`assets`]: the browser package the page imports, compiled into the binary.
//! - [`producer`]: the producer API (`/v1/streams/...`): applications in any language produce
//!   streams over HTTP, the AI SDK's UI message stream among them (its `shortcut.rs` answers
//!   per-delta appends before the router); [`ui_stream`]: the AI SDK's
//!   resume route, a stream read back as a UI message stream.
//! - [`access`]: the producer secret, the signed read tokens, the loopback default; [`loopback`]:
//!   what counts as this machine; [`browser`]: what a web page on this machine could send,
//!   refused where trust rests on loopback; [`token`] is the `twoplane-token` crate (the rule is
//!   pure and fuzzed on its own); [`cors`]: which other origins' pages may read.
//! - [`metrics`]: `/metrics` (Prometheus), `/readyz` and `/healthz`; [`refusal`]: the JSON shape of
//!   every refusal, with its `kind` on the response for the refusal counter.
//! - `error_text`: an error turned into the one sentence a person reads (a startup failure, a log
//!   line), never with a connection string in it.
//! - `deadline`: a timer made only while something waits for a deadline (a keep-alive, a stall,
//!   the parking lot's next due).
//! - `parking`: the lot where a reader handed to its stream's writer task waits without a task of
//!   its own (one task per server polls them all, each with a waker that names its slot).
//! - `wakeup`: a flag one task waits on, two words instead of a `Notify`'s future or a
//!   cancellation token's heap node (a reader's resume, a waiting connection's eviction).
//! - taking a mutex, poisoned or not, is `twoplane_runtime::lock`.
//!
//! Dependencies run one way (`scripts/check-module-cycles.py`, run by the lint part, fails on a
//! circle).

pub mod access;
pub mod assets;
pub mod browser;
pub mod conn_limits;
pub mod cors;
mod deadline;
pub mod demo;
mod error_text;
pub mod http;
pub mod loopback;
pub mod metrics;
mod parking;
pub mod producer;
pub mod refusal;
pub mod relay;
pub mod serve;
pub mod server;
pub mod sse_conn;
pub mod store;
pub mod ui_stream;
mod wakeup;
pub use twoplane_token as token;
