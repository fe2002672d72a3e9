//! A flag one task waits on without a future of its own: raised by anyone, seen by its one
//! waiter.
//!
//! Why: a connection's wait for a reader's resume and its wait for an eviction live as long as
//! the connection, and tokio's `Notify` or a `CancellationToken` would cost every connection a
//! future to keep (a `Notified` borrows its `Notify`) or a heap node of its own; this is two
//! words in the struct that holds it.
//!
//! Guarantees: a raise before the wait begins counts; a raise between the waiter's look and its
//! registration still wakes it (it registers, then looks again); each raise is seen once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;

#[derive(Default, Debug)]
pub(crate) struct Wakeup {
    raised: AtomicBool,
    waiter: AtomicWaker,
}

impl Wakeup {
    /// Raise the flag and wake the waiter, if one is registered.
    pub fn raise(&self) {
        self.raised.store(true, Ordering::Release);
        self.waiter.wake();
    }

    /// Let go of the registered waker: its task waits for this no more. A waker held here keeps
    /// its task's memory (all of it, a finished task's too) for as long as this lives.
    pub fn forget(&self) {
        drop(self.waiter.take());
    }

    /// Whether the flag is raised and not yet seen.
    #[cfg(test)]
    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::Acquire)
    }

    /// Ready once the flag was raised since the last time this was ready (and lowers it);
    /// otherwise the waiter is registered.
    pub fn poll_take(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.raised.swap(false, Ordering::AcqRel) {
            return Poll::Ready(());
        }
        self.waiter.register(cx.waker());
        if self.raised.swap(false, Ordering::AcqRel) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}
