//! What the plane, the server, the Redis adapters and the commit-log relay share below all of
//! them: one retry schedule ([`Backoff`], `retry.rs`) and one way to take a `std::sync::Mutex`
//! ([`lock`], `lock.rs`).
//!
//! Guarantees: nothing here knows streams, stores or HTTP, so any crate can use it without
//! depending on the plane; it needs only tokio's timer.

mod lock;
mod retry;

pub use lock::lock;
pub use retry::Backoff;
