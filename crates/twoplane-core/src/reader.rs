//! The client-side reader (docs/contract.md §4) as a state machine over numbers.
//!
//! [`Reader`] decides, frame by frame, what to do to the accumulator; it never holds text, so a
//! JavaScript reader passes numbers in and keeps its strings. Its guarantees:
//! - the accumulator starts as the durable text at the join offset (rules 1 and 2);
//! - a chunk is spliced at its own `from`, and a chunk past the accumulator's end is a gap that
//!   stops the reader (rule 5); a chunk wholly inside the accumulator changes nothing, so the
//!   accumulator never shrinks;
//! - `end`, `stale` and `absent` stop it for good, and so does anything malformed or an `open`
//!   for another stream (rules 3 and 4): after a stop every frame is ignored;
//! - the offset to resume from after a dropped connection is the accumulator's length.
//!
//! [`TextReader`] is the same machine holding the text itself, for Rust callers.

use crate::frame::{Frame, FrameKind};
use crate::jsnum::as_offset;
use crate::splice::splice_stream_text;
use crate::text::Text;

/// One frame, reduced to what the reader's rules read. Numbers follow JavaScript: a value that is
/// not a number is NaN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReaderInput {
    Open {
        stream_id_matches: bool,
        from: f64,
    },
    /// `text_len` is `None` when `text` is not a string.
    Chunk {
        from: f64,
        seq: f64,
        text_len: Option<f64>,
    },
    Durable,
    End,
    Stale,
    Absent,
    Unknown,
}

impl ReaderInput {
    /// From the numeric form a binding passes (kind code as in [`FrameKind`], 6 or more for
    /// unknown; `c` is the text length or NaN).
    pub fn from_code(code: u32, stream_id_matches: bool, a: f64, b: f64, c: f64) -> ReaderInput {
        match FrameKind::from_code(code) {
            Some(FrameKind::Open) => ReaderInput::Open { stream_id_matches, from: a },
            Some(FrameKind::Chunk) => {
                ReaderInput::Chunk { from: a, seq: b, text_len: if c.is_nan() { None } else { Some(c) } }
            }
            Some(FrameKind::Durable) => ReaderInput::Durable,
            Some(FrameKind::End) => ReaderInput::End,
            Some(FrameKind::Stale) => ReaderInput::Stale,
            Some(FrameKind::Absent) => ReaderInput::Absent,
            None => ReaderInput::Unknown,
        }
    }
}

/// Why a reader stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The stream was sealed; the accumulator holds everything produced.
    End,
    /// The server says read the store.
    Stale,
    /// The server does not host the stream.
    Absent,
    /// A chunk started past the accumulator's end.
    Gap,
    /// An `open` for a different stream id.
    ForeignStream,
    /// A frame that breaks the wire contract (bad offsets, wrong span, unknown type).
    Malformed,
}

impl StopReason {
    /// Every reason, in code order ([`StopReason::code`] is the index).
    pub const ALL: [StopReason; 6] = [
        StopReason::End,
        StopReason::Stale,
        StopReason::Absent,
        StopReason::Gap,
        StopReason::ForeignStream,
        StopReason::Malformed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::End => "end",
            StopReason::Stale => "stale",
            StopReason::Absent => "absent",
            StopReason::Gap => "gap",
            StopReason::ForeignStream => "foreign_stream",
            StopReason::Malformed => "malformed",
        }
    }

    /// Stable numeric codes for bindings.
    pub fn code(self) -> u32 {
        match self {
            StopReason::End => 0,
            StopReason::Stale => 1,
            StopReason::Absent => 2,
            StopReason::Gap => 3,
            StopReason::ForeignStream => 4,
            StopReason::Malformed => 5,
        }
    }
}

/// What to do with the accumulator for one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReaderAction {
    /// Nothing changes.
    Ignore,
    /// `acc = acc[..at] ++ text`.
    Splice { at: u64 },
    /// Stop, close the connection, and never reconnect.
    Stop(StopReason),
}

impl ReaderAction {
    /// Stable numeric codes for bindings: 0 ignore, 1 splice, 2 stop.
    pub fn code(self) -> u32 {
        match self {
            ReaderAction::Ignore => 0,
            ReaderAction::Splice { .. } => 1,
            ReaderAction::Stop(_) => 2,
        }
    }
}

