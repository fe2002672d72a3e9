//! A timer made only while something waits for a deadline: `None` until the first wait, then one
//! `Sleep` moved to each new deadline instead of made again.
//!
//! Why: a reader's keep-alive, its sink's stall and the parking lot each wait for a deadline that
//! exists only some of the time; a timer held for nothing is about 120 bytes per reader.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::{Instant, Sleep};

/// Ready once `deadline` has passed; otherwise `cx` is woken then. Makes `timer` on first use and
/// moves it when the deadline changed.
pub(crate) fn poll_deadline(timer: &mut Option<Pin<Box<Sleep>>>, deadline: Instant, cx: &mut Context<'_>) -> Poll<()> {
    let sleep = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
    if sleep.deadline() != deadline {
        sleep.as_mut().reset(deadline);
    }
    sleep.as_mut().poll(cx)
}
