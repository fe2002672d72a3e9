//! The Vercel AI SDK's UI message stream (the chunks `toUIMessageStreamResponse()` sends and
//! `readUIMessageStream`/`useChat` fold into a `UIMessage`), carried as a message made of parts
//! (docs/contract.md §8; docs/ai-sdk.md is the reference).
//!
//! Two directions, each one place:
//! - [`ingest`]: chunks in, the message's events out ([`UiIngest`]): every chunk type of `ai` 5,
//!   6 and 7 becomes parts, attributes, metadata, the finish reason or a transient part; a chunk
//!   type it does not know becomes an atomic part of that kind, never dropped and never fatal.
//! - [`egress`]: a message and its later frames out as chunks again: a compacted replay of the
//!   message so far (per part its start, one delta with its body, its end if it ended, in the
//!   original order), then a chunk per live frame, so that the SDK builds the same message from
//!   replay and tail as from the original stream.
//!
//! The attributes this module writes are the SDK's own part fields (`state`, `input`, `output`,
//! `errorText`, `approval`, ...), plus a few replay hints whose names start with `$`
//! ([`HINT_STREAMED`] and its siblings): how a part reached its state, which a replay needs and a
//! `UIMessage` does not say. Chunks are JSON objects ([`JsonValue`]); their members keep the
//! order they are written in.

pub mod egress;
pub mod events;
pub mod ingest;
mod vocab;

pub use egress::{end_chunks, frame_chunks, message_chunks, start_chunk, UiEgress};
pub use events::{write_group, UiEvents, UiOutcome, DONE_EVENT};
pub use ingest::{UiIngest, UiOp};
pub use vocab::{HINT_APPROVAL_RESPONSE, HINT_DROPPED, HINT_INPUT_ERROR, HINT_STREAMED};

use crate::error::Result;
use crate::frame::StreamStatus;
use crate::json::JsonValue;
use crate::message::{Message, MessageFrame, MessageLog};
use crate::text::Text;

/// A whole UI message stream ingested: the message's frames in order (as a producer's log holds
/// them), and the reason of an `abort` when the stream had one (`Some(None)`: no reason).
#[derive(Clone, Debug, PartialEq)]
pub struct Ingested {
    pub frames: Vec<MessageFrame>,
    pub aborted: Option<Option<Text>>,
}

/// Ingest a whole stream of `chunks` into the message `stream_id` (a fresh one, whose next part
/// is 1): what the server does with a producer's body, in one call (bindings and vectors use it).
pub fn ingest_all(stream_id: &Text, chunks: &[JsonValue]) -> Result<Ingested> {
    let mut ui = UiIngest::new(stream_id.clone(), 1);
    let mut log = MessageLog::new();
    let mut aborted = None;
    for c in chunks {
        for op in ui.feed(c)? {
            match op {
                UiOp::Event(e) => drop(log.event(e)?),
                UiOp::Delta { part, text } => drop(log.delta(part, text)?),
                UiOp::Abort { reason } => aborted = Some(reason),
            }
        }
    }
    Ok(Ingested { frames: log.frames().to_vec(), aborted })
}

/// What a reader joining the message `frames` make at offset `from` reads, when the stream ended
/// with `status` (and `error`): `start`, the compacted replay of the message there, the chunks of
/// every later frame, and the end. What the server's resume route sends, in one call.
pub fn resume_all(
    stream_id: &Text,
    frames: &[MessageFrame],
    from: u64,
    status: StreamStatus,
    error: Option<&Text>,
) -> Result<Vec<JsonValue>> {
    let mut at = Message::new();
    let mut rest = Vec::new();
    for f in frames {
        let (before, after) = f.cut_at(from);
        if let Some(before) = before {
            at.apply(&before)?;
        }
        rest.extend(after);
    }
    let mut egress = UiEgress::new();
    let mut out = egress.replay(stream_id, at);
    for f in &rest {
        out.extend(egress.frame(f)?);
    }
    out.extend(egress.end(status, error));
    Ok(out)
}
