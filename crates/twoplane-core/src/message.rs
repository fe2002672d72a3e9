//! Messages made of parts (docs/contract.md §8): one assistant message whose ordered parts
//! (texts, reasoning, tool calls, sources, files, data, step boundaries) share the one coordinate
//! `seq` with everything else.
//!
//! Guarantees:
//! - **One clock.** A body delta advances `seq` by its UTF-16 length and every structural event by
//!   exactly one unit, so "already held" is `seq <= pos` and a gap is `from > pos` for every frame,
//!   as for text.
//! - **A single-text stream is today's stream.** Part 0 is implicit and a part 0 delta at body
//!   offset `from` is encoded as today's chunk; every frame that the six-frame codec can express
//!   is written by it, byte for byte.
//! - **The rules are written once**, over numbers ([`rules`]): the conform pass, the numeric
//!   reader, the Rust reader and durable assembly all decide by the same [`rules::Tally`].
//!
//! Modules: the frames ([`frame`]) and their JSON ([`codec`]); the numeric rules ([`rules`]);
//! the accumulated message and its stored document ([`fold`]); chunk rows and assembly
//! ([`rows`]); the shape of a produced message, which cuts replays and checkpoint rows from text
//! the producer keeps ([`shape`]), and the in-memory log over it ([`log`]); the order a sealed
//! document keeps, so that an ended message cuts and goes on exactly ([`spans`]);
//! the relay conform pass for parts ([`conform`]), the reader ([`reader`]), SSE events
//! ([`sse`]), the display-rate merge of a reader's due frames ([`merge`]) and the events a
//! producer sends ([`input`]).

pub mod codec;
pub mod conform;
pub mod fold;
pub mod frame;
pub mod input;
pub mod log;
pub mod merge;
pub mod reader;
pub mod rows;
pub mod rules;
pub mod shape;
pub mod spans;
pub mod sse;
pub mod stored;

pub use codec::{
    decode_message_frame, decode_message_frame_units, encode_message_frame, encode_message_frame_into,
    message_frame_from_value, write_attrs,
};
pub use conform::{
    MessageConform, MessageConformed, MessageRelayConform, MessageVerdict, MessageViolation, PartViolation,
};
pub use fold::{Message, Part};
pub use frame::{check_value, message_resume_point, Attrs, Event, FrameNumbers, MessageFrame, MessageKind};
pub use input::{parse_producer_event, producer_event_from_value, PartRef, ProducerEvent};
pub use log::MessageLog;
pub use merge::{merge_frames, push_merged};
pub use reader::{MessageAction, MessageReader, MessageReaderCore};
pub use rows::{assemble_durable_message, assemble_durable_message_at, MessageChunkRow};
pub use rules::{Breach, Decision, Tally};
pub use shape::{Item, MessageShape};
pub use spans::{document_frames, sealed_document, SealedSpan};
pub use sse::{encode_message_event, encode_message_event_into};
pub use stored::stored_frames;