/// The reader's state machine over numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reader {
    join: u64,
    acc_len: u64,
    stopped: Option<StopReason>,
}

impl Reader {
    /// A reader that joined with `durable_len` code units of durable text in hand.
    pub fn new(durable_len: u64) -> Self {
        Reader { join: durable_len, acc_len: durable_len, stopped: None }
    }

    /// A reader joined at a length a caller passed as a JavaScript number: an `invalid_offset`
    /// error for anything that is not an offset (NaN, a fraction, a negative, past 2^53 - 1),
    /// so no binding quietly joins at 0 instead.
    pub fn from_js_len(durable_len: f64) -> crate::Result<Self> {
        crate::jsnum::offset_arg("durable length", durable_len).map(Reader::new)
    }

    /// The offset the subscription was opened at (fixed for the reader's life).
    pub fn join_offset(&self) -> u64 {
        self.join
    }

    /// Length of the accumulated text.
    pub fn acc_len(&self) -> u64 {
        self.acc_len
    }

    /// Where a reconnect resumes (`Last-Event-ID`): everything before it is already held.
    pub fn resume_from(&self) -> u64 {
        self.acc_len
    }

    pub fn stopped(&self) -> Option<StopReason> {
        self.stopped
    }

    pub fn is_live(&self) -> bool {
        self.stopped.is_none()
    }

    pub fn feed(&mut self, input: ReaderInput) -> ReaderAction {
        if self.stopped.is_some() {
            return ReaderAction::Ignore;
        }
        match input {
            ReaderInput::Open { stream_id_matches, from } => {
                if !stream_id_matches {
                    return self.stop(StopReason::ForeignStream);
                }
                if as_offset(from).is_none() {
                    return self.stop(StopReason::Malformed);
                }
                ReaderAction::Ignore
            }
            ReaderInput::Chunk { from, seq, text_len } => {
                let (Some(from), Some(seq)) = (as_offset(from), as_offset(seq)) else {
                    return self.stop(StopReason::Malformed);
                };
                if seq < from || text_len != Some((seq - from) as f64) {
                    return self.stop(StopReason::Malformed);
                }
                if from > self.acc_len {
                    return self.stop(StopReason::Gap);
                }
                if seq <= self.acc_len {
                    // Both are prefixes of one produced text, so the held text already says this.
                    return ReaderAction::Ignore;
                }
                self.acc_len = seq;
                ReaderAction::Splice { at: from }
            }
            ReaderInput::Durable => ReaderAction::Ignore,
            ReaderInput::End => self.stop(StopReason::End),
            ReaderInput::Stale => self.stop(StopReason::Stale),
            ReaderInput::Absent => self.stop(StopReason::Absent),
            ReaderInput::Unknown => self.stop(StopReason::Malformed),
        }
    }

    pub(crate) fn stop(&mut self, reason: StopReason) -> ReaderAction {
        self.stopped = Some(reason);
        ReaderAction::Stop(reason)
    }
}

/// The reader holding its own text: for Rust clients and tests.
#[derive(Clone, Debug)]
pub struct TextReader {
    stream_id: Text,
    acc: Text,
    core: Reader,
}

impl TextReader {
    /// Join `stream_id` holding `durable` (the durable text at subscribe time).
    pub fn new(stream_id: Text, durable: Text) -> Self {
        let core = Reader::new(durable.len() as u64);
        TextReader { stream_id, acc: durable, core }
    }

    pub fn stream_id(&self) -> &Text {
        &self.stream_id
    }

    pub fn text(&self) -> &Text {
        &self.acc
    }

    pub fn core(&self) -> &Reader {
        &self.core
    }

    pub fn feed(&mut self, frame: &Frame) -> ReaderAction {
        let input = match frame {
            Frame::Open { stream_id, from, .. } => {
                ReaderInput::Open { stream_id_matches: *stream_id == self.stream_id, from: *from as f64 }
            }
            Frame::Chunk { from, seq, text } => {
                ReaderInput::Chunk { from: *from as f64, seq: *seq as f64, text_len: Some(text.len() as f64) }
            }
            Frame::Durable { .. } => ReaderInput::Durable,
            Frame::End { .. } => ReaderInput::End,
            Frame::Stale { .. } => ReaderInput::Stale,
            Frame::Absent => ReaderInput::Absent,
        };
        let action = self.core.feed(input);
        if let (ReaderAction::Splice { at }, Frame::Chunk { text, .. }) = (action, frame) {
            self.acc.truncate(at as usize);
            self.acc.push_units(text.units());
        }
        action
    }

