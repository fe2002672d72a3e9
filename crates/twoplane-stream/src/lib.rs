//! twoplane-stream: the native stream plane on tokio (docs/contract.md §6 and §7).
//!
//! A response is produced as many small deltas. [`Plane::open`] hosts a stream; every
//! [`StreamHandle::push`] goes straight to subscribers as a `chunk` frame (the live plane), and a
//! per-stream checkpoint driver advances the application's own tables at coarse checkpoints (the
//! durable plane): every `chars` code units, every `interval_ms`, on [`StreamHandle::flush`], and
//! at the seal, which compacts the chunks into the message body. The SQL targets group-commit the
//! rounds of every stream that are due together into one transaction.
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
//! Frames are handed out as `Arc<MessageFrame>` ([`Subscription::next`]): one allocation per produced
//! frame, shared by every subscriber. A server that owns its sockets can instead hand a
//! caught-up subscription to an [`SseSink`] ([`Subscription::deliver_to`]): the stream's writer
//! tasks then write its events without waking its task per frame (see `hosted/writers.rs`).
//!
//! ## The tree
//!
//! The live side is layered like tokio's channels (public handles over a shared state over
//! storage that knows no handle); each layer uses only those below it, and
//! `scripts/check-module-cycles.py` (run by `scripts/test-lint.sh`) keeps the crate free of
//! import circles. Every module, one line each; the live side from the bottom:
//! - `sse`: the SSE types a server receives ([`SseBatch`], [`SseEvents`], [`SseSink`],
//!   [`Delivered`]) and the one encoding of frames into events.
//! - `fanout/`: one fan-out shard: a frame log and its subscribers' cursors, plain storage (no
//!   tokio, no stream), one file per concern (`wake`, `log`, `encoding`, `direct`, `shard`;
//!   `fanout/mod.rs` says what each holds).
//! - `display`: the display-rate writes' rule: the frames held until their write interval ends,
//!   then published merged (a hosted stream's and a relay leg's alike).
//! - `display_clock`: the plane's one timer for the display-rate writes due later.
//! - `replay`: a join's replay, its text a view of the stream's own blocks, cut into `chunk`
//!   pieces only as the subscriber drains.
//! - `ui_log`: the AI SDK's UI message stream as the plane writes it, a subscription's second
//!   encoding beside the frames ([`Plane::subscribe_ui`]).
//! - `relay`: the [`Relay`] seam, the live plane across processes.
//! - `relay_queue`: the bounded queue between a relay reader task and its one subscriber.
//! - `relay_leg`: the subscribe-miss leg that dials the relay and fills that queue.
//! - `hosted/`: one hosted stream, split by concern (`text`, `waiters`, `policy`, `backlog`,
//!   `lifecycle`, `shards`, `writers`, `state`, `stream`, `produce`, `checkpoint`, `join`,
//!   `goes_on`; `hosted/mod.rs` says what each holds). It knows no plane and no subscription: its
//!   checkpoint driver returns when the stream is to be evicted, and a join is a value.
//! - `subscription`: [`Subscription`], one handle over a fixed replay, a hosted stream's reader,
//!   or a relay queue.
//! - `handle`: [`StreamHandle`], the producer's handle.
//! - `plane`: [`Plane`], which hosts the streams, turns joins and relay queues into
//!   subscriptions, and evicts.
//!
//! Beside them, settings and hooks:
//! - `options`: [`PlaneOptions`], their defaults and the construction-time check.
//! - `report`: the diagnostics hooks, run outside every plane lock, a panicking one contained.
//! - `auth`: who may read a stream ([`Authorizer`]).
//! - `jitter`: the bounded per-stream, per-round shift of each checkpoint interval's deadline.
//! - `error`: [`PlaneError`], the plane's one error type.
//!
//! The durable side:
//! - `target`: the durable seam ([`DurableTarget`]): what the plane needs from wherever
//!   checkpoints land.
//! - `sqlite`: [`SqliteTarget`], the mapped tables on SQLite, the embedded default.
//! - `postgres`: [`PostgresTarget`], the mapped tables on PostgreSQL.
//! - `callback`: [`CallbackTarget`], checkpoints persisted however the application likes.
//! - `memory` (feature `testing`): `MemoryTarget`, an in-memory model of the mapped tables,
//!   the reference the SQL targets are tested against.
//! - `faulty` (feature `testing`): `FaultyTarget`, a fault injector around any target.
//! - `verdict`: the decisions both SQL targets make: which statements a checkpoint and a seal
//!   run, and what a read-back means.
//! - `group_commit`: the queue and its leader: many callers' writes in one transaction.
//! - `sqlite_shared`: [`SqliteShared`], SQLite's group-committed write connection and the read
//!   connection beside it.
//! - `postgres_group`: PostgreSQL's group-committed checkpoints, one transaction pipelined on
//!   one connection.
//! - `pg_state`: the store's word on a message row as PostgreSQL returns it.
//! - `pg_client`: [`PgClient`], the bounded PostgreSQL pool (the URL, its TLS and its errors
//!   are the `twoplane-pg` crate's).
//! - `exec`: [`Executor`], the one way a core statement runs on SQLite or PostgreSQL, for the
//!   targets, the sweeper and the server alike.
//! - `schema`: the one runner of the core's table shapes: every table created or upgraded goes
//!   through it.
//! - `sweeper`: [`Sweeper`], the host leases and the sweep that releases a dead instance's
//!   streams.
//!
//! Retry schedules and taking a mutex are the `twoplane-runtime` crate's.

