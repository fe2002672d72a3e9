//! The state of one hosted stream under its lock, split by concern; each part owns its fields
//! and keeps its own rules (see its file). Everything that changes more than one part at once
//! (a push, a checkpoint's answer, the seal) happens under the one lock, so it is atomic.

use twoplane_core::message::MessageShape;

use super::backlog::Backlog;
use super::lifecycle::Lifecycle;
use super::policy::Policy;
use super::shards::ShardUse;
use super::text::Produced;
use super::waiters::Durable;
use crate::display::Display;

pub(crate) struct State {
    /// The produced text (`text.rs`).
    pub text: Produced,
    /// The durable length and the flushes waiting for it (`waiters.rs`).
    pub durable: Durable,
    /// When the next checkpoint round is due (`policy.rs`).
    pub policy: Policy,
    /// Live, sealing, ended, fenced; a reader's cancel (`lifecycle.rs`).
    pub life: Lifecycle,
    /// Which fan-out shards are in use (`shards.rs`).
    pub shards: ShardUse,
    /// Since when undurable text has waited unconfirmed (`backlog.rs`).
    pub backlog: Backlog,
    /// The message's runs and events (docs/contract.md §8), from its first structural event
    /// on; `None` while the stream is a single text, which then costs nothing more than it did.
    /// Each event holds one placeholder unit of `text`, so `text` stays indexed by the
    /// coordinate.
    pub shape: Option<MessageShape>,
    /// Frames held for the next display-rate write (`display.rs`).
    pub display: Display,
}

/// Where a stream stands: its produced and durable lengths, read together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub seq: u64,
    pub durable_seq: u64,
}

impl State {
    pub fn new() -> State {
        State {
            text: Produced::new(),
            durable: Durable::new(),
            policy: Policy::new(),
            life: Lifecycle::new(),
            shards: ShardUse::new(),
            backlog: Backlog::new(),
            shape: None,
            display: Display::default(),
        }
    }

    /// Where the stream stands: produced and durable lengths.
    pub fn position(&self) -> Position {
        Position { seq: self.text.seq(), durable_seq: self.durable.seq() }
    }

    /// Produced units the store has not confirmed.
    pub fn undurable(&self) -> u64 {
        self.text.seq().saturating_sub(self.durable.seq())
    }

    /// The end of the text a checkpoint may write now (the whole text once a seal was asked
    /// for; see [`Produced::writable_end`]).
    pub fn writable_end(&self) -> u64 {
        self.text.writable_end(self.durable.seq(), self.life.is_sealing())
    }
}
