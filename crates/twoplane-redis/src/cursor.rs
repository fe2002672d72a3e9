//! The adapter's own bookkeeping of what a reader was given, so a source yields only what the
//! plane's conform pass would accept unchanged.
//!
//! The conform pass is the plane's last line of defence; an adapter that leaned on it would hide
//! its own bugs behind `stale`. So each source tracks the end of the text it delivered (`pos`,
//! starting at the reader's `from`) and decides per incoming frame:
//!
//! - a chunk ending at or before `pos` is a replay (a duplicated message, a retried write, a
//!   replayed log entry) and is skipped; a chunk that covers `pos` is delivered whole (the reader
//!   splices at the chunk's own `from`); a chunk that starts past `pos` means text is missing:
//!   before anything was delivered that is a join the transport cannot serve (`stale`), after it
//!   is a loss in the middle of the stream (an error);
//! - a `durable` is delivered when it lies within the delivered text and does not go back;
//!   otherwise it carries nothing this reader can use and is skipped;
//! - an `end` within the delivered text is delivered and finishes the source; one past it means
//!   text is missing, exactly like a chunk;
//! - a frame of another generation means the stream id was produced again: `stale`;
//! - a `stale` is what a producer that the store fenced off (its row was swept under it,
//!   docs/contract.md §7) sends its readers last: it finishes the source with `stale` at the
//!   delivered position, so the reader goes to the store;
//! - anything else (`open`, `absent`) never comes from a producer: an error.
//!
//! The verdicts are the core's conform pass itself ([`twoplane_core::conform::Conform`], docs/contract.md
//! §3), run here before the plane runs it again; this module only decides what each verdict
//! means for a transport (skip, `stale` at a join it cannot serve, or a loss to report).

use twoplane_core::conform::{Conform, ConformInput, Verdict, Violation};
use twoplane_core::Frame;

use crate::envelope::Envelope;

/// What to do with one incoming frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Deliver(Frame),
    Skip,
    /// Deliver this terminal frame and stop.
    Finish(Frame),
    /// Text is missing or the transport misbehaved: report this and stop (the plane turns the
    /// error into `stale` at the delivered position).
    Lost(String),
}

#[derive(Debug)]
pub(crate) struct Cursor {
    /// The conform pass over what this reader was given: its `pos` is the end of the delivered
    /// text, its last durable the last `durable` delivered.
    conform: Conform,
    /// The highest durable length seen on the transport, delivered or not (informative only).
    seen_durable: u64,
    gen: Option<String>,
    seen_any: bool,
}

/// Offsets of decoded frames are at most 2^53 - 1, so they pass through `f64` exactly.
fn num(x: u64) -> f64 {
    x as f64
}

impl Cursor {
    pub fn new(from: u64) -> Cursor {
        Cursor { conform: Conform::new(num(from)), seen_durable: 0, gen: None, seen_any: false }
    }

    /// Whether any frame arrived at all (if none did, the stream is unknown to the transport).
    pub fn seen_any(&self) -> bool {
        self.seen_any
    }

    /// End of the delivered text.
    fn pos(&self) -> u64 {
        self.conform.pos() as u64
    }

    fn last_durable(&self) -> u64 {
        self.conform.last_durable() as u64
    }

    /// Whether text was delivered: only a delivered chunk moves the position past `from`.
    fn started(&self) -> bool {
        self.conform.pos() > self.conform.requested()
    }

