//! The producer API of `twoplane serve`: an application in any language opens a stream for a
//! message row, sends the model's text, and seals it, over HTTP (docs/server.md, "Producer
//! API", is the reference; the handlers are in [`routes`], and `shortcut.rs` answers per-delta
//! appends before the router with the same checks and handler code).
//!
//! Guarantees:
//! - The same contract as the plane's producer handle ([`twoplane_stream::StreamHandle`]): the
//!   open is the plane's single-flight claim of the row; every appended piece is a delta pushed
//!   in arrival order; flush resolves once the store holds everything so far; close and fail
//!   seal; a reader's cancel seals the stream `cancelled` and is reported to the producer.
//! - Offsets are UTF-16 code units (docs/contract.md §0). An append that names an offset other
//!   than the stream's produced length is refused with that length, and the check and the push
//!   happen under one lock per stream, so a retried append can never duplicate or skip text.
//! - A stream stays registered after its seal for [`Limits::linger`], so a late or retried call
//!   learns how it ended (`cancelled`, `stream_closed`) instead of `not_open`; a stream nobody
//!   touched for [`Limits::idle`] is sealed `interrupted` (its producer is presumed gone).

mod body;
mod errors;
mod events;
mod guards;
mod registry;
mod routes;
mod rows;
mod shortcut;
mod ui;

use std::sync::Arc;

use axum::Router;
use twoplane_stream::Plane;

use crate::access::Access;
use crate::server::Shortcut;
use crate::store::Database;
use registry::Producers;

pub use errors::ApiError;
pub use registry::{cancel_feed, Cancels, Limits};

/// The producer routes (`/v1/streams/...`, behind [`crate::access::require_producer`]) and the
/// reader's cancel route (`POST /v1/streams/{id}/cancel`, behind a read token), and the append
/// shortcut over the same producers, for the accept loop to serve appends before the router
/// (`shortcut.rs`). Starts the sweeper of idle and sealed streams on the current runtime.
pub fn routes(
    plane: Plane,
    db: Database,
    access: Arc<Access>,
    limits: Limits,
    cancels: Cancels,
) -> (Router, Arc<dyn Shortcut>) {
    let producers = Producers::new(plane, db, access, limits);
    tokio::spawn(producers.clone().sweep());
    tokio::spawn(producers.clone().follow_cancels(cancels));
    let shortcut = Arc::new(shortcut::AppendShortcut { producers: producers.clone() });
    (routes::router(producers), shortcut)
}
