//! The relay conform pass (docs/contract.md §3): untrusted frames from a relay are checked against the
//! prefix actually delivered, and every violation becomes one legal `stale`.
//!
//! The decision needs only numbers, so the primary API, [`Conform`], takes a [`ConformInput`] of
//! numbers and returns a [`Verdict`]; bindings call it per frame and keep the frame objects in
//! JavaScript. Numbers are `f64` and follow JavaScript exactly: a value that is not a number is
//! passed as NaN, which fails every integer check just as `Number.isInteger` fails it. The
//! frame-taking convenience for Rust callers is [`RelayConform`].
//!
//! After a terminal verdict (an accepted `end`, `stale` or `absent`, a violation, `end()` or
//! `fail()`), every call answers [`Verdict::Drop`].

use crate::frame::{Frame, FrameKind};
use crate::jsnum::{self, is_integer};
use crate::json::write_json_string;
use crate::text::Text;

/// One incoming frame, reduced to what the rules read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConformInput {
    Open {
        stream_id_matches: bool,
        from: f64,
        seq: f64,
        durable_seq: f64,
    },
    /// `text_len` is `None` when `text` is not a string.
    Chunk {
        from: f64,
        seq: f64,
        text_len: Option<f64>,
    },
    Durable {
        seq: f64,
    },
    End {
        seq: f64,
    },
    Stale,
    Absent,
    /// A `type` that is none of the six (or a value that is not a frame at all).
    Unknown,
}

impl ConformInput {
    /// The numeric kind code a binding passes: the [`FrameKind`] code, or 6 for unknown.
    pub fn from_code(code: u32, stream_id_matches: bool, a: f64, b: f64, c: f64) -> ConformInput {
        match FrameKind::from_code(code) {
            Some(FrameKind::Open) => ConformInput::Open { stream_id_matches, from: a, seq: b, durable_seq: c },
            Some(FrameKind::Chunk) => {
                ConformInput::Chunk { from: a, seq: b, text_len: if c.is_nan() { None } else { Some(c) } }
            }
            Some(FrameKind::Durable) => ConformInput::Durable { seq: a },
            Some(FrameKind::End) => ConformInput::End { seq: a },
            Some(FrameKind::Stale) => ConformInput::Stale,
            Some(FrameKind::Absent) => ConformInput::Absent,
            None => ConformInput::Unknown,
        }
    }
}

/// What to emit for one input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// Emit nothing.
    Drop,
    /// Emit the very frame that came in.
    Pass,
    /// Emit a synthesized `open` at the requested offset, then the frame.
    OpenThenPass,
    /// Report the violation (synchronously), then emit `stale{floorSeq: pos, durableSeq:
    /// lastDurable}` and stop.
    Violation(Violation),
    /// Emit `stale{floorSeq: pos, durableSeq: lastDurable}` and stop, with no report.
    Terminate,
}

impl Verdict {
    /// Stable numeric codes for bindings: 0 drop, 1 pass, 2 open then pass, 3 violation,
    /// 4 terminate.
    pub fn code(self) -> u32 {
        match self {
            Verdict::Drop => 0,
            Verdict::Pass => 1,
            Verdict::OpenThenPass => 2,
            Verdict::Violation(_) => 3,
            Verdict::Terminate => 4,
        }
    }
}

/// Which rule a relay broke. Its [`reason`](Violation::reason) is the exact text given in
/// docs/contract.md §3.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Violation {
    OpenMalformed,
    OpenCannotServe { from: f64, requested: f64 },
    ChunkSpan,
    ChunkGap { from: f64, pos: f64 },
    EndMalformed,
    EndOutruns { seq: f64, pos: f64 },
    UnknownType,
    SourceEnded,
}

/// How the offending frame's own values print, as JavaScript prints them. Only the violations
/// that quote a raw value read these: a binding computes them only when a violation happens.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawPieces<'a> {
    /// `JSON.stringify(frame.streamId)` (`undefined` when absent).
    pub stream_id_json: &'a [u16],
    /// `String(frame.from)`.
    pub from: &'a [u16],
    /// `String(frame.seq)`.
    pub seq: &'a [u16],
    /// `JSON.stringify(frame.type)` (`undefined` when absent).
    pub type_json: &'a [u16],
}

impl Violation {
    /// Stable numeric codes for bindings.
    pub fn code(self) -> u32 {
        match self {
            Violation::OpenMalformed => 0,
            Violation::OpenCannotServe { .. } => 1,
            Violation::ChunkSpan => 2,
            Violation::ChunkGap { .. } => 3,
            Violation::EndMalformed => 4,
            Violation::EndOutruns { .. } => 5,
            Violation::UnknownType => 6,
            Violation::SourceEnded => 7,
        }
    }

