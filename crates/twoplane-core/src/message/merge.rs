//! The display-rate merge (docs/contract.md §5, "Merged writes"): the frames a reader is due in
//! one write, as fewer frames that mean the same.
//!
//! A server that writes to a reader at most once per display interval hands it everything that
//! arrived meanwhile in one write; these rules make that write smaller without changing what any
//! reader folds from it.
//!
//! Guarantees:
//! - Two frames merge only when they are adjacent: a body chunk followed by the next chunk of the
//!   same part, contiguous both on the coordinate (`from` is the first one's `seq`) and in the
//!   part's body (`at` is the first one's `at` plus its length), become one chunk; a `durable`
//!   followed by a `durable` that is not behind it becomes the later one. Nothing else merges,
//!   and nothing is ever reordered or dropped: a structural event, an `open`, a terminal frame,
//!   or a chunk of another part ends the run in front of it.
//! - The merged frames fold to the same message, and every resume point the output carries is one
//!   the input carried (a merged chunk's is its last piece's), so `Last-Event-ID` and `?from=`
//!   taken from any event of the output mean what they mean without merging.
//! - A part 0 chunk at body offset `from` stays one (the shorthand of §8), so a single-text
//!   stream is still written in today's six-frame form; frames that do not merge are returned
//!   unchanged, so output with nothing to merge is the input, frame for frame.

use super::frame::MessageFrame;

/// Append `frame` to `out`, merged into `out`'s last frame where the module header allows.
pub fn push_merged(out: &mut Vec<MessageFrame>, frame: &MessageFrame) {
    if let Some(last) = out.last_mut() {
        if merge_into(last, frame) {
            return;
        }
    }
    out.push(frame.clone());
}

/// `frames` merged (see the module header).
pub fn merge_frames<'a>(frames: impl IntoIterator<Item = &'a MessageFrame>) -> Vec<MessageFrame> {
    let mut out = Vec::new();
    for frame in frames {
        push_merged(&mut out, frame);
    }
    out
}

/// Fold `next` into `last` when the two mean one frame; `false` (and `last` untouched) otherwise.
fn merge_into(last: &mut MessageFrame, next: &MessageFrame) -> bool {
    match (last, next) {
        (
            MessageFrame::Chunk { seq, part, at, text, .. },
            MessageFrame::Chunk { from: next_from, seq: next_seq, part: next_part, at: next_at, text: next_text },
        ) if next_part == part && next_from == seq && at.checked_add(text.len() as u64) == Some(*next_at) => {
            text.push_units(next_text.units());
            *seq = *next_seq;
            true
        }
        (MessageFrame::Durable { seq }, MessageFrame::Durable { seq: next_seq }) if next_seq >= seq => {
            *seq = *next_seq;
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::StreamStatus;
    use crate::message::frame::Event;

    fn chunk(from: u64, part: u32, at: u64, text: &str) -> MessageFrame {
        MessageFrame::chunk(from, part, at, text.into()).unwrap()
    }

    #[test]
    fn contiguous_chunks_of_one_part_become_one() {
        let merged = merge_frames(&[chunk(0, 0, 0, "Hel"), chunk(3, 0, 3, "lo"), chunk(5, 0, 5, "!")]);
        assert_eq!(merged, vec![chunk(0, 0, 0, "Hello!")]);
        // Still the shorthand: the six-frame form of a single-text stream.
        assert!(merged[0].to_frame().is_some());
    }

    #[test]
    fn a_part_boundary_a_gap_or_a_body_jump_ends_the_run() {
        let start =
            MessageFrame::Event { from: 2, event: Event::Start { part: 1, kind: "text".into(), value: vec![] } };
        let frames = [
            chunk(0, 0, 0, "ab"),
            start.clone(),
            chunk(3, 1, 0, "c"),
            chunk(4, 0, 2, "d"), // another part right after: not merged
            chunk(6, 0, 3, "e"), // a gap on the coordinate
            chunk(7, 0, 5, "f"), // a jump in the body
        ];
        assert_eq!(merge_frames(&frames), frames.to_vec());
        // Two parts whose numbers line up (the second begins where the first ended, on the
        // coordinate and at the same body offset) are still two parts.
        let aligned = [chunk(10, 1, 4, "ab"), chunk(12, 2, 6, "cd")];
        assert_eq!(merge_frames(&aligned), aligned.to_vec());
    }

    #[test]
    fn durables_collapse_to_the_later_and_terminals_stay() {
        let end = MessageFrame::End { seq: 4, status: StreamStatus::Complete, error: None };
        let frames = [
            chunk(0, 0, 0, "ab"),
            MessageFrame::Durable { seq: 1 },
            MessageFrame::Durable { seq: 2 },
            chunk(2, 0, 2, "cd"),
            MessageFrame::Durable { seq: 4 },
            MessageFrame::Durable { seq: 3 }, // behind: kept as it came
            end.clone(),
        ];
        assert_eq!(
            merge_frames(&frames),
            vec![
                chunk(0, 0, 0, "ab"),
                MessageFrame::Durable { seq: 2 },
                chunk(2, 0, 2, "cd"),
                MessageFrame::Durable { seq: 4 },
                MessageFrame::Durable { seq: 3 },
                end,
            ]
        );
    }

    #[test]
    fn push_merged_extends_what_it_holds() {
        let mut out = vec![chunk(0, 2, 7, "x")];
        push_merged(&mut out, &chunk(1, 2, 8, "yz"));
        assert_eq!(out, vec![chunk(0, 2, 7, "xyz")]);
    }
}
