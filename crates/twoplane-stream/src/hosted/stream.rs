//! One hosted stream: the parts it is made of, its lock, and what it does after a critical
//! section.
//!
//! Owns: the stream's id and configuration, its state under one lock (`state.rs`), its fan-out
//! shards (`shards.rs`) and writer tasks (`writers.rs`), the signals that wake its checkpoint
//! driver and its producer's `pump`, and the seal's outcome.
//!
//! Guarantees:
//! - The lock tolerates poison: every mutation keeps the state consistent before anything that
//!   could panic (adapter code) runs, so a poisoned guard is still a valid state.
//! - Wakers, writer wake-ups, hooks and signals collected under the lock ([`Effects`]) run only
//!   after it is released ([`LiveStream::apply`]), so no foreign code runs under it.
//!
//! What the stream does lives beside this file: producing (`produce.rs`), checkpointing
//! (`checkpoint.rs`), joining (`join.rs`); it knows no plane and no subscription.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::Notify;
use twoplane_core::Text;

use super::lifecycle::{Seal, SealOutcome, SealWatch};
use super::shards::Shards;
use super::state::State;
use super::writers::{WriterHost, Writers};
use crate::error::PlaneError;
use crate::fanout::Wakes;
use crate::options::Config;
use crate::relay::{RelayError, RelayPhase};
use crate::report;

/// Collected while the lock is held, acted on after it is released (wakers, hooks, signals).
#[derive(Default)]
pub(crate) struct Effects {
    pub wake: Wakes,
    pub relay_errors: Vec<RelayError>,
    pub kick: bool,
    pub cancelled: bool,
    /// A display-rate flush to schedule for then (`display.rs`).
    pub flush_at: Option<tokio::time::Instant>,
}

pub(crate) struct LiveStream {
    pub id: String,
    pub(super) id_text: Text,
    pub(super) cfg: Arc<Config>,
    state: Mutex<State>,
    /// The subscribers' cursors and the frame logs they read.
    pub(super) shards: Shards,
    /// The direct-delivery writer tasks.
    pub(super) writers: Writers,
    /// Wakes the checkpoint driver (a permit is kept when it is busy, so no kick is lost).
    pub kick: Notify,
    /// Wakes `pump` when a reader's cancel arrives (read back from the store, or
    /// `request_cancel`).
    pub cancel_signal: Notify,
    /// The seal's outcome, once known; every `close`/`fail`/`drain` caller reads the same one.
    seal_outcome: SealOutcome,
    /// The stream itself, for the display-rate flush it schedules (a task holding it until then).
    me: Weak<LiveStream>,
}

impl WriterHost for LiveStream {
    fn shards(&self) -> &Shards {
        &self.shards
    }

    fn writers(&self) -> &Writers {
        &self.writers
    }
}

impl LiveStream {
    pub fn new(id: &str, cfg: Arc<Config>) -> Arc<LiveStream> {
        Arc::new_cyclic(|me| LiveStream {
            id: id.to_owned(),
            id_text: Text::from(id),
            cfg,
            state: Mutex::new(State::new()),
            shards: Shards::new(),
            writers: Writers::new(),
            kick: Notify::new(),
            cancel_signal: Notify::new(),
            seal_outcome: SealOutcome::new(),
            me: me.clone(),
        })
    }

    /// The lock, tolerating poison (see the module guarantees).
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        twoplane_runtime::lock(&self.state)
    }

    /// Whether any subscriber would receive a new frame (producers skip building frames nobody
    /// reads).
    pub(super) fn has_readers(&self) -> bool {
        self.shards.has_readers()
    }

    /// Act on what a critical section collected. Never called with the lock held.
    pub(super) fn apply(&self, fx: Effects) {
        for w in fx.wake.tasks {
            w.wake();
        }
        self.writers.wake_all(fx.wake.writers);
        if fx.kick {
            self.kick.notify_one();
        }
        if fx.cancelled {
            self.cancel_signal.notify_waiters();
            report::cancelled(&self.cfg, &self.id);
        }
        for e in fx.relay_errors {
            report::relay_error(&self.cfg, &self.id, RelayPhase::Publish, e.as_ref());
        }
        if let Some(at) = fx.flush_at {
            // `fan_out` holds frames only inside a runtime, so the clock has one to run on.
            let me: Weak<dyn crate::display_clock::DisplayWrite> = self.me.clone();
            self.cfg.display_clock.schedule(at, me);
        }
    }

    /// Ask for the seal (the first request wins) and return where its outcome will appear.
    pub fn request_seal(&self, seal: Seal) -> SealWatch {
        {
            let mut st = self.lock();
            if st.life.request_seal(seal) {
                st.policy.disarm();
            }
        }
        self.kick.notify_one();
        self.seal_outcome.watch()
    }

    pub(super) fn publish_seal_outcome(&self, outcome: Result<(), PlaneError>) {
        self.seal_outcome.publish(outcome);
    }

    /// A reader's cancel, delivered to the process hosting the stream: what a checkpoint does when
    /// it reads the store's cancel flag back, at once. `false` when the stream already ended or is
    /// being sealed (there is nothing left to stop).
    pub fn request_cancel(&self) -> bool {
        let mut fx = Effects::default();
        let live = {
            let mut st = self.lock();
            let live = !st.life.is_sealing_or_ended();
            if live && st.life.mark_cancelled() {
                fx.cancelled = true;
            }
            live
        };
        self.apply(fx);
        live
    }

    // ---- observers

    pub fn seq(&self) -> u64 {
        self.lock().text.seq()
    }

    pub fn durable_seq(&self) -> u64 {
        self.lock().durable.seq()
    }

    /// Both lengths, read under one acquisition of the lock.
    pub fn position(&self) -> super::Position {
        self.lock().position()
    }

    pub fn part_count(&self) -> usize {
        self.lock().shape.as_ref().map_or(1, |shape| shape.part_count())
    }

    pub fn cancelled(&self) -> bool {
        self.lock().life.cancelled()
    }

    pub fn is_ended(&self) -> bool {
        self.lock().life.is_ended()
    }

    pub fn is_sealing_or_ended(&self) -> bool {
        self.lock().life.is_sealing_or_ended()
    }
}
