//! The crate's one way to take a `std::sync::Mutex`.
//!
//! Guarantees: a poisoned mutex is taken anyway. Every mutex of this crate guards state that a
//! panicking holder leaves consistent (each critical section writes whole values), and a
//! stream must keep serving its other readers after one of them panicked, so poisoning carries
//! no information worth stopping for.

use std::sync::{Mutex, MutexGuard};

/// `m` locked, poisoned or not (see the module header).
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