    /// The reason passed to `onViolation`.
    pub fn reason(&self, raw: &RawPieces<'_>) -> Text {
        let mut out = Text::new();
        let num = |out: &mut Text, x: f64| out.push_str(&jsnum::format(x));
        match *self {
            Violation::OpenMalformed => {
                out.push_str("relay open for ");
                out.push_units(raw.stream_id_json);
                out.push_str(" at ");
                out.push_units(raw.from);
                out.push_str(" is malformed");
            }
            Violation::OpenCannotServe { from, requested } => {
                out.push_str("relay open at ");
                num(&mut out, from);
                out.push_str(" cannot serve the requested ");
                num(&mut out, requested);
            }
            Violation::ChunkSpan => {
                out.push_str("relay chunk ");
                out.push_units(raw.from);
                out.push_str("\u{2192}");
                out.push_units(raw.seq);
                out.push_str(" does not span exactly its offsets");
            }
            Violation::ChunkGap { from, pos } => {
                out.push_str("relay chunk at ");
                num(&mut out, from);
                out.push_str(" leaves a gap after ");
                num(&mut out, pos);
            }
            Violation::EndMalformed => {
                out.push_str("relay end at ");
                out.push_units(raw.seq);
                out.push_str(" is malformed");
            }
            Violation::EndOutruns { seq, pos } => {
                out.push_str("relay end at ");
                num(&mut out, seq);
                out.push_str(" outruns the ");
                num(&mut out, pos);
                out.push_str(" characters delivered");
            }
            Violation::UnknownType => {
                out.push_str("relay frame of unknown type ");
                out.push_units(raw.type_json);
            }
            Violation::SourceEnded => out.push_str("relay source ended without a terminal frame"),
        }
        out
    }
}

/// The conform state machine over numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Conform {
    requested: f64,
    pos: f64,
    last_durable: f64,
    opened: bool,
    done: bool,
    last_violation: Option<Violation>,
}

impl Conform {
    /// A pass for a reader that asked to join at `from`. Any number is accepted, as the
    /// function it replaces accepts it; bindings validate their arguments before calling.
    pub fn new(from: f64) -> Self {
        Conform { requested: from, pos: from, last_durable: 0.0, opened: false, done: false, last_violation: None }
    }

    /// End of the delivered prefix: the `floorSeq` of a terminating `stale`.
    pub fn pos(&self) -> f64 {
        self.pos
    }

    /// The last `durable` passed: the `durableSeq` of a terminating `stale`.
    pub fn last_durable(&self) -> f64 {
        self.last_durable
    }

    /// The requested join offset: `from`, `seq` and `durableSeq` of a synthesized `open`.
    pub fn requested(&self) -> f64 {
        self.requested
    }

