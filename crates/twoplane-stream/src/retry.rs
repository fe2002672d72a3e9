//! Retry with doubling backoff, the one schedule every store call of this crate follows.
//!
//! Guarantees: an operation runs at most `retries + 1` times; retry `n` (1-based) waits
//! `base * 2^(n-1)` first, never more than the cap when one is set ([`Backoff::with_cap`]; the
//! factor stops growing at 2^20, so no delay overflows); an error the caller calls final is
//! returned at once, and after the last retry the last error is returned. Loops that retry until
//! they are stopped (a reconnect) count their failures and wait [`Backoff::delay`] of the count.
//! Callers that must give up early (a seal superseding a checkpoint) drop the future: nothing
//! here holds state beyond the loop.

use std::future::Future;
use std::time::Duration;

/// A retry schedule: `retries` retries after the first attempt, backing off from `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub retries: u32,
    /// The longest wait; `Duration::MAX` (no cap) unless set.
    pub cap: Duration,
}

impl Backoff {
    pub const fn new(base: Duration, retries: u32) -> Backoff {
        Backoff { base, retries, cap: Duration::MAX }
    }

    /// The same schedule, its waits capped at `cap`.
    pub const fn with_cap(self, cap: Duration) -> Backoff {
        Backoff { cap, ..self }
    }

    /// The wait before retry number `attempt` (1-based): base, 2x, 4x, ..., at most the cap.
    pub fn delay(&self, attempt: u32) -> Duration {
        self.base.saturating_mul(1u32 << attempt.saturating_sub(1).min(20)).min(self.cap)
    }

    /// Run `op` (given the attempt number, 0 for the first) until it succeeds, fails with an
    /// error `retryable` refuses, or has been retried `retries` times, sleeping [`delay`]
    /// before each retry.
    ///
    /// [`delay`]: Backoff::delay
    pub async fn retry<T, E, F, Fut>(&self, mut op: F, retryable: impl Fn(&E) -> bool) -> Result<T, E>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempt = 0;
        loop {
            match op(attempt).await {
                Ok(v) => return Ok(v),
                Err(e) if attempt >= self.retries || !retryable(&e) => return Err(e),
                Err(_) => {
                    attempt += 1;
                    tokio::time::sleep(self.delay(attempt)).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use tokio::time::Instant;

    #[test]
    fn delays_double_from_the_base_and_saturate() {
        let b = Backoff::new(Duration::from_millis(50), 3);
        let ms: Vec<u128> = (1..=4).map(|n| b.delay(n).as_millis()).collect();
        assert_eq!(ms, [50, 100, 200, 400]);
        assert_eq!(b.delay(0), Duration::from_millis(50));
        assert_eq!(b.delay(21), b.delay(40), "the factor stops at 2^20");
        assert_eq!(Backoff::new(Duration::MAX, 1).delay(5), Duration::MAX);
    }

    #[test]
    fn a_cap_stops_the_doubling() {
        let b = Backoff::new(Duration::from_millis(50), u32::MAX).with_cap(Duration::from_millis(300));
        let ms: Vec<u128> = (1..=6).map(|n| b.delay(n).as_millis()).collect();
        assert_eq!(ms, [50, 100, 200, 300, 300, 300]);
        assert_eq!(b.delay(u32::MAX), Duration::from_millis(300));
    }

    #[tokio::test(start_paused = true)]
    async fn retries_transient_errors_then_gives_the_last_one() {
        let b = Backoff::new(Duration::from_millis(10), 2);
        let seen = RefCell::new(Vec::new());
        let start = Instant::now();
        let out: Result<(), u32> = b
            .retry(
                |n| {
                    seen.borrow_mut().push((n, start.elapsed().as_millis()));
                    async move { Err(n) }
                },
                |_| true,
            )
            .await;
        assert_eq!(out, Err(2));
        assert_eq!(*seen.borrow(), [(0, 0), (1, 10), (2, 30)]);
    }

    #[tokio::test(start_paused = true)]
    async fn stops_at_success_or_a_final_error() {
        let b = Backoff::new(Duration::from_millis(10), 5);
        let calls = RefCell::new(0);
        let ok: Result<u32, &str> = b
            .retry(
                |n| {
                    *calls.borrow_mut() += 1;
                    async move {
                        if n == 1 {
                            Ok(7)
                        } else {
                            Err("busy")
                        }
                    }
                },
                |_| true,
            )
            .await;
        assert_eq!((ok, *calls.borrow()), (Ok(7), 2));
        *calls.borrow_mut() = 0;
        let final_err: Result<u32, &str> = b
            .retry(
                |_| {
                    *calls.borrow_mut() += 1;
                    async { Err("refused") }
                },
                |e| *e != "refused",
            )
            .await;
        assert_eq!((final_err, *calls.borrow()), (Err("refused"), 1));
    }
}