    pub fn accept(&mut self, envelope: Envelope) -> Step {
        self.seen_any = true;
        match &self.gen {
            None => self.gen = Some(envelope.gen),
            Some(g) if *g != envelope.gen => return Step::Finish(self.stale_here()),
            Some(_) => {}
        }
        let frame = envelope.frame;
        let input = match &frame {
            Frame::Chunk { from, seq, text } => {
                ConformInput::Chunk { from: num(*from), seq: num(*seq), text_len: Some(text.len() as f64) }
            }
            Frame::Durable { seq } => {
                self.seen_durable = self.seen_durable.max(*seq);
                ConformInput::Durable { seq: num(*seq) }
            }
            Frame::End { seq, .. } => {
                self.seen_durable = self.seen_durable.max(*seq);
                ConformInput::End { seq: num(*seq) }
            }
            // A fenced producer's last word: go to the store. Restated at this reader's position
            // (the producer's own numbers describe its buffer, not what this reader was given).
            Frame::Stale { .. } => return Step::Finish(self.stale_here()),
            // The pass would accept these from a relay, but a producer never publishes them.
            other => return Step::Lost(format!("a producer never relays a {} frame", other.kind().as_str())),
        };
        let started = self.started();
        match self.conform.feed(input) {
            Verdict::Drop => Step::Skip,
            Verdict::Pass | Verdict::OpenThenPass if frame.is_terminal() => Step::Finish(frame),
            Verdict::Pass | Verdict::OpenThenPass => Step::Deliver(frame),
            // Text is missing. Before anything was delivered, the transport simply starts past
            // the reader (its live position, or the log's retained floor): a join it cannot serve.
            Verdict::Violation(Violation::ChunkGap { from, pos }) => {
                if started {
                    Step::Lost(format!("relay lost text: a chunk at {from} follows the {pos} code units delivered"))
                } else {
                    Step::Finish(Frame::Stale { floor_seq: from as u64, durable_seq: self.durable_hint() })
                }
            }
            Verdict::Violation(Violation::EndOutruns { seq, pos }) => {
                if started {
                    Step::Lost(format!("relay lost text: the stream ended at {seq} after {pos} code units delivered"))
                } else {
                    Step::Finish(Frame::Stale { floor_seq: seq as u64, durable_seq: seq as u64 })
                }
            }
            Verdict::Violation(v) => Step::Lost(format!("the relay broke the conform rules ({v:?})")),
            Verdict::Terminate => Step::Finish(self.stale_here()),
        }
    }

    /// The frame that ends a source that waited in vain: `absent` when nothing ever arrived (the
    /// transport does not know the stream), else `stale` at the delivered position.
    pub fn timeout_frame(&self) -> Frame {
        if self.seen_any {
            self.stale_here()
        } else {
            Frame::Absent
        }
    }

    fn stale_here(&self) -> Frame {
        Frame::Stale { floor_seq: self.pos(), durable_seq: self.last_durable() }
    }