    pub fn is_opened(&self) -> bool {
        self.opened
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    pub fn feed(&mut self, input: ConformInput) -> Verdict {
        let nan = f64::NAN;
        match input {
            ConformInput::Open { stream_id_matches, from, seq, durable_seq } => {
                self.feed_numbers(FrameKind::Open as u32, stream_id_matches, from, seq, durable_seq)
            }
            ConformInput::Chunk { from, seq, text_len } => {
                self.feed_numbers(FrameKind::Chunk as u32, false, from, seq, text_len.unwrap_or(nan))
            }
            ConformInput::Durable { seq } => self.feed_numbers(FrameKind::Durable as u32, false, seq, nan, nan),
            ConformInput::End { seq } => self.feed_numbers(FrameKind::End as u32, false, seq, nan, nan),
            ConformInput::Stale => self.feed_numbers(FrameKind::Stale as u32, false, nan, nan, nan),
            ConformInput::Absent => self.feed_numbers(FrameKind::Absent as u32, false, nan, nan, nan),
            ConformInput::Unknown => self.feed_numbers(u32::MAX, false, nan, nan, nan),
        }
    }

    /// [`feed`](Conform::feed) in the numeric form bindings call per frame, returning
    /// [`Verdict::code`]; a violation is kept for [`last_violation`](Conform::last_violation).
    pub fn feed_code(&mut self, kind: u32, id_matches: bool, a: f64, b: f64, c: f64) -> u32 {
        self.feed_numbers(kind, id_matches, a, b, c).code()
    }

    /// The rules, once, over the numeric form of [`ConformInput::from_code`]: `kind` is a
    /// [`FrameKind`] code (anything else is an unknown type); open reads `id_matches` and
    /// a=from b=seq c=durableSeq; chunk reads a=from b=seq c=text length (NaN when the text is
    /// not a string); durable and end read a=seq.
    #[inline]
    pub fn feed_numbers(&mut self, kind: u32, id_matches: bool, a: f64, b: f64, c: f64) -> Verdict {
        if self.done {
            return Verdict::Drop;
        }
        const OPEN: u32 = FrameKind::Open as u32;
        const CHUNK: u32 = FrameKind::Chunk as u32;
        const DURABLE: u32 = FrameKind::Durable as u32;
        const END: u32 = FrameKind::End as u32;
        const STALE: u32 = FrameKind::Stale as u32;
        const ABSENT: u32 = FrameKind::Absent as u32;
        match kind {
            OPEN => {
                let (from, seq, durable_seq) = (a, b, c);
                if self.opened {
                    return Verdict::Drop;
                }
                let well_formed = id_matches
                    && is_integer(from)
                    && is_integer(seq)
                    && is_integer(durable_seq)
                    && from >= 0.0
                    && seq >= from;
                if !well_formed {
                    return self.violate(Violation::OpenMalformed);
                }
                if from > self.requested {
                    return self.violate(Violation::OpenCannotServe { from, requested: self.requested });
                }
                self.opened = true;
                self.pos = from;
                Verdict::Pass
            }
            CHUNK => {
                let (from, seq, text_len) = (a, b, c);
                // NaN (no string) never equals anything, so it fails the span check as it should.
                let spans = is_integer(from) && is_integer(seq) && from >= 0.0 && text_len == seq - from;
                if !spans {
                    return self.violate(Violation::ChunkSpan);
                }
                if from > self.pos {
                    return self.violate(Violation::ChunkGap { from, pos: self.pos });
                }
                if seq <= self.pos {
                    // Already delivered: a reconnecting relay's replay is absorbed, not punished.
                    return Verdict::Drop;
                }
                let verdict = self.pass();
                self.pos = seq;
                verdict
            }
            DURABLE => {
                let seq = a;
                // Carries no text, so a bad claim is dropped rather than ending the reader.
                if !is_integer(seq) || seq < self.last_durable || seq > self.pos {
                    return Verdict::Drop;
                }
                let verdict = self.pass();
                self.last_durable = seq;
                verdict
            }
            END => {
                let seq = a;
                if !is_integer(seq) || seq < 0.0 {
                    return self.violate(Violation::EndMalformed);
                }
                if seq > self.pos {
                    // A seal can only claim text that was produced, so this relay dropped some on
                    // the way; passing the `end` would tell the reader its text is complete.
                    return self.violate(Violation::EndOutruns { seq, pos: self.pos });
                }
                self.done = true;
                self.pass()
            }
            STALE | ABSENT => {
                self.done = true;
                Verdict::Pass
            }
            _ => self.violate(Violation::UnknownType),
        }
    }

    /// The violation that ended this pass, if one did.
    pub fn last_violation(&self) -> Option<Violation> {
        self.last_violation
    }

    /// The source finished without a terminal frame.
    pub fn end(&mut self) -> Verdict {
        if self.done {
            return Verdict::Drop;
        }
        self.violate(Violation::SourceEnded)
    }

    /// The source threw, or the reader is being dropped: terminate with no report.
    pub fn fail(&mut self) -> Verdict {
        if self.done {
            return Verdict::Drop;
        }
        self.done = true;
        Verdict::Terminate
    }

    fn pass(&mut self) -> Verdict {
        if self.opened {
            Verdict::Pass
        } else {
            self.opened = true;
            Verdict::OpenThenPass
        }
    }

    /// Stop with no report of the pass's own; the message pass ([`crate::message::conform`])
    /// reports its part violations itself.
    pub(crate) fn halt(&mut self) {
        self.done = true;
    }

    pub(crate) fn violate(&mut self, violation: Violation) -> Verdict {
        self.done = true;
        self.last_violation = Some(violation);
        Verdict::Violation(violation)
    }
}

/// The outcome of one call on [`RelayConform`]: the frames to deliver, and the violation reason
/// when the call turned the subscription into `stale` because of one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conformed {
    pub frames: Vec<Frame>,
    pub violation: Option<String>,
}

/// The conform pass over whole [`Frame`]s, for Rust callers (the native plane's relay leg).
#[derive(Clone, Debug)]
pub struct RelayConform {
    stream_id: Text,
    core: Conform,
}

impl RelayConform {
    pub fn new(stream_id: Text, from: u64) -> Self {
        RelayConform { stream_id, core: Conform::new(from as f64) }
    }

    pub fn is_done(&self) -> bool {
        self.core.is_done()
    }

