//! The crate's one way to take a `std::sync::Mutex`.
//!
//! Guarantees: a poisoned mutex is taken anyway. A panic elsewhere must not wedge the relay's
//! bookkeeping, and every mutex here guards state that stays consistent between statements (a
//! panicking holder leaves whole values), so a poisoned lock is still usable.

use std::sync::{Mutex, MutexGuard};

/// `m` locked, poisoned or not (see the module header).
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
