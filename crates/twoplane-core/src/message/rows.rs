//! The durable message (docs/contract.md §8): chunk rows of a message, and the assembly of the
//! message from its row and chunk rows.
//!
//! A text row (no `parts`) is today's row, part 0 text; a parts row holds its slice of frames as
//! JSON. Assembly applies both by the rules of [`super::rules`], so a row set that no producer
//! could have written is an error, never a different message.

use super::codec::decode_frame_list;
use super::fold::Message;
use super::frame::MessageFrame;
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
    let mut message = match document {
        Some(doc) => Message::from_document(doc, seq)?,
        None => Message::from_text(body.cloned().unwrap_or_default()),
    };
    let seqs: Vec<f64> = chunks.iter().map(|c| c.seq as f64).collect();
    for i in assembly_order(&seqs) {
        let row = &chunks[i as usize];
        match &row.parts {
            None => {
                // Today's row: part 0 text at the end of the message, which is part 0's body
                // offset exactly while nothing structural has happened.
                let text = row.text.clone().unwrap_or_default();
                let from = message.len();
                message.apply(&MessageFrame::chunk(from, 0, from, text)?)?;
            }
            Some(json) => {
                for frame in decode_frame_list(json)? {
                    message.apply(&frame)?;
                }
            }
        }
    }
    Ok(message)
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
}