    fn durable_hint(&self) -> u64 {
        self.seen_durable.max(self.last_durable())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use twoplane_core::conform::RelayConform;
    use twoplane_core::{StreamStatus, Text};

    fn env(gen: &str, frame: Frame) -> Envelope {
        Envelope { gen: gen.into(), frame }
    }

    fn chunk(from: u64, s: &str) -> Frame {
        Frame::chunk(from, Text::from(s)).unwrap()
    }

    fn end(seq: u64) -> Frame {
        Frame::End { seq, status: StreamStatus::Complete, error: None }
    }

    #[test]
    fn replays_are_skipped_and_overlaps_pass_whole() {
        let mut c = Cursor::new(2);
        assert_eq!(c.accept(env("g", chunk(0, "ab"))), Step::Skip, "ends at the reader's offset");
        assert_eq!(c.accept(env("g", chunk(0, "abcd"))), Step::Deliver(chunk(0, "abcd")), "covers it: whole");
        assert_eq!(c.accept(env("g", chunk(0, "abcd"))), Step::Skip, "an exact duplicate");
        assert_eq!(c.accept(env("g", chunk(2, "cd"))), Step::Skip);
        assert_eq!(c.accept(env("g", Frame::Durable { seq: 3 })), Step::Deliver(Frame::Durable { seq: 3 }));
        assert_eq!(c.accept(env("g", Frame::Durable { seq: 2 })), Step::Skip, "never backwards");
        assert_eq!(c.accept(env("g", Frame::Durable { seq: 9 })), Step::Skip, "past the delivered text");
        assert_eq!(c.accept(env("g", chunk(4, "ef"))), Step::Deliver(chunk(4, "ef")));
        assert_eq!(c.accept(env("g", end(6))), Step::Finish(end(6)));
    }

    #[test]
    fn a_join_the_transport_cannot_serve_is_stale() {
        let mut c = Cursor::new(3);
        assert_eq!(c.accept(env("g", Frame::Durable { seq: 8 })), Step::Skip);
        assert_eq!(c.accept(env("g", chunk(10, "x"))), Step::Finish(Frame::Stale { floor_seq: 10, durable_seq: 8 }));
        let mut c = Cursor::new(3);
        assert_eq!(c.accept(env("g", end(5))), Step::Finish(Frame::Stale { floor_seq: 5, durable_seq: 5 }));
        let mut c = Cursor::new(5);
        assert_eq!(c.accept(env("g", end(5))), Step::Finish(end(5)), "the reader already has everything");
    }

    #[test]
    fn a_loss_mid_stream_is_an_error() {
        let mut c = Cursor::new(0);
        assert!(matches!(c.accept(env("g", chunk(0, "ab"))), Step::Deliver(_)));
        assert!(matches!(c.accept(env("g", chunk(3, "d"))), Step::Lost(m) if m.contains("chunk at 3")));
        let mut c = Cursor::new(0);
        assert!(matches!(c.accept(env("g", chunk(0, "ab"))), Step::Deliver(_)));
        assert!(matches!(c.accept(env("g", end(4))), Step::Lost(m) if m.contains("ended at 4")));
        let mut c = Cursor::new(0);
        assert!(matches!(c.accept(env("g", Frame::Absent)), Step::Lost(_)));
    }

    #[test]
    fn another_generation_is_stale_at_the_delivered_position() {
        let mut c = Cursor::new(0);
        assert!(matches!(c.accept(env("g1", chunk(0, "old text"))), Step::Deliver(_)));
        assert_eq!(c.accept(env("g2", chunk(0, "new"))), Step::Finish(Frame::Stale { floor_seq: 8, durable_seq: 0 }));
    }

    #[test]
    fn a_fenced_producers_stale_finishes_at_the_delivered_position() {
        let mut c = Cursor::new(0);
        assert!(matches!(c.accept(env("g", chunk(0, "abcdef"))), Step::Deliver(_)));
        assert_eq!(c.accept(env("g", Frame::Durable { seq: 4 })), Step::Deliver(Frame::Durable { seq: 4 }));
        let producer_stale = Frame::Stale { floor_seq: 0, durable_seq: 4 };
        assert_eq!(c.accept(env("g", producer_stale)), Step::Finish(Frame::Stale { floor_seq: 6, durable_seq: 4 }));
    }

    #[test]
    fn timeouts_are_absent_before_anything_and_stale_after() {
        let mut c = Cursor::new(4);
        assert_eq!(c.timeout_frame(), Frame::Absent);
        c.accept(env("g", Frame::Durable { seq: 1 }));
        assert_eq!(c.timeout_frame(), Frame::Stale { floor_seq: 4, durable_seq: 1 });
    }

    /// Whatever arrives, and in whatever order, the conform pass accepts every delivered frame
    /// unchanged: the cursor never relies on it.
    #[test]
    fn everything_delivered_passes_the_conform_pass_unchanged() {
        let text = "abcdefghij";
        let frames: Vec<Frame> = vec![
            chunk(0, "abc"),
            Frame::Durable { seq: 3 },
            chunk(3, "de"),
            chunk(3, "de"),
            chunk(5, "fgh"),
            Frame::Durable { seq: 8 },
            chunk(0, "abc"),
            chunk(8, "ij"),
            Frame::Durable { seq: 10 },
            end(10),
        ];
        // Every join offset and every drop/duplicate pattern from a small family.
        for from in 0..=text.len() as u64 + 1 {
            for drop in 0..frames.len() + 1 {
                for dup in 0..frames.len() + 1 {
                    let mut input: Vec<Frame> = Vec::new();
                    for (i, f) in frames.iter().enumerate() {
                        if i == drop {
                            continue;
                        }
                        input.push(f.clone());
                        if i == dup {
                            input.push(f.clone());
                        }
                    }
                    let mut cursor = Cursor::new(from);
                    let mut conform = RelayConform::new(Text::from("s"), from);
                    for f in input {
                        let (deliver, stop) = match cursor.accept(env("g", f)) {
                            Step::Deliver(f) => (Some(f), false),
                            Step::Finish(f) => (Some(f), true),
                            Step::Skip => (None, false),
                            Step::Lost(_) => (None, true),
                        };
                        if let Some(f) = deliver {
                            let out = conform.feed(f.clone());
                            assert!(out.violation.is_none(), "from {from} drop {drop} dup {dup}: {:?}", out.violation);
                            assert!(out.frames.contains(&f), "passed unchanged");
                        }
                        if stop {
                            break;
                        }
                    }
                }
            }
        }
    }
}
