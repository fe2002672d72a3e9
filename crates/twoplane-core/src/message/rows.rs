//! The durable message (docs/contract.md §8): chunk rows of a message, and the assembly of the
//! message from its row and chunk rows.
//!
//! A text row (no `parts`) is today's row, part 0 text; a parts row holds its slice of frames as
//! JSON. Assembly applies both by the rules of [`super::rules`], so a row set that no producer
//! could have written is an error, never a different message.

use super::codec::decode_frame_list;
use super::fold::Message;
use super::frame::MessageFrame;
use super::spans::document_frames;
use crate::error::{Error, ErrorKind, Result};
use crate::jsnum;
use crate::splice::assembly_order;
use crate::text::Text;

/// One chunk row of a message: its end offset, its text, and the slice of frames when the slice
/// is not part 0 text alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageChunkRow {
    pub seq: u64,
    pub text: Option<Text>,
    /// The JSON array of the slice's frames (`NULL` in a text row).
    pub parts: Option<Text>,
}

impl MessageChunkRow {
    /// The rows as a binding packs them from JavaScript: `seqs[i]` is row `i`'s `seq` (an offset,
    /// else `invalid_offset`); `text_lens[i]` and `parts_lens[i]` are how many code units of
    /// `texts` and `parts` belong to row `i`, in order, or a negative number (or NaN) for a value
    /// that is not a string (`None`). Lengths that do not add up are `invalid_argument`: only a
    /// caller bypassing the package's adapter sends them.
    pub fn from_js_packed(
        seqs: &[f64],
        texts: &[u16],
        text_lens: &[f64],
        parts: &[u16],
        parts_lens: &[f64],
    ) -> Result<Vec<MessageChunkRow>> {
        if text_lens.len() != seqs.len() || parts_lens.len() != seqs.len() {
            return Err(Error::new(ErrorKind::InvalidArgument, "one text and one parts length per row"));
        }
        let (mut text_at, mut parts_at) = (0usize, 0usize);
        let mut rows = Vec::with_capacity(seqs.len());
        for ((&seq, &text_len), &parts_len) in seqs.iter().zip(text_lens).zip(parts_lens) {
            let seq = jsnum::offset_arg("chunk seq", seq)?;
            let text = take(texts, &mut text_at, text_len)?;
            let parts = take(parts, &mut parts_at, parts_len)?;
            rows.push(MessageChunkRow { seq, text, parts });
        }
        Ok(rows)
    }
}

/// The next `len` units of `units` from `*at`, or `None` for a negative or NaN `len`.
fn take(units: &[u16], at: &mut usize, len: f64) -> Result<Option<Text>> {
    if len.is_nan() || len < 0.0 {
        return Ok(None);
    }
    let n = jsnum::as_offset(len).and_then(|n| usize::try_from(n).ok());
    let slice = n.and_then(|n| at.checked_add(n)).and_then(|end| units.get(*at..end));
    match (n, slice) {
        (Some(n), Some(slice)) => {
            *at += n;
            Ok(Some(Text::from_slice(slice)))
        }
        _ => Err(Error::new(ErrorKind::InvalidArgument, "packed row lengths run past the packed text")),
    }
}

/// The durable message from its row (`body`, the stored `document` and the row's `seq`) and its
/// chunk rows: the document when there is one (then `seq` is its length), otherwise part 0 with
/// the body; then every chunk row in ascending `seq`, input order kept for equal `seq`.
pub fn assemble_durable_message(
    body: Option<&Text>,
    document: Option<&Text>,
    seq: u64,
    chunks: &[MessageChunkRow],
) -> Result<Message> {
    Ok(assemble_durable_message_at(body, document, seq, chunks, u64::MAX)?.unwrap_or_default())
}

