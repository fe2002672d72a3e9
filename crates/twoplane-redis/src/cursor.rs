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
//! The verdicts are the core's conform pass itself, for messages ([`MessageConform`],
//! docs/contract.md §3 and §8), run here before the plane runs it again; this module only
//! decides what each verdict means for a transport (skip, `stale` at a join it cannot serve, or
//! a loss to report).
//!
//! Messages with parts (docs/contract.md §8): a reader that joins at `from` must be told which
//! parts the message had there, and a producer relays no `open`. So the frames that end at or
//! before `from` (the log's history; skipped as replays) are folded into the numbers of the
//! message, and the first frame delivered is preceded by an `open` carrying the part table at
//! `from` when the message had structure by then. The history is taken to start with nothing
//! structural before its first frame (true from the stream's start; after a trimmed log's oldest
//! entry, or on pub/sub, which keeps no history, it may be false: then the first frame that
//! names a part breaks the part rules and the reader ends in `stale`, and the store serves it).

use twoplane_core::conform::Violation;
use twoplane_core::message::{FrameNumbers, MessageConform, MessageFrame, MessageVerdict, MessageViolation, Tally};
use twoplane_core::Text;

use crate::envelope::Envelope;

/// What to do with one incoming frame.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Deliver these frames, in order (a message's first delivery is preceded by its `open`).
    Deliver(Vec<MessageFrame>),
    Skip,
    /// Deliver these frames, the last a terminal, and stop.
    Finish(Vec<MessageFrame>),
    /// Text is missing or the transport misbehaved: report this and stop (the plane turns the
    /// error into `stale` at the delivered position).
    Lost(String),
}

#[derive(Debug)]
pub(crate) struct Cursor {
    stream_id: Text,
    from: u64,
    /// The message as the frames below `from` make it, from the first frame seen (see the
    /// module header); `None` until one arrives.
    history: Option<Tally>,
    /// The conform pass over what this reader was given (its `pos` is the end of what was
    /// delivered, its last durable the last `durable` delivered); set at the first frame that
    /// reaches past `from`, with the part table the history gave.
    conform: Option<MessageConform>,
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
    pub fn new(stream_id: &str, from: u64) -> Cursor {
        Cursor {
            stream_id: Text::from(stream_id),
            from,
            history: None,
            conform: None,
            seen_durable: 0,
            gen: None,
            seen_any: false,
        }
    }

    /// Whether any frame arrived at all (if none did, the stream is unknown to the transport).
    pub fn seen_any(&self) -> bool {
        self.seen_any
    }

    /// End of the delivered text.
    fn pos(&self) -> u64 {
        self.conform.as_ref().map_or(self.from, |c| c.pos() as u64)
    }

    fn last_durable(&self) -> u64 {
        self.conform.as_ref().map_or(0, |c| c.last_durable() as u64)
    }

    /// Whether text was delivered: only a delivered chunk or event moves the position past `from`.
    fn started(&self) -> bool {
        self.pos() > self.from
    }

