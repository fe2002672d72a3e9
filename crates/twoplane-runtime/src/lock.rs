//! The one way a twoplane crate takes a `std::sync::Mutex`.
//!
//! Guarantees: a poisoned mutex is taken anyway. Every mutex these crates hold guards state that
//! a panicking holder leaves consistent (each critical section writes whole values), and a
//! stream, a relay or a server must keep serving everyone else after one task panicked, so
//! poisoning carries no information worth stopping for. A mutex whose critical sections could
//! leave half-written state must not be taken through this.

use std::sync::{Mutex, MutexGuard};

/// `m` locked, poisoned or not (see the module header).
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_poisoned_mutex_is_taken_with_its_value() {
        let m = Arc::new(Mutex::new(1));
        let held = m.clone();
        let _ = std::thread::spawn(move || {
            let mut guard = held.lock().unwrap();
            *guard = 2;
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*lock(&m), 2);
    }
}