    pub fn feed(&mut self, frame: Frame) -> Conformed {
        let input = self.input_of(&frame);
        let verdict = self.core.feed(input);
        self.apply(verdict, Some(frame))
    }

    pub fn end(&mut self) -> Conformed {
        let verdict = self.core.end();
        self.apply(verdict, None)
    }

    pub fn fail(&mut self) -> Conformed {
        let verdict = self.core.fail();
        self.apply(verdict, None)
    }

    fn input_of(&self, frame: &Frame) -> ConformInput {
        match frame {
            Frame::Open { stream_id, from, seq, durable_seq, .. } => ConformInput::Open {
                stream_id_matches: *stream_id == self.stream_id,
                from: *from as f64,
                seq: *seq as f64,
                durable_seq: *durable_seq as f64,
            },
            Frame::Chunk { from, seq, text } => {
                ConformInput::Chunk { from: *from as f64, seq: *seq as f64, text_len: Some(text.len() as f64) }
            }
            Frame::Durable { seq } => ConformInput::Durable { seq: *seq as f64 },
            Frame::End { seq, .. } => ConformInput::End { seq: *seq as f64 },
            Frame::Stale { .. } => ConformInput::Stale,
            Frame::Absent => ConformInput::Absent,
        }
    }

    fn stale(&self) -> Frame {
        Frame::Stale { floor_seq: self.core.pos() as u64, durable_seq: self.core.last_durable() as u64 }
    }

    fn synth_open(&self) -> Frame {
        let at = self.core.requested() as u64;
        Frame::Open { stream_id: self.stream_id.clone(), from: at, seq: at, durable_seq: at, ended: false }
    }

    fn apply(&self, verdict: Verdict, frame: Option<Frame>) -> Conformed {
        match verdict {
            Verdict::Drop => Conformed::default(),
            Verdict::Pass => Conformed { frames: frame.into_iter().collect(), violation: None },
            Verdict::OpenThenPass => {
                let mut frames = vec![self.synth_open()];
                frames.extend(frame);
                Conformed { frames, violation: None }
            }
            Verdict::Violation(v) => {
                let reason = v.reason(&raw_pieces_owned(frame.as_ref()).borrowed());
                Conformed { frames: vec![self.stale()], violation: Some(reason.to_string_lossy()) }
            }
            Verdict::Terminate => Conformed { frames: vec![self.stale()], violation: None },
        }
    }
}

/// Owned storage for [`RawPieces`] of a typed frame (every value there is well-formed, so the
/// lossy conversion of the final reason loses nothing).
struct OwnedPieces {
    stream_id_json: Vec<u16>,
    from: Vec<u16>,
    seq: Vec<u16>,
    type_json: Vec<u16>,
}

impl OwnedPieces {
    fn borrowed(&self) -> RawPieces<'_> {
        RawPieces { stream_id_json: &self.stream_id_json, from: &self.from, seq: &self.seq, type_json: &self.type_json }
    }
}

/// The reason text of `violation` for `frame` (the values it quotes printed as Rust prints the
/// frame's numbers, which is how JavaScript prints integers).
pub(crate) fn reason_of(violation: Violation, frame: Option<&Frame>) -> String {
    violation.reason(&raw_pieces_owned(frame).borrowed()).to_string_lossy()
}