    pub fn accept(&mut self, envelope: Envelope) -> Step {
        self.seen_any = true;
        match &self.gen {
            None => self.gen = Some(envelope.gen),
            Some(g) if *g != envelope.gen => return Step::Finish(vec![self.stale_here()]),
            Some(_) => {}
        }
        let frame = envelope.frame;
        match &frame {
            MessageFrame::Durable { seq } | MessageFrame::End { seq, .. } => {
                self.seen_durable = self.seen_durable.max(*seq);
            }
            // A fenced producer's last word: go to the store. Restated at this reader's position
            // (the producer's own numbers describe its buffer, not what this reader was given).
            MessageFrame::Stale { .. } => return Step::Finish(vec![self.stale_here()]),
            // The pass would accept these from a relay, but a producer never publishes them.
            MessageFrame::Open { .. } | MessageFrame::Absent => {
                return Step::Lost(format!("a producer never relays a {} frame", frame.kind().as_str()))
            }
            MessageFrame::Chunk { .. } | MessageFrame::Event { .. } => {}
        }
        let n = FrameNumbers::of(&frame, &self.stream_id);
        let mut out = Vec::new();
        let history_short = self.history.as_ref().is_some_and(|h| h.pos() < num(self.from));
        if self.conform.is_none() && history_short && matches!(frame, MessageFrame::Durable { .. }) {
            // The history has not reached the reader yet: a durable length says nothing it needs.
            return Step::Skip;
        }
        if self.conform.is_none() {
            match self.learn(&frame, n) {
                Learned::Below => return Step::Skip,
                Learned::Broken(why) => return Step::Lost(why),
                Learned::Reaches(open) => out.extend(open),
            }
        }
        let started = self.started();
        let Some(conform) = self.conform.as_mut() else { return Step::Skip };
        let verdict = conform.feed_numbers(n);
        match verdict {
            MessageVerdict::Drop => Step::Skip,
            MessageVerdict::Pass | MessageVerdict::OpenThenPass => {
                let terminal = frame.is_terminal();
                out.push(frame);
                if terminal {
                    Step::Finish(out)
                } else {
                    Step::Deliver(out)
                }
            }
            // Text is missing. Before anything was delivered, the transport simply starts past
            // the reader (its live position, or the log's retained floor): a join it cannot serve.
            MessageVerdict::Violation(MessageViolation::Stream(Violation::ChunkGap { from, pos })) => {
                if started {
                    Step::Lost(format!("relay lost text: a chunk at {from} follows the {pos} code units delivered"))
                } else {
                    Step::Finish(vec![MessageFrame::Stale { floor_seq: from as u64, durable_seq: self.durable_hint() }])
                }
            }
            MessageVerdict::Violation(MessageViolation::Stream(Violation::EndOutruns { seq, pos })) => {
                if started {
                    Step::Lost(format!("relay lost text: the stream ended at {seq} after {pos} code units delivered"))
                } else {
                    Step::Finish(vec![MessageFrame::Stale { floor_seq: seq as u64, durable_seq: seq as u64 }])
                }
            }
            MessageVerdict::Violation(MessageViolation::Part(p)) if p.code() == 9 && !started => {
                // A structural frame past the reader before anything was delivered: as a chunk's gap.
                Step::Finish(vec![MessageFrame::Stale { floor_seq: self.pos(), durable_seq: self.durable_hint() }])
            }
            MessageVerdict::Violation(MessageViolation::Part(p)) => {
                Step::Lost(format!("the relay broke the part rules ({})", p.reason().to_string_lossy()))
            }
            MessageVerdict::Violation(v) => Step::Lost(format!("the relay broke the conform rules ({v:?})")),
            MessageVerdict::Terminate => Step::Finish(vec![self.stale_here()]),
        }
    }