    /// What to render for `stream_id` given the durable text now: the splice of the durable text
    /// and this reader's text, or the durable text alone when this reader follows another stream.
    pub fn rendered(&self, stream_id: &Text, durable_now: &[u16]) -> Text {
        if *stream_id != self.stream_id {
            return Text::from_slice(durable_now);
        }
        splice_stream_text(durable_now, self.acc.units())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::StreamStatus;

    fn t(s: &str) -> Text {
        Text::from(s)
    }

    fn chunk(from: u64, s: &str) -> Frame {
        Frame::chunk(from, t(s)).unwrap()
    }

    #[test]
    fn stop_reason_codes_are_their_index_in_all() {
        for (i, r) in StopReason::ALL.into_iter().enumerate() {
            assert_eq!(r.code() as usize, i, "{r:?}");
        }
    }

    #[test]
    fn a_length_from_javascript_must_be_an_offset() {
        assert_eq!(Reader::from_js_len(5.0).map(|r| r.acc_len()), Ok(5));
        assert_eq!(Reader::from_js_len(0.0).map(|r| r.join_offset()), Ok(0));
        for bad in [f64::NAN, -1.0, 1.5, f64::INFINITY, 9_007_199_254_740_992.0] {
            let e = Reader::from_js_len(bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidOffset, "{bad}");
        }
    }

    #[test]
    fn splices_at_from_and_stops_on_end() {
        let mut r = TextReader::new(t("s"), t("Hel"));
        let open = Frame::Open { stream_id: t("s"), from: 3, seq: 5, durable_seq: 3, ended: false };
        assert_eq!(r.feed(&open), ReaderAction::Ignore);
        assert_eq!(r.feed(&chunk(3, "lo")), ReaderAction::Splice { at: 3 });
        assert_eq!(r.feed(&chunk(2, "llo w")), ReaderAction::Splice { at: 2 });
        assert_eq!(r.text(), &t("Hello w"));
        assert_eq!(r.feed(&chunk(0, "Hel")), ReaderAction::Ignore);
        assert_eq!(r.core().resume_from(), 7);
        let end = Frame::End { seq: 7, status: StreamStatus::Complete, error: None };
        assert_eq!(r.feed(&end), ReaderAction::Stop(StopReason::End));
        assert_eq!(r.feed(&chunk(7, "!")), ReaderAction::Ignore);
        assert_eq!(r.text(), &t("Hello w"));
    }

    #[test]
    fn gaps_foreign_streams_and_garbage_stop_the_reader() {
        let mut r = TextReader::new(t("s"), t("ab"));
        assert_eq!(r.feed(&chunk(3, "x")), ReaderAction::Stop(StopReason::Gap));
        let mut r = TextReader::new(t("s"), t(""));
        let open = Frame::Open { stream_id: t("x"), from: 0, seq: 0, durable_seq: 0, ended: false };
        assert_eq!(r.feed(&open), ReaderAction::Stop(StopReason::ForeignStream));
        let mut r = Reader::new(0);
        let bad = ReaderInput::Chunk { from: 0.0, seq: 2.0, text_len: Some(3.0) };
        assert_eq!(r.feed(bad), ReaderAction::Stop(StopReason::Malformed));
        let mut r = Reader::new(0);
        assert_eq!(r.feed(ReaderInput::Unknown), ReaderAction::Stop(StopReason::Malformed));
    }

    #[test]
    fn rendering_is_keyed_to_the_stream() {
        let mut r = TextReader::new(t("s"), t("ab"));
        r.feed(&chunk(2, "cd"));
        assert_eq!(r.rendered(&t("s"), t("a").units()), t("abcd"));
        assert_eq!(r.rendered(&t("s"), t("abcdef").units()), t("abcdef"));
        assert_eq!(r.rendered(&t("other"), t("zz").units()), t("zz"));
    }
}