mod auth;
mod callback;
mod display;
mod display_clock;
mod error;
mod exec;
mod fanout;
#[cfg(feature = "testing")]
mod faulty;
mod group_commit;
mod handle;
mod hosted;
mod jitter;
#[cfg(feature = "testing")]
mod memory;
mod options;
mod pg_client;
mod pg_state;
mod plane;
mod postgres;
mod postgres_group;
mod relay;
mod relay_leg;
mod relay_queue;
mod replay;
mod report;
mod schema;
mod sqlite;
mod sqlite_shared;
mod sse;
mod subscription;
mod sweeper;
mod target;
mod ui_log;
mod verdict;

pub use auth::{authorize_with, AllowAll, AuthRequest, Authorizer};
pub use callback::{BoxError, CallbackTarget, CommitInput, CommitReply};
pub use error::{PlaneError, PlaneErrorKind};
pub use exec::{
    pg_cell, pg_cells, pg_int, prepare_all, sqlite_execute, sqlite_params, sqlite_rows, Bind, Cell, Executor, PgExec,
    Rows,
};
/// Test support, not library API (the `testing` feature): a fault injector around any target and
/// an in-memory model of the mapped tables.
#[cfg(feature = "testing")]
pub use faulty::{Fault, FaultOp, FaultyTarget};
pub use handle::StreamHandle;
pub use hosted::{Position, Refusal, Refused};
#[cfg(feature = "testing")]
pub use memory::{MemoryRow, MemoryTarget, MemoryWrite};
pub use options::{
    CancelHook, CheckpointErrorHook, CheckpointErrorInfo, PlaneOptions, DEFAULT_CHECKPOINT_CHARS,
    DEFAULT_CHECKPOINT_INTERVAL_MS, DEFAULT_CHECKPOINT_RETRIES, DEFAULT_DRAIN_RELAY_MS, DEFAULT_LINGER_MS,
    DEFAULT_MAX_QUEUED_FRAMES, DEFAULT_MAX_UNDURABLE_CHARS, DEFAULT_MAX_UNDURABLE_MS, DEFAULT_RELAY_ATTACH_TIMEOUT_MS,
    DEFAULT_RETAIN_CHARS, DEFAULT_RETRY_BACKOFF_MS, DEFAULT_SEAL_DEADLINE_MS, MAX_WRITE_INTERVAL_MS, SEAL_RETRY_CAP,
};
pub use pg_client::{PgClient, PgSession, DEFAULT_PG_POOL_SIZE};
pub use plane::{Authorized, Census, DrainReport, HostedUi, Plane};
pub use postgres::PostgresTarget;
pub use relay::{FrameSource, Relay, RelayError, RelayErrorHook, RelayErrorInfo, RelayPhase, RelayTopology};
pub use schema::{migrate, migrate_postgres, migrate_sqlite, read_catalog, PG_SCHEMA_LOCK_KEY};
pub use sqlite::SqliteTarget;
pub use sqlite_shared::SqliteShared;
pub use sse::{Delivered, SseBatch, SseEvents, SseSink};
pub use subscription::Subscription;
pub use sweeper::{
    Sweeper, SweeperHandle, SweeperOptions, SweptHook, DEFAULT_HOST_LEASE_TABLE, DEFAULT_LEASE_RETENTION_MS,
    DEFAULT_LEASE_TTL_MS, DEFAULT_SWEEP_INTERVAL_MS,
};
pub use target::{
    AppendAck, AppendRequest, CloseRequest, DurableTarget, ExpandRow, OpenRequest, ReopenRequest, StoredMessage,
    TargetCaps, TargetMode,
};
pub use twoplane_core::ui::UiOutcome;
pub use twoplane_pg::{redact_url, PgConnectError, PgEndpoint, PgFailure, SslMode};
pub use twoplane_runtime::Backoff;

pub use twoplane_core::message::{Attrs, Event, MessageFrame};
/// The core types a user of this crate needs, re-exported so versions cannot drift.
pub use twoplane_core::sql::{StreamColumns, StreamTables};
pub use twoplane_core::{Frame, FrameKind, StreamStatus, Text};
