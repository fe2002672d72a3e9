//! The six frames of the wire (docs/contract.md §1) and the statuses a stream ends with.
//!
//! Offsets are `u64` code-unit positions that the JSON codec keeps within `0..=2^53-1`, so every
//! frame this crate produces or accepts round-trips through JavaScript exactly. A decoded or
//! constructed chunk always satisfies `text.len() == seq - from`.

use crate::coded::coded_enum;
use crate::error::{Error, ErrorKind, Result};
use crate::jsnum::MAX_SAFE_INTEGER;
use crate::text::Text;

/// The status column's value while a stream is live.
pub const STREAM_STATUS_STREAMING: &str = "streaming";

/// How a sealed stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamStatus {
    Complete,
    Cancelled,
    Error,
    Interrupted,
}

impl StreamStatus {
    pub const ALL: [StreamStatus; 4] =
        [StreamStatus::Complete, StreamStatus::Cancelled, StreamStatus::Error, StreamStatus::Interrupted];

    pub fn as_str(self) -> &'static str {
        match self {
            StreamStatus::Complete => "complete",
            StreamStatus::Cancelled => "cancelled",
            StreamStatus::Error => "error",
            StreamStatus::Interrupted => "interrupted",
        }
    }

    /// The status a name stands for. No runtime reads a status back (the stores only write it),
    /// so this is test support only.
    #[cfg(any(test, feature = "testing"))]
    pub fn parse(s: &str) -> Result<Self> {
        StreamStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| Error::field(ErrorKind::InvalidStatus, "status", format!("unknown stream status {s:?}")))
    }
}

coded_enum! {
    /// A frame's type tag. The numeric values (0 to 5, in this order) are what bindings pass
    /// across the boundary.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum FrameKind;
    /// The frame `type`.
    fn as_str;
    {
        Open => "open",
        Chunk => "chunk",
        Durable => "durable",
        End => "end",
        Stale => "stale",
        Absent => "absent",
    }
}

impl FrameKind {
    pub fn from_name(s: &str) -> Option<Self> {
        FrameKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn from_code(code: u32) -> Option<Self> {
        FrameKind::ALL.get(code as usize).copied()
    }

    /// `end`, `stale` and `absent` end a subscription; nothing may follow them.
    pub fn is_terminal(self) -> bool {
        matches!(self, FrameKind::End | FrameKind::Stale | FrameKind::Absent)
    }
}

/// One frame of a subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// The join was accepted; the replay starts at `from`.
    Open { stream_id: Text, from: u64, seq: u64, durable_seq: u64, ended: bool },
    /// Produced text `from..seq` (not a durability claim).
    Chunk { from: u64, seq: u64, text: Text },
    /// The store holds the prefix through `seq`.
    Durable { seq: u64 },
    /// Sealed; `seq` is the DURABLE length.
    End { seq: u64, status: StreamStatus, error: Option<Text> },
    /// Read the store: the join was below the retained floor, or the reader fell behind.
    Stale { floor_seq: u64, durable_seq: u64 },
    /// This process does not host the stream; the store is the whole truth.
    Absent,
}

impl Frame {
    /// A chunk of `text` starting at `from`; `seq` is derived, so the span always matches.
    pub fn chunk(from: u64, text: Text) -> Result<Frame> {
        let seq = chunk_end(from, text.len())?;
        Ok(Frame::Chunk { from, seq, text })
    }

    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Open { .. } => FrameKind::Open,
            Frame::Chunk { .. } => FrameKind::Chunk,
            Frame::Durable { .. } => FrameKind::Durable,
            Frame::End { .. } => FrameKind::End,
            Frame::Stale { .. } => FrameKind::Stale,
            Frame::Absent => FrameKind::Absent,
        }
    }

    pub fn is_terminal(&self) -> bool {
        self.kind().is_terminal()
    }

    /// Check the invariants the codec enforces, for frames built by hand: offsets within
    /// `0..=2^53-1`, `from <= seq` on open, and a chunk's text spanning exactly its offsets.
    pub fn validate(&self) -> Result<()> {
        match self {
            Frame::Open { from, seq, durable_seq, .. } => {
                check_offset("from", *from)?;
                check_offset("seq", *seq)?;
                check_offset("durableSeq", *durable_seq)
            }
            Frame::Chunk { from, seq, text } => {
                check_offset("from", *from)?;
                check_offset("seq", *seq)?;
                check_chunk_span(*from, *seq, text.len())
            }
            Frame::Durable { seq } | Frame::End { seq, .. } => check_offset("seq", *seq),
            Frame::Stale { floor_seq, durable_seq } => {
                check_offset("floorSeq", *floor_seq)?;
                check_offset("durableSeq", *durable_seq)
            }
            Frame::Absent => Ok(()),
        }
    }
}