/// The durable message as it stood at offset `at` of the coordinate (a reader that holds `at`
/// holds exactly this), from the same rows as [`assemble_durable_message`]; past the rows' end,
/// the whole durable message. A sealed document keeps the order of its runs and events
/// ([`super::spans`]), so it is cut exactly at any offset; `None` when the rows cannot say: `at`
/// falls strictly inside a document without that order (one compacted by an older version, or
/// edited since: known at 0 and at its length only). A body without a document is text only
/// (part 0 and nothing structural), so any prefix of it is exact.
pub fn assemble_durable_message_at(
    body: Option<&Text>,
    document: Option<&Text>,
    seq: u64,
    chunks: &[MessageChunkRow],
    at: u64,
) -> Result<Option<Message>> {
    let mut message = match document {
        Some(_) if at == 0 => return Ok(Some(Message::new())),
        Some(doc) if at < seq => match document_frames(doc)? {
            Some((frames, len)) if len == seq => {
                let mut message = Message::new();
                apply_until(&mut message, frames, at)?;
                message
            }
            _ => return Ok(None),
        },
        Some(doc) => Message::from_document(doc, seq)?,
        None => {
            let body = body.cloned().unwrap_or_default();
            let keep = (body.len() as u64).min(at) as usize;
            Message::from_text(Text::from_slice(&body.units()[..keep]))
        }
    };
    let seqs: Vec<f64> = chunks.iter().map(|c| c.seq as f64).collect();
    for i in assembly_order(&seqs) {
        if message.len() >= at {
            break;
        }
        let row = &chunks[i as usize];
        match &row.parts {
            None => {
                // Today's row: part 0 text at the end of the message, which is part 0's body
                // offset exactly while nothing structural has happened.
                let text = row.text.clone().unwrap_or_default();
                let from = message.len();
                let frame = MessageFrame::chunk(from, 0, from, text)?;
                if let (Some(before), _) = frame.cut_at(at) {
                    message.apply(&before)?;
                }
            }
            Some(json) => apply_until(&mut message, decode_frame_list(json)?, at)?,
        }
    }
    Ok(Some(message))
}

