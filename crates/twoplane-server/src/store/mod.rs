//! The server's store: the application's message table and the plane's chunk table, on SQLite
//! (one process, or a few on one machine sharing the file) or on PostgreSQL (several instances
//! sharing one server). `twoplane serve` runs on it with or without `--demo`.
//!
//! This file only declares and re-exports; dependencies run one way:
//! - [`names`]: the tables, columns and the plane's mapping (depends on nothing here);
//! - [`sqlite`], [`postgres`]: each backend's connection, running the schema [`names::schema`]
//!   describes through the plane's one migration runner;
//! - [`database`]: [`Database`], which picks the backend and runs the server's statements
//!   through the plane's executor ([`twoplane_stream::Executor`]);
//! - [`messages`]: the durable view of the messages, which the page and the producer API read.

pub mod database;
pub mod messages;
pub mod names;
pub mod postgres;
pub mod sqlite;

pub use database::Database;
pub use messages::MessageView;
pub use names::{
    schema, tables, tables_with_host, CANCEL_COLUMN, CHUNK_TABLE, HOST_COLUMN, MESSAGE_TABLE, PARTS_COLUMN,
    POSITION_COLUMN, ROLE_COLUMN,
};
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