fn raw_pieces_owned(frame: Option<&Frame>) -> OwnedPieces {
    let units = |s: &str| s.encode_utf16().collect::<Vec<u16>>();
    let undefined = units("undefined");
    let (stream_id_json, from, seq) = match frame {
        Some(Frame::Open { stream_id, from, seq, .. }) => {
            let mut json = String::new();
            write_json_string(&mut json, stream_id.units());
            (units(&json), units(&from.to_string()), units(&seq.to_string()))
        }
        Some(Frame::Chunk { from, seq, .. }) => (undefined.clone(), units(&from.to_string()), units(&seq.to_string())),
        Some(Frame::Durable { seq }) | Some(Frame::End { seq, .. }) => {
            (undefined.clone(), undefined.clone(), units(&seq.to_string()))
        }
        _ => (undefined.clone(), undefined.clone(), undefined.clone()),
    };
    let type_json = match frame {
        Some(f) => units(&format!("\"{}\"", f.kind().as_str())),
        None => undefined,
    };
    OwnedPieces { stream_id_json, from, seq, type_json }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::StreamStatus;

    fn chunk(from: u64, text: &str) -> Frame {
        Frame::chunk(from, Text::from(text)).unwrap()
    }

    fn open(id: &str, from: u64, seq: u64) -> Frame {
        Frame::Open { stream_id: id.into(), from, seq, durable_seq: 0, ended: false }
    }

    #[test]
    fn synthesizes_open_and_absorbs_replays() {
        let mut c = RelayConform::new("s".into(), 3);
        let out = c.feed(chunk(3, "ab"));
        assert_eq!(out.frames, vec![open("s", 3, 3).clone_with_durable(3), chunk(3, "ab")]);
        assert!(c.feed(chunk(3, "ab")).frames.is_empty());
        assert!(c.feed(chunk(0, "abcde")).frames.is_empty());
        assert_eq!(c.feed(chunk(4, "bcd")).frames, vec![chunk(4, "bcd")]);
        let end = Frame::End { seq: 7, status: StreamStatus::Complete, error: None };
        assert_eq!(c.feed(end.clone()).frames, vec![end]);
        assert!(c.feed(chunk(7, "z")).frames.is_empty());
        assert!(c.end().frames.is_empty());
    }

    #[test]
    fn every_violation_is_one_stale_with_its_reason() {
        let mut c = RelayConform::new("s".into(), 0);
        assert_eq!(c.feed(chunk(0, "abc")).frames.len(), 2);
        let out = c.feed(chunk(5, "x"));
        assert_eq!(out.frames, vec![Frame::Stale { floor_seq: 3, durable_seq: 0 }]);
        assert_eq!(out.violation.as_deref(), Some("relay chunk at 5 leaves a gap after 3"));

        let mut c = RelayConform::new("s".into(), 2);
        let out = c.feed(open("other", 0, 0));
        assert_eq!(out.violation.as_deref(), Some("relay open for \"other\" at 0 is malformed"));

        let mut c = RelayConform::new("s".into(), 2);
        let out = c.feed(open("s", 4, 4));
        assert_eq!(out.violation.as_deref(), Some("relay open at 4 cannot serve the requested 2"));
        assert_eq!(out.frames, vec![Frame::Stale { floor_seq: 2, durable_seq: 0 }]);

        let mut c = RelayConform::new("s".into(), 0);
        c.feed(chunk(0, "ab"));
        c.feed(Frame::Durable { seq: 1 });
        let out = c.feed(Frame::End { seq: 5, status: StreamStatus::Complete, error: None });
        assert_eq!(out.violation.as_deref(), Some("relay end at 5 outruns the 2 characters delivered"));
        assert_eq!(out.frames, vec![Frame::Stale { floor_seq: 2, durable_seq: 1 }]);

        let mut c = RelayConform::new("s".into(), 0);
        let out = c.end();
        assert_eq!(out.violation.as_deref(), Some("relay source ended without a terminal frame"));
        let mut c = RelayConform::new("s".into(), 0);
        let out = c.fail();
        assert_eq!((out.frames.len(), out.violation), (1, None));
    }

    #[test]
    fn numeric_rules_follow_javascript_numbers() {
        let mut c = Conform::new(0.0);
        assert_eq!(
            c.feed(ConformInput::Chunk { from: 0.0, seq: 2.0, text_len: None }),
            Verdict::Violation(Violation::ChunkSpan)
        );
        let mut c = Conform::new(0.0);
        assert_eq!(
            c.feed(ConformInput::Chunk { from: 0.5, seq: 2.5, text_len: Some(2.0) }),
            Verdict::Violation(Violation::ChunkSpan)
        );
        let mut c = Conform::new(0.0);
        assert_eq!(c.feed(ConformInput::Durable { seq: f64::NAN }), Verdict::Drop);
        assert_eq!(c.feed(ConformInput::Durable { seq: 0.0 }), Verdict::OpenThenPass);
        assert_eq!(c.feed(ConformInput::Durable { seq: 0.0 }), Verdict::Pass);
        assert_eq!(c.feed(ConformInput::Unknown), Verdict::Violation(Violation::UnknownType));
        assert_eq!(c.feed(ConformInput::Stale), Verdict::Drop);
        let mut c = Conform::new(0.0);
        assert_eq!(c.feed(ConformInput::End { seq: -0.0 }), Verdict::OpenThenPass);
        let reason = Violation::ChunkSpan.reason(&RawPieces {
            from: &"1.5".encode_utf16().collect::<Vec<_>>(),
            seq: &"NaN".encode_utf16().collect::<Vec<_>>(),
            ..Default::default()
        });
        assert_eq!(reason, Text::from("relay chunk 1.5→NaN does not span exactly its offsets"));
    }

    impl Frame {
        fn clone_with_durable(&self, d: u64) -> Frame {
            match self.clone() {
                Frame::Open { stream_id, from, seq, ended, .. } => {
                    Frame::Open { stream_id, from, seq, durable_seq: d, ended }
                }
                other => other,
            }
        }
    }
}
