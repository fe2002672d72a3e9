//! The frames a stored message was made of, in coordinate order (docs/contract.md §9): what a
//! producer that goes on with an ended (or interrupted) stream starts from.
//!
//! Guarantees: the frames fold, by the rules of [`super::rules`], to the message the rows
//! assemble to (`assemble_durable_message`), and cover the coordinate from 0 to its end with no
//! gap; rows no producer could have written are an error. A sealed document gives back the frames
//! its spans keep ([`super::spans`]); one without them (compacted by an older version, or edited
//! since) gives `None`: such a message is known only whole, and cannot be continued exactly.

use super::codec::decode_frame_list;
use super::fold::Message;
use super::frame::MessageFrame;
use super::rows::MessageChunkRow;
use super::spans::document_frames;
use crate::error::Result;
use crate::splice::assembly_order;
use crate::text::Text;

/// The frames of a stored message: its `body` (part 0 text), or its sealed `document`'s frames
/// when it has one, then its chunk rows in ascending `seq`. `None` for a document without spans
/// (see the module header).
pub fn stored_frames(
    body: Option<&Text>,
    document: Option<&Text>,
    chunks: &[MessageChunkRow],
) -> Result<Option<Vec<MessageFrame>>> {
    let mut frames = Vec::new();
    let mut message = Message::new();
    let mut push = |frame: MessageFrame, frames: &mut Vec<MessageFrame>| -> Result<()> {
        message.apply(&frame)?;
        frames.push(frame);
        Ok(())
    };
    match document.filter(|d| !d.is_empty()) {
        Some(document) => match document_frames(document)? {
            Some((sealed, _)) => {
                for frame in sealed {
                    push(frame, &mut frames)?;
                }
            }
            None => return Ok(None),
        },
        None => {
            if let Some(body) = body.filter(|b| !b.is_empty()) {
                push(MessageFrame::chunk(0, 0, 0, body.clone())?, &mut frames)?;
            }
        }
    }
    let seqs: Vec<f64> = chunks.iter().map(|c| c.seq as f64).collect();
    for i in assembly_order(&seqs) {
        let row = &chunks[i as usize];
        match &row.parts {
            None => {
                let text = row.text.clone().unwrap_or_default();
                if !text.is_empty() {
                    let from = message_len(&frames);
                    push(MessageFrame::chunk(from, 0, from, text)?, &mut frames)?;
                }
            }
            Some(json) => {
                for frame in decode_frame_list(json)? {
                    push(frame, &mut frames)?;
                }
            }
        }
    }
    Ok(Some(frames))
}

/// The coordinate's end after `frames`.
fn message_len(frames: &[MessageFrame]) -> u64 {
    frames.last().and_then(|f| f.span()).map_or(0, |(_, seq)| seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::rows::assemble_durable_message;

    fn row(seq: u64, text: Option<&str>, parts: Option<&str>) -> MessageChunkRow {
        MessageChunkRow { seq, text: text.map(Text::from), parts: parts.map(Text::from) }
    }

    #[test]
    fn a_body_and_rows_are_the_frames_that_fold_to_what_they_assemble() {
        let rows = [
            row(5, Some("lo"), None),
            row(3, Some("l"), None),
            row(
                8,
                Some(""),
                Some(
                    r#"[{"type":"part","from":5,"seq":6,"part":1,"kind":"reasoning"},{"type":"chunk","from":6,"seq":8,"text":"ok","part":1,"at":0}]"#,
                ),
            ),
        ];
        let body = Text::from("He");
        let frames = stored_frames(Some(&body), None, &rows).unwrap().unwrap();
        let mut folded = Message::new();
        for f in &frames {
            folded.apply(f).unwrap();
        }
        assert_eq!(folded, assemble_durable_message(Some(&body), None, 0, &rows).unwrap());
        assert_eq!(message_len(&frames), 8);
        assert_eq!(folded.parts()[0].body, "Hello");
    }

    #[test]
    fn a_compacted_document_is_known_only_whole_and_bad_rows_are_errors() {
        let doc = Text::from(r#"{"parts":[{"type":"text","text":"a"}]}"#);
        assert_eq!(stored_frames(None, Some(&doc), &[]).unwrap(), None);
        let gap = row(9, Some(""), Some(r#"[{"type":"meta","from":4,"seq":5}]"#));
        assert!(stored_frames(None, None, &[gap]).is_err());
        assert_eq!(stored_frames(None, None, &[]).unwrap(), Some(vec![]));
    }
}
