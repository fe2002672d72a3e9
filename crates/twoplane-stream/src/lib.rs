//! twoplane-stream: the native stream plane on tokio (docs/contract.md §6 and §7).
//!
//! A response is produced as many small deltas. [`Plane::open`] hosts a stream; every
//! [`StreamHandle::push`] goes straight to subscribers as a `chunk` frame (the live plane), and a
//! per-stream checkpoint driver advances the application's own tables at coarse checkpoints (the
//! durable plane): every `chars` code units, every `interval_ms`, on [`StreamHandle::flush`], and
//! at the seal, which compacts the chunks into the message body.
//!
//! What the crate guarantees, and the tests check after every step of generated schedules:
//! - **P**: the store's text is always a prefix of the produced text and never shrinks; a
//!   `durable` frame is sent only for a length the store confirmed by read-back.
//! - **S**: for every join offset and time, the text a subscriber joined with followed by the
//!   chunk texts it receives equals the produced text, whenever its stream ends honestly.
//! - Every subscription starts with `open` (unless its only frame is a bare `stale`/`absent`)
//!   and ends with exactly one terminal; a slow subscriber is dropped with `stale`, and the
//!   producer never waits for a reader.
//! - No write cuts a surrogate pair; no code unit is replaced, dropped or reordered.
//! - Flushes and seals are honest: they resolve only when the text landed.
//!
//! Every statement of the core's SQL, the plane's and its users', runs through one executor
//! ([`Executor`] and the per-connection functions beside it, in `exec.rs`): one way to bind a
//! parameter, read a cell, and keep SQLite off the runtime's threads.
//!
//! Several instances sharing one database run a [`Sweeper`] each: a liveness lease per host, and a
//! sweep that marks `interrupted` the streams of hosts whose lease expired.
//!
//! Frames are handed out as `Arc<Frame>` ([`Subscription::next`]): one allocation per produced
//! frame, shared by every subscriber. A server that owns its sockets can instead hand a
//! caught-up subscription to an [`SseSink`] ([`Subscription::deliver_to`]): the stream's writer
//! tasks then write its events without waking its task per frame (see `direct.rs`).

mod auth;
mod callback;
mod checkpoint;
mod direct;
mod error;
mod exec;
mod fanout;
#[cfg(feature = "testing")]
mod faulty;
mod jitter;
mod live;
mod lock;
#[cfg(feature = "testing")]
mod memory;
mod options;
mod pg_client;
mod plane;
mod postgres;
mod relay;
mod relay_leg;
mod report;
mod retry;
mod sqlite;
mod subscription;
mod sweeper;
mod target;
mod verdict;

pub use auth::{authorize_with, AllowAll, AuthRequest, Authorizer};
pub use callback::{BoxError, CallbackTarget, CommitInput, CommitReply};
pub use direct::{Delivered, SseEvents, SseSink};
pub use error::{PlaneError, PlaneErrorKind};
pub use exec::{
    pg_cell, pg_cells, pg_int, prepare_all, sqlite_execute, sqlite_params, sqlite_rows, Bind, Cell, Executor, PgExec,
    Rows, SqliteShared,
};
/// Test support, not library API (the `testing` feature): a fault injector around any target and
/// an in-memory model of the mapped tables.
#[cfg(feature = "testing")]
pub use faulty::{Fault, FaultOp, FaultyTarget};
#[cfg(feature = "testing")]
pub use memory::{MemoryRow, MemoryTarget, MemoryWrite};
pub use options::{
    CheckpointErrorHook, CheckpointErrorInfo, PlaneOptions, DEFAULT_CHECKPOINT_CHARS, DEFAULT_CHECKPOINT_INTERVAL_MS,
    DEFAULT_CHECKPOINT_RETRIES, DEFAULT_DRAIN_RELAY_MS, DEFAULT_LINGER_MS, DEFAULT_MAX_QUEUED_FRAMES,
    DEFAULT_RELAY_ATTACH_TIMEOUT_MS, DEFAULT_RETAIN_CHARS, DEFAULT_RETRY_BACKOFF_MS,
};
pub use pg_client::{PgClient, PgSession, DEFAULT_PG_POOL_SIZE};
pub use plane::{DrainReport, Plane, StreamHandle};
pub use postgres::{PostgresTarget, PG_SCHEMA_LOCK_KEY};
pub use relay::{FrameSource, Relay, RelayError, RelayErrorHook, RelayErrorInfo, RelayPhase, RelayTopology};
pub use retry::Backoff;
pub use sqlite::SqliteTarget;
pub use subscription::{SseBatch, Subscription};
pub use sweeper::{
    Sweeper, SweeperHandle, SweeperOptions, SweptHook, DEFAULT_HOST_LEASE_TABLE, DEFAULT_LEASE_RETENTION_MS,
    DEFAULT_LEASE_TTL_MS, DEFAULT_SWEEP_INTERVAL_MS,
};
pub use target::{AppendAck, AppendRequest, CloseRequest, DurableTarget, OpenRequest, TargetCaps, TargetMode};
pub use twoplane_pg::{redact_url, PgConnectError, PgEndpoint, PgFailure, SslMode};

/// The core types a user of this crate needs, re-exported so versions cannot drift.
pub use twoplane_core::sql::{StreamColumns, StreamTables};
pub use twoplane_core::{Frame, FrameKind, StreamStatus, Text};
