//! The frame log and its cursors: each produced frame stored once for every subscriber of a
//! shard (an `Arc<MessageFrame>`, with the slots for its encodings), and each subscriber's place:
//! its own join replay, its own terminal, and its index in the log.
//!
//! A cursor holds no copy of any log frame, nor of the text: a replay's pieces are copied out
//! one at a time as it drains (`replay.rs`), each of at most the drain's batch limit (a frame
//! drain takes at most one piece).
//!
//! Guarantees:
//! - Ordered and gap-free: a cursor yields its replay, then every log frame from the moment it
//!   attached, in order, then nothing after its terminal frame (a log terminal, or its own
//!   overflow `stale`, which replaces whatever it still owed).
//! - Counted: the log knows how many cursors still read it ([`Log::active`]); a cursor stops
//!   counting when it takes a terminal or is ended with its own.
//! - Read frames do not linger: a push says when a trim is due, every [`TRIM_EVERY`] frames, and
//!   the log then releases everything below the slowest live cursor ([`Log::release_below`]).
//! - A cursor's queue for the bound ([`Cursor::queued`]) counts its replay as at most
//!   [`REPLAY_ALLOWANCE`] entries, plus the log frames behind it.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use twoplane_core::message::MessageFrame;

use crate::replay::{Replay, FRAME_PIECE_BYTES};

/// A replay counts as at most this many entries against the queue bound: a single text's replay
/// is three (open, chunk, durable), and a message's, one per run and event, is bounded by what
/// the message holds (it is owed once, not grown by the producer), so it is counted as a
/// single text's is.
pub(super) const REPLAY_ALLOWANCE: usize = 3;

/// Every this many frames the log releases what every subscriber has read. Without it the log
/// kept every frame until it reached the queue bound (4,096 by default): a stream whose readers
/// all keep up held thousands of frames, and their encodings, for nothing.
pub(super) const TRIM_EVERY: u64 = 64;

/// A log frame and, once someone needed them, its SSE bytes; its UI events when the stream had
/// UI readers as it entered (`ui_log.rs`: encoded by the stream, which holds the message).
pub(super) struct Entry {
    pub frame: Arc<MessageFrame>,
    pub sse: Option<Bytes>,
    pub ui: Option<Bytes>,
}

/// The frames published since the slowest live cursor, and how many cursors read them.
#[derive(Default)]
pub(super) struct Log {
    entries: VecDeque<Entry>,
    /// Absolute index of `entries[0]`.
    base: u64,
    /// Cursors still reading the log.
    active: usize,
}

/// A subscriber's place: what it owes before the log, and where it is in the log.
pub(super) struct Cursor {
    /// Absolute index of the next log frame to deliver.
    pub next: u64,
    /// The join replay, delivered before the log (its text cut into pieces as it is taken).
    pub replay: Replay,
    /// A terminal of this subscriber's own (the overflow `stale`).
    pub terminal: Option<Arc<MessageFrame>>,
    /// Reads no more log frames (saw a terminal, or overflowed).
    pub finished: bool,
}

impl Log {
    /// Absolute index of the next frame to enter.
    pub fn head(&self) -> u64 {
        self.base + self.entries.len() as u64
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Cursors still reading the log.
    pub fn active(&self) -> usize {
        self.active
    }

    /// A new cursor after `replay`, reading every frame that enters from now on.
    pub fn attach(&mut self, replay: Replay) -> Cursor {
        self.active += 1;
        Cursor { next: self.head(), replay, terminal: None, finished: false }
    }

    /// A cursor leaving.
    pub fn detach(&mut self, cursor: &Cursor) {
        if !cursor.finished {
            self.active -= 1;
        }
    }

    /// Append `entry`; `true` when the log is due a trim ([`TRIM_EVERY`]).
    pub fn push(&mut self, entry: Entry) -> bool {
        self.entries.push_back(entry);
        self.head().is_multiple_of(TRIM_EVERY)
    }

    /// Release every frame below absolute index `cursor`.
    pub fn release_below(&mut self, cursor: u64) {
        let n = (cursor - self.base) as usize;
        self.entries.drain(..n);
        self.base = cursor;
    }

    /// Release every frame.
    pub fn clear(&mut self) {
        self.base = self.head();
        self.entries.clear();
    }

    /// The next log frame for `cursor`, which moves past it (and finishes, no longer counted as
    /// active, at a terminal); `None` when the cursor is finished or at the head.
    pub fn advance(&mut self, cursor: &mut Cursor) -> Option<&mut Entry> {
        if cursor.finished || cursor.next >= self.head() {
            return None;
        }
        let entry = &mut self.entries[(cursor.next - self.base) as usize];
        cursor.next += 1;
        if entry.frame.is_terminal() {
            cursor.finished = true;
            self.active -= 1;
        }
        Some(entry)
    }

    /// End `cursor` with its own terminal `stale` in place of everything it still owed.
    pub fn end_with(&mut self, cursor: &mut Cursor, stale: Arc<MessageFrame>) {
        cursor.replay = Replay::default();
        cursor.terminal = Some(stale);
        cursor.finished = true;
        self.active -= 1;
    }

    /// Hand up to `max` of `cursor`'s frames (replay, own terminal, log, in that order) to
    /// `out`, at most one piece of the replay's text per call (of at most
    /// [`FRAME_PIECE_BYTES`]), so a caller that keeps what it took holds one piece, not the
    /// text. Returns whether it stopped short of what is owed: at `max`, or before another
    /// piece of text.
    pub fn take_frames(&mut self, cursor: &mut Cursor, max: usize, out: &mut dyn FnMut(Arc<MessageFrame>)) -> bool {
        let mut taken = 0;
        let mut pieces = 0;
        while taken < max {
            if cursor.replay.text_next() && pieces > 0 {
                break;
            }
            pieces += usize::from(cursor.replay.text_next());
            if let Some(f) = cursor.replay.pop(FRAME_PIECE_BYTES) {
                out(f);
            } else if let Some(t) = cursor.terminal.take() {
                out(t);
            } else if let Some(entry) = self.advance(cursor) {
                out(entry.frame.clone());
            } else {
                break;
            }
            taken += 1;
        }
        taken == max || cursor.replay.text_next()
    }

    #[cfg(test)]
    pub fn entries(&self) -> &VecDeque<Entry> {
        &self.entries
    }
}

impl Cursor {
    /// Frames it owes (replay, its own terminal, log frames behind `head`).
    pub fn owed(&self, head: u64) -> u64 {
        let log = if self.finished { 0 } else { head - self.next };
        self.replay.len() as u64 + u64::from(self.terminal.is_some()) + log
    }

    /// Whether it owes anything (`head` as for [`Cursor::owed`]).
    pub fn has_more(&self, head: u64) -> bool {
        !self.replay.is_empty() || self.terminal.is_some() || (!self.finished && self.next < head)
    }

    /// Whether it will never yield another frame.
    pub fn is_done(&self) -> bool {
        self.finished && self.replay.is_empty() && self.terminal.is_none()
    }

    /// Its queue as the bound counts it: its replay as at most [`REPLAY_ALLOWANCE`] entries,
    /// plus the log frames behind `head`.
    pub fn queued(&self, head: u64) -> u64 {
        self.replay.len().min(REPLAY_ALLOWANCE) as u64 + (head - self.next)
    }
}