/// The `seq` of a chunk of `len` code units starting at `from`, or `invalid_offset` when it would
/// pass 2^53 - 1 (JavaScript could no longer hold the offset exactly).
pub fn chunk_end(from: u64, len: usize) -> Result<u64> {
    from.checked_add(len as u64)
        .filter(|s| *s <= MAX_SAFE_INTEGER)
        .ok_or_else(|| Error::field(ErrorKind::InvalidOffset, "seq", "chunk end exceeds 2^53-1"))
}

/// An offset field `name` must be within `0..=2^53-1`, or JavaScript could not hold it exactly.
/// Every frame's hand-built check uses this, so the field names and the wording are the codec's
/// for the six frames and the message frames alike.
pub(crate) fn check_offset(name: &'static str, v: u64) -> Result<()> {
    if v > MAX_SAFE_INTEGER {
        Err(Error::field(ErrorKind::InvalidOffset, name, format!("{name} {v} exceeds 2^53-1")))
    } else {
        Ok(())
    }
}

/// A chunk's text must be exactly `seq - from` code units long.
pub fn check_chunk_span(from: u64, seq: u64, text_len: usize) -> Result<()> {
    if seq < from || seq - from != text_len as u64 {
        return Err(Error::field(
            ErrorKind::ChunkSpan,
            "text",
            format!("chunk {from}..{seq} carries {text_len} code units"),
        ));
    }
    Ok(())
}

/// The SSE `id:` of a frame (docs/contract.md §2): `open` gives `from`; `chunk`, `durable` and `end`
/// give `seq`; `stale` and `absent` give nothing.
pub fn frame_resume_point(frame: &Frame) -> Option<u64> {
    match frame {
        Frame::Open { from, .. } => Some(*from),
        Frame::Chunk { seq, .. } | Frame::Durable { seq } | Frame::End { seq, .. } => Some(*seq),
        Frame::Stale { .. } | Frame::Absent => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_points() {
        let open = Frame::Open { stream_id: "s".into(), from: 3, seq: 9, durable_seq: 2, ended: false };
        assert_eq!(frame_resume_point(&open), Some(3));
        assert_eq!(frame_resume_point(&Frame::chunk(3, "ab".into()).unwrap()), Some(5));
        assert_eq!(frame_resume_point(&Frame::Durable { seq: 4 }), Some(4));
        let end = Frame::End { seq: 7, status: StreamStatus::Complete, error: None };
        assert_eq!(frame_resume_point(&end), Some(7));
        assert_eq!(frame_resume_point(&Frame::Stale { floor_seq: 1, durable_seq: 1 }), None);
        assert_eq!(frame_resume_point(&Frame::Absent), None);
    }

    #[test]
    fn chunk_span_is_checked() {
        assert!(Frame::Chunk { from: 1, seq: 3, text: "ab".into() }.validate().is_ok());
        let bad = Frame::Chunk { from: 1, seq: 4, text: "ab".into() };
        assert_eq!(bad.validate().unwrap_err().kind(), ErrorKind::ChunkSpan);
        assert!(Frame::chunk(MAX_SAFE_INTEGER, "x".into()).is_err());
    }

    #[test]
    fn chunk_end_stays_within_javascript_integers() {
        assert_eq!(chunk_end(3, 2).unwrap(), 5);
        assert_eq!(chunk_end(MAX_SAFE_INTEGER - 1, 1).unwrap(), MAX_SAFE_INTEGER);
        assert_eq!(chunk_end(MAX_SAFE_INTEGER, 0).unwrap(), MAX_SAFE_INTEGER);
        assert_eq!(chunk_end(MAX_SAFE_INTEGER, 1).unwrap_err().kind(), ErrorKind::InvalidOffset);
        assert_eq!(chunk_end(u64::MAX, 1).unwrap_err().kind(), ErrorKind::InvalidOffset);
    }

    #[test]
    fn statuses_and_kinds_round_trip() {
        for s in StreamStatus::ALL {
            assert_eq!(StreamStatus::parse(s.as_str()).unwrap(), s);
        }
        assert_eq!(StreamStatus::parse("streaming").unwrap_err().kind(), ErrorKind::InvalidStatus);
        for k in FrameKind::ALL {
            assert_eq!(FrameKind::from_name(k.as_str()), Some(k));
            assert_eq!(FrameKind::from_code(k as u32), Some(k));
        }
        assert_eq!(FrameKind::from_code(6), None);
    }
}
