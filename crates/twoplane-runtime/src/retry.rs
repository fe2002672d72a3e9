//! Retry with doubling backoff, the one schedule every store call, reconnect and relay retry follows.
//!
//! Guarantees: [`Backoff::retry`] runs an operation at most `retries + 1` times;
//! [`Backoff::retry_until`] runs it until a deadline instead, and never sleeps past it. Retry
//! `n` (1-based) waits
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
    pub async fn retry<T, E, F, Fut>(&self, op: F, retryable: impl Fn(&E) -> bool) -> Result<T, E>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run(op, retryable, |attempt, _| attempt <= self.retries).await
    }

    /// Run `op` like [`retry`](Backoff::retry), but with no count: it is retried for as long as
    /// the next wait ends before `deadline` (the seal, which must not give up on a store that
    /// comes back within a minute). The last attempt starts before the deadline; the error of
    /// the last one is returned.
    pub async fn retry_until<T, E, F, Fut>(
        &self,
        deadline: tokio::time::Instant,
        op: F,
        retryable: impl Fn(&E) -> bool,
    ) -> Result<T, E>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run(op, retryable, |_, wait| tokio::time::Instant::now() + wait < deadline).await
    }

    /// The one loop: `again(attempt, wait)` says whether retry `attempt` (after `wait`) runs.
    async fn run<T, E, F, Fut>(
        &self,
        mut op: F,
        retryable: impl Fn(&E) -> bool,
        again: impl Fn(u32, Duration) -> bool,
    ) -> Result<T, E>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempt = 0;
        loop {
            match op(attempt).await {
                Ok(v) => return Ok(v),
                Err(e) if !retryable(&e) => return Err(e),
                Err(e) => {
                    let wait = self.delay(attempt.saturating_add(1));
                    if !again(attempt.saturating_add(1), wait) {
                        return Err(e);
                    }
                    attempt = attempt.saturating_add(1);
                    tokio::time::sleep(wait).await;
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

    #[tokio::test(start_paused = true)]
    async fn retry_until_keeps_going_until_the_deadline_and_never_sleeps_past_it() {
        let b = Backoff::new(Duration::from_millis(100), 0).with_cap(Duration::from_millis(400));
        let start = Instant::now();
        let seen = RefCell::new(Vec::new());
        let out: Result<(), u32> = b
            .retry_until(
                start + Duration::from_millis(2_000),
                |n| {
                    seen.borrow_mut().push(start.elapsed().as_millis());
                    async move { Err(n) }
                },
                |_| true,
            )
            .await;
        // 0, then waits of 100, 200, 400, 400, ... while they end before 2,000 ms: the count
        // (0 retries) does not apply.
        assert_eq!(*seen.borrow(), [0, 100, 300, 700, 1_100, 1_500, 1_900]);
        assert_eq!(out, Err(6));
        assert!(start.elapsed() < Duration::from_millis(2_000));
        // Success ends it at once, and a final error too.
        let calls = RefCell::new(0);
        let ok: Result<u32, &str> = b
            .retry_until(
                Instant::now() + Duration::from_secs(60),
                |n| {
                    *calls.borrow_mut() += 1;
                    async move {
                        if n == 3 {
                            Ok(n)
                        } else {
                            Err("busy")
                        }
                    }
                },
                |e| *e == "busy",
            )
            .await;
        assert_eq!((ok, *calls.borrow()), (Ok(3), 4));
    }
}