    /// Before anything was delivered: fold a frame below `from` into the history, or, at the
    /// first frame that reaches past `from` (or any `durable` or `end`), start the conform pass
    /// with the part table at `from`, returning the `open` to send first when it has one.
    fn learn(&mut self, frame: &MessageFrame, n: FrameNumbers) -> Learned {
        let from = self.from;
        let span = frame.span();
        let history = self.history.get_or_insert_with(|| Tally::new(span.map_or(num(from), |(f, _)| num(f))));
        if let Some((f, seq)) = span {
            if seq <= from {
                let kind = frame.kind();
                return match history.decide(kind, n.a, n.b, n.c, n.part, n.at) {
                    Ok(decision) => {
                        history.commit(decision, num(seq));
                        Learned::Below
                    }
                    // A hole in the history below the reader: what it knew is not the whole
                    // message, so start again from here, as if this were the first frame.
                    Err(_) if num(f) > history.pos() => {
                        *history = Tally::new(num(f));
                        match history.decide(kind, n.a, n.b, n.c, n.part, n.at) {
                            Ok(decision) => history.commit(decision, num(seq)),
                            Err(_) => {
                                return Learned::Broken(format!("the relay's history breaks the part rules at {f}"))
                            }
                        }
                        Learned::Below
                    }
                    Err(_) => Learned::Broken(format!("the relay's history breaks the part rules at {f}")),
                };
            }
        }
        // The part table at `from`: the history's, with the part of a chunk across `from`
        // holding its units below it. A history that does not reach `from` says nothing.
        let mut table: Option<Vec<f64>> = None;
        if history.pos() <= num(from) {
            let mut lens: Vec<f64> = (0..history.part_count()).filter_map(|p| history.body_len(p)).collect();
            let mut reach = history.pos();
            if let (MessageFrame::Chunk { from: cf, part, .. }, true) = (frame, history.pos() < num(from)) {
                if num(*cf) == history.pos() {
                    if let Some(len) = lens.get_mut(*part as usize) {
                        *len += num(from) - history.pos();
                        reach = num(from);
                    }
                }
            }
            let structured = lens.len() > 1 || lens.first().is_some_and(|&l| l != reach);
            if reach == num(from) && structured {
                table = Some(lens);
            }
        }
        let mut conform = MessageConform::new(num(from));
        let open = table.map(|lens| {
            let durable = 0;
            let verdict = conform.feed_open(true, num(from), num(from), num(durable), Some(&lens));
            debug_assert_eq!(verdict, MessageVerdict::Pass);
            MessageFrame::Open {
                stream_id: self.stream_id.clone(),
                from,
                seq: from,
                durable_seq: durable,
                ended: false,
                parts: Some(lens.iter().map(|&l| l as u64).collect()),
            }
        });
        self.conform = Some(conform);
        Learned::Reaches(open)
    }

    /// The frame that ends a source that waited in vain: `absent` when nothing ever arrived (the
    /// transport does not know the stream), else `stale` at the delivered position.
    pub fn timeout_frame(&self) -> MessageFrame {
        if self.seen_any {
            self.stale_here()
        } else {
            MessageFrame::Absent
        }
    }

    fn stale_here(&self) -> MessageFrame {
        metrics::counter!("twoplane_stale_endings_total", "cause" => "relay").increment(1);
        MessageFrame::Stale { floor_seq: self.pos(), durable_seq: self.last_durable() }
    }

    fn durable_hint(&self) -> u64 {
        self.seen_durable.max(self.last_durable())
    }
}