/// Fold into `message` what of `frames` (in coordinate order) lies before `at`: a chunk across
/// `at` is cut there, and nothing after it is read.
fn apply_until(message: &mut Message, frames: Vec<MessageFrame>, at: u64) -> Result<()> {
    for frame in frames {
        match frame.cut_at(at) {
            (Some(before), _) => {
                message.apply(&before)?;
            }
            (None, Some(_)) => break,
            // Not content: the fold's own refusal, as for the whole message.
            (None, None) => {
                message.apply(&frame)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn row(seq: u64, text: &str) -> MessageChunkRow {
        MessageChunkRow { seq, text: Some(text.into()), parts: None }
    }

    #[test]
    fn text_rows_assemble_as_today() {
        let m = assemble_durable_message(Some(&"B".into()), None, 0, &[row(3, "cd"), row(1, "a")]).unwrap();
        // Body "B" then rows by seq: "a" at 1, "cd" at 2..4.
        assert_eq!(m.document().to_string_lossy(), r#"{"parts":[{"type":"text","text":"Bacd"}]}"#);
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn packed_rows_unpack_in_order() {
        let texts: Vec<u16> = "abc".encode_utf16().collect();
        let parts: Vec<u16> = "[]".encode_utf16().collect();
        let rows =
            MessageChunkRow::from_js_packed(&[2.0, 1.0], &texts, &[2.0, -1.0], &parts, &[f64::NAN, 2.0]).unwrap();
        assert_eq!(rows[0], MessageChunkRow { seq: 2, text: Some("ab".into()), parts: None });
        assert_eq!(rows[1], MessageChunkRow { seq: 1, text: None, parts: Some("[]".into()) });
        let bad = |seqs: &[f64], lens: &[f64]| MessageChunkRow::from_js_packed(seqs, &texts, lens, &[], &[-1.0; 1]);
        assert_eq!(bad(&[0.5], &[1.0]).unwrap_err().kind(), ErrorKind::InvalidOffset);
        assert_eq!(bad(&[1.0], &[4.0]).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(bad(&[1.0], &[0.5]).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(bad(&[1.0, 2.0], &[1.0, 1.0]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn parts_rows_and_their_errors() {
        let parts = |json: &str| MessageChunkRow { seq: 9, text: Some(Text::new()), parts: Some(json.into()) };
        let ok = parts(
            r#"[{"type":"chunk","from":0,"seq":1,"text":"a"},{"type":"part","from":1,"seq":2,"part":1,"kind":"reasoning"},{"type":"chunk","from":2,"seq":3,"text":"r","part":1,"at":0}]"#,
        );
        let m = assemble_durable_message(None, None, 0, std::slice::from_ref(&ok)).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m.parts()[1].body, "r");
        // A text row after structure cannot be part 0 at its `from`.
        let after = MessageChunkRow { seq: 10, ..row(10, "x") };
        assert_eq!(assemble_durable_message(None, None, 0, &[ok, after]).unwrap_err().kind(), ErrorKind::InvalidField);
        let gap = parts(r#"[{"type":"meta","from":4,"seq":5}]"#);
        assert_eq!(assemble_durable_message(None, None, 0, &[gap]).unwrap_err().kind(), ErrorKind::InvalidOffset);
        let not_content = parts(r#"[{"type":"absent"}]"#);
        assert_eq!(
            assemble_durable_message(None, None, 0, &[not_content]).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        let doc = Text::from(r#"{"parts":[{"type":"text","text":"ab"}],"finishReason":"stop"}"#);
        let m = assemble_durable_message(Some(&"ab".into()), Some(&doc), 3, &[]).unwrap();
        assert_eq!((m.len(), m.finish_reason().cloned()), (3, Some("stop".into())));
    }

    /// The message at `at` by folding the produced frames cut there: what a reader holding `at`
    /// holds, by definition.
    fn folded_at(frames: &[MessageFrame], at: u64) -> Message {
        let mut m = Message::new();
        for f in frames {
            if let (Some(before), _) = f.cut_at(at) {
                m.apply(&before).unwrap();
            }
        }
        m
    }

    #[test]
    fn the_rows_at_every_offset_are_the_message_a_reader_holding_it_holds() {
        let frames = decode_frame_list(&Text::from(
            r#"[{"type":"chunk","from":0,"seq":2,"text":"ab"},{"type":"part","from":2,"seq":3,"part":1,"kind":"reasoning"},{"type":"chunk","from":3,"seq":6,"text":"xyz","part":1,"at":0},{"type":"part-end","from":6,"seq":7,"part":1},{"type":"set","from":7,"seq":8,"part":1,"value":{"state":"done"}},{"type":"chunk","from":8,"seq":11,"text":"c\ud83d\ude00","part":0,"at":2},{"type":"finish","from":11,"seq":12,"reason":"stop"}]"#,
        ))
        .unwrap();
        let whole = folded_at(&frames, u64::MAX);
        assert_eq!(whole.len(), 12);
        // Two checkpoints, each cutting a delta: 0..4 and 4..10, and a last one 10..12.
        let slice_row = |from: u64, to: u64| {
            let slice: Vec<MessageFrame> =
                frames.iter().filter_map(|f| f.cut_at(from).1).filter_map(|f| f.cut_at(to).0).collect();
            MessageChunkRow {
                seq: to,
                text: Some(Text::new()),
                parts: Some(super::super::codec::encode_frame_list(&slice)),
            }
        };
        let rows = [slice_row(4, 10), slice_row(0, 4), slice_row(10, 12)];
        for at in 0..=14 {
            let got = assemble_durable_message_at(None, None, 0, &rows, at).unwrap();
            assert_eq!(got, Some(folded_at(&frames, at)), "at {at}");
        }
        assert_eq!(assemble_durable_message(None, None, 0, &rows).unwrap(), whole);
        // A compacted message is known at 0 and at its length, and nowhere between.
        let doc = whole.document();
        let compacted = |at| assemble_durable_message_at(Some(&"abc".into()), Some(&doc), 12, &[], at).unwrap();
        assert_eq!(compacted(0), Some(Message::new()));
        assert_eq!(compacted(12).map(|m| m.document()), Some(doc.clone()));
        assert_eq!(compacted(40).map(|m| m.len()), Some(12));
        for at in 1..12 {
            assert_eq!(compacted(at), None, "at {at}");
        }
        // Text only: any prefix of the body and the text rows after it.
        let text =
            |at| assemble_durable_message_at(Some(&"hello".into()), None, 5, &[row(8, "xyz")], at).unwrap().unwrap();
        assert_eq!(text(3).text_body(), "hel");
        assert_eq!(text(6).text_body(), "hellox");
        assert_eq!(text(99).text_body(), "helloxyz");
    }
}
