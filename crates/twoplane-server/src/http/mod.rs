//! The SSE endpoint (docs/contract.md §5) and what every reader endpoint shares: admission under
//! the bounds, the response body that writes a subscription as server-sent events, and its
//! hand-off to whichever writer serves it (hyper, or the direct SSE path in
//! [`crate::sse_conn`]).
//!
//! The files, each using only those listed before it; each states its own guarantees:
//! - `config.rs`: [`SseConfig`], the endpoint's settings, and [`SseStats`], its counters.
//! - `admission.rs`: whether a reader may start (the server-wide bound, the per-stream and
//!   per-address caps), the refusals when not, and the places a reader holds while it lives.
//! - `continuation.rs`: how a UI reader's response goes on after its subscription ended short
//!   of the stream's end (the AI SDK's resume route, `crate::ui_stream`).
//! - `body.rs`: [`SseBody`]: one write per wakeup, keep-alives, no buffering of its own, and
//!   the hand-over of a caught-up subscription to its stream's writer task.
//! - `handoff.rs`: a reader's response, its headers and its body, which goes to one owner:
//!   the response (for hyper), or the direct path's connection when that answers the request.
//! - `endpoint.rs`: `GET /api/stream` itself ([`sse_router`]), and which request targets are a
//!   reader's (this endpoint's and the AI SDK's resume route's).

mod admission;
mod body;
mod config;
mod continuation;
mod endpoint;
mod handoff;

pub use admission::forbidden;
pub(crate) use admission::{admit, too_many_subscribers};
pub use body::SseBody;
pub(crate) use body::Step;
pub use config::{SseConfig, SseStats};
pub(crate) use continuation::{Continuation, Continue};
pub(crate) use endpoint::{is_reader_target, RESUME_PATH_HEAD, RESUME_PATH_TAIL};
pub use endpoint::{sse_router, sse_router_with, HttpCaller, STREAM_PATH};
pub use handoff::sse_response;
pub(crate) use handoff::{answer_here, handoff_response};