/// What [`Cursor::learn`] made of a frame before anything was delivered.
enum Learned {
    /// It ends at or below the reader's offset: history, folded in.
    Below,
    /// It reaches past the reader: the conform pass is set, with this `open` to send first.
    Reaches(Option<MessageFrame>),
    Broken(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use twoplane_core::message::{Event, MessageRelayConform};
    use twoplane_core::StreamStatus;

    fn env(gen: &str, frame: MessageFrame) -> Envelope {
        Envelope { gen: gen.into(), frame }
    }

    fn chunk(from: u64, s: &str) -> MessageFrame {
        MessageFrame::chunk(from, 0, from, Text::from(s)).unwrap()
    }

    fn end(seq: u64) -> MessageFrame {
        MessageFrame::End { seq, status: StreamStatus::Complete, error: None }
    }

    #[test]
    fn replays_are_skipped_and_overlaps_pass_whole() {
        let mut c = Cursor::new("s", 2);
        assert_eq!(c.accept(env("g", chunk(0, "ab"))), Step::Skip, "ends at the reader's offset");
        assert_eq!(c.accept(env("g", chunk(0, "abcd"))), Step::Deliver(vec![chunk(0, "abcd")]), "covers it: whole");
        assert_eq!(c.accept(env("g", chunk(0, "abcd"))), Step::Skip, "an exact duplicate");
        assert_eq!(c.accept(env("g", chunk(2, "cd"))), Step::Skip);
        assert_eq!(
            c.accept(env("g", MessageFrame::Durable { seq: 3 })),
            Step::Deliver(vec![MessageFrame::Durable { seq: 3 }])
        );
        assert_eq!(c.accept(env("g", MessageFrame::Durable { seq: 2 })), Step::Skip, "never backwards");
        assert_eq!(c.accept(env("g", MessageFrame::Durable { seq: 9 })), Step::Skip, "past the delivered text");
        assert_eq!(c.accept(env("g", chunk(4, "ef"))), Step::Deliver(vec![chunk(4, "ef")]));
        assert_eq!(c.accept(env("g", end(6))), Step::Finish(vec![end(6)]));
    }

    #[test]
    fn a_join_the_transport_cannot_serve_is_stale() {
        let mut c = Cursor::new("s", 3);
        assert_eq!(c.accept(env("g", MessageFrame::Durable { seq: 8 })), Step::Skip);
        assert_eq!(
            c.accept(env("g", chunk(10, "x"))),
            Step::Finish(vec![MessageFrame::Stale { floor_seq: 10, durable_seq: 8 }])
        );
        let mut c = Cursor::new("s", 3);
        assert_eq!(
            c.accept(env("g", end(5))),
            Step::Finish(vec![MessageFrame::Stale { floor_seq: 5, durable_seq: 5 }])
        );
        let mut c = Cursor::new("s", 5);
        assert_eq!(c.accept(env("g", end(5))), Step::Finish(vec![end(5)]), "the reader already has everything");
    }

    #[test]
    fn a_loss_mid_stream_is_an_error() {
        let mut c = Cursor::new("s", 0);
        assert!(matches!(c.accept(env("g", chunk(0, "ab"))), Step::Deliver(_)));
        assert!(matches!(c.accept(env("g", chunk(3, "d"))), Step::Lost(m) if m.contains("chunk at 3")));
        let mut c = Cursor::new("s", 0);
        assert!(matches!(c.accept(env("g", chunk(0, "ab"))), Step::Deliver(_)));
        assert!(matches!(c.accept(env("g", end(4))), Step::Lost(m) if m.contains("ended at 4")));
        let mut c = Cursor::new("s", 0);
        assert!(matches!(c.accept(env("g", MessageFrame::Absent)), Step::Lost(_)));
    }

    #[test]
    fn another_generation_is_stale_at_the_delivered_position() {
        let mut c = Cursor::new("s", 0);
        assert!(matches!(c.accept(env("g1", chunk(0, "old text"))), Step::Deliver(_)));
        assert_eq!(
            c.accept(env("g2", chunk(0, "new"))),
            Step::Finish(vec![MessageFrame::Stale { floor_seq: 8, durable_seq: 0 }])
        );
    }

    #[test]
    fn a_fenced_producers_stale_finishes_at_the_delivered_position() {
        let mut c = Cursor::new("s", 0);
        assert!(matches!(c.accept(env("g", chunk(0, "abcdef"))), Step::Deliver(_)));
        assert_eq!(
            c.accept(env("g", MessageFrame::Durable { seq: 4 })),
            Step::Deliver(vec![MessageFrame::Durable { seq: 4 }])
        );
        let producer_stale = MessageFrame::Stale { floor_seq: 0, durable_seq: 4 };
        assert_eq!(
            c.accept(env("g", producer_stale)),
            Step::Finish(vec![MessageFrame::Stale { floor_seq: 6, durable_seq: 4 }])
        );
    }

    #[test]
    fn timeouts_are_absent_before_anything_and_stale_after() {
        let mut c = Cursor::new("s", 4);
        assert_eq!(c.timeout_frame(), MessageFrame::Absent);
        c.accept(env("g", MessageFrame::Durable { seq: 1 }));
        assert_eq!(c.timeout_frame(), MessageFrame::Stale { floor_seq: 4, durable_seq: 1 });
    }

    /// Whatever arrives, and in whatever order, the conform pass accepts every delivered frame
    /// unchanged: the cursor never relies on it.
    #[test]
    fn everything_delivered_passes_the_conform_pass_unchanged() {
        let text = "abcdefghij";
        let frames: Vec<MessageFrame> = vec![
            chunk(0, "abc"),
            MessageFrame::Durable { seq: 3 },
            chunk(3, "de"),
            chunk(3, "de"),
            chunk(5, "fgh"),
            MessageFrame::Durable { seq: 8 },
            chunk(0, "abc"),
            chunk(8, "ij"),
            MessageFrame::Durable { seq: 10 },
            end(10),
        ];
        // Every join offset and every drop/duplicate pattern from a small family.
        for from in 0..=text.len() as u64 + 1 {
            for drop in 0..frames.len() + 1 {
                for dup in 0..frames.len() + 1 {
                    let mut input: Vec<MessageFrame> = Vec::new();
                    for (i, f) in frames.iter().enumerate() {
                        if i == drop {
                            continue;
                        }
                        input.push(f.clone());
                        if i == dup {
                            input.push(f.clone());
                        }
                    }
                    let mut cursor = Cursor::new("s", from);
                    let mut conform = MessageRelayConform::new(Text::from("s"), from);
                    for f in input {
                        let (deliver, stop) = match cursor.accept(env("g", f)) {
                            Step::Deliver(fs) => (fs, false),
                            Step::Finish(fs) => (fs, true),
                            Step::Skip => (vec![], false),
                            Step::Lost(_) => (vec![], true),
                        };
                        for f in deliver {
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

    fn ev(from: u64, event: Event) -> MessageFrame {
        MessageFrame::Event { from, event }
    }

    /// A message: reasoning "abc" (part 1) between its start and end, then part 0 text "xy".
    fn message() -> Vec<MessageFrame> {
        vec![
            ev(0, Event::Start { part: 1, kind: "reasoning".into(), value: vec![] }),
            MessageFrame::chunk(1, 1, 0, "abc".into()).unwrap(),
            ev(4, Event::End { part: 1, value: vec![] }),
            MessageFrame::chunk(5, 0, 0, "xy".into()).unwrap(),
            end(7),
        ]
    }

    #[test]
    fn a_join_inside_a_message_is_told_the_parts_before_it() {
        let open = |from, parts: Vec<u64>| MessageFrame::Open {
            stream_id: "s".into(),
            from,
            seq: from,
            durable_seq: 0,
            ended: false,
            parts: Some(parts),
        };
        for (from, want_open, first) in
            [(0, None, 0), (3, Some(open(3, vec![0, 2])), 1), (5, Some(open(5, vec![0, 3])), 3)]
        {
            let mut c = Cursor::new("s", from);
            let frames = message();
            let mut delivered = Vec::new();
            for f in frames.clone() {
                match c.accept(env("g", f)) {
                    Step::Deliver(fs) | Step::Finish(fs) => delivered.extend(fs),
                    Step::Skip => {}
                    Step::Lost(why) => panic!("from {from}: {why}"),
                }
            }
            let mut want: Vec<MessageFrame> = want_open.into_iter().collect();
            want.extend(frames[first..].iter().cloned());
            assert_eq!(delivered, want, "from {from}");
            // The plane's own pass takes every one of them unchanged.
            let mut conform = MessageRelayConform::new("s".into(), from);
            for f in delivered {
                let out = conform.feed(f.clone());
                assert!(out.violation.is_none() && out.frames.contains(&f), "from {from}: {out:?}");
            }
        }
    }

    #[test]
    fn a_history_that_breaks_the_part_rules_is_a_loss() {
        let mut c = Cursor::new("s", 9);
        assert_eq!(
            c.accept(env("g", ev(0, Event::Start { part: 1, kind: "reasoning".into(), value: vec![] }))),
            Step::Skip
        );
        // Part 3 has not started: the relay's history cannot be the message's.
        let bad = MessageFrame::chunk(1, 3, 0, "x".into()).unwrap();
        assert!(matches!(c.accept(env("g", bad)), Step::Lost(m) if m.contains("history")));
        // After the join, a frame naming an unknown part ends the source.
        let mut c = Cursor::new("s", 0);
        assert!(matches!(c.accept(env("g", chunk(0, "ab"))), Step::Deliver(_)));
        let bad = MessageFrame::chunk(2, 1, 0, "x".into()).unwrap();
        assert!(matches!(c.accept(env("g", bad)), Step::Lost(m) if m.contains("part rules")));
    }
}
