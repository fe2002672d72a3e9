//! UI message chunks as server-sent events (docs/ai-sdk.md, "Resuming"): how the resume route
//! writes them, one rule for every server that writes them, and every path of a server (a hosted
//! stream's join and its log, a subscription of frames, the store) writes them by [`UiEvents`].
//!
//! Guarantees:
//! - A group of chunks (what one step of the stream adds: a replay, one frame's chunks, the end)
//!   is one `data: <chunk>` event per chunk, and only its last carries `id:`, the message's length
//!   the group brings the reader to (docs/contract.md §8), so a `Last-Event-ID` is always a whole
//!   group's. An empty group writes nothing.
//! - The stream ends with [`DONE_EVENT`], as the AI SDK's own UI message stream does.
//! - Replay, advance, end ([`UiEvents`]): a reader that holds the message `held` and joins a
//!   stream whose message is now `now` gets, in a new response (`fresh`), `start` and `held` as
//!   one group at `held`'s length; then, when `now` is longer, what takes it from `held` to `now`
//!   as one group at `now`'s length (a response under way gets only that). Each later frame is
//!   one group at the offset it ends at (one no reader sees, or one the message's rules refuse,
//!   writes nothing); the end is its end chunks as one group at the message's length, then
//!   [`DONE_EVENT`].

use super::egress::UiEgress;
use crate::frame::StreamStatus;
use crate::json::{write_json_value, JsonValue};
use crate::message::{Message, MessageFrame};
use crate::text::Text;

/// The event that ends a UI message stream.
pub const DONE_EVENT: &str = "data: [DONE]\n\n";

/// Append `chunks` to `out` as one group whose last event carries `id: at`.
pub fn write_group(out: &mut String, chunks: &[JsonValue], at: u64) {
    let Some((last, before)) = chunks.split_last() else { return };
    for c in before {
        out.push_str("data: ");
        write_json_value(out, c);
        out.push_str("\n\n");
    }
    out.push_str("id: ");
    out.push_str(&at.to_string());
    out.push_str("\ndata: ");
    write_json_value(out, last);
    out.push_str("\n\n");
}

/// Where a UI reader got to: the message length of the last group it was handed, whether that
/// was the stream's end (`[DONE]`), and whether it was handed anything at all (its replay: a
/// relayed stream that never answered, or `absent`, hands nothing). Anything short of the end can
/// be continued from `at`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UiOutcome {
    pub at: u64,
    pub ended: bool,
    pub started: bool,
}

/// A UI reader's events (see the module guarantees): the message as the reader holds it, and the
/// rule its events follow, from its join to its end.
#[derive(Clone, Debug, Default)]
pub struct UiEvents {
    egress: UiEgress,
}

impl UiEvents {
    /// A reader that holds nothing and was written nothing.
    pub fn new() -> UiEvents {
        UiEvents::default()
    }

    /// A reader that already holds `message` (its events were written elsewhere): what a stream
    /// keeps to encode its frames once for all its UI readers.
    pub fn holding(message_id: &Text, message: Message) -> UiEvents {
        let mut egress = UiEgress::new();
        // The replay's chunks are not wanted, only the state it leaves (what it sent, `finish`).
        drop(egress.replay(message_id, message));
        UiEvents { egress }
    }

    /// The join of a reader that holds `held`, to a stream whose message is now `now` (`None`:
    /// `held` itself), its events appended to `out`: with `fresh` (a new response), `start` and
    /// `held` as one group at `held`'s length; then, when `now` is longer, the chunks that take
    /// the reader there as one group at `now`'s length.
    pub fn join(out: &mut String, message_id: &Text, held: Message, now: Option<&Message>, fresh: bool) -> UiEvents {
        let at = held.len();
        let mut egress = UiEgress::new();
        let first = egress.replay(message_id, held);
        if fresh {
            write_group(out, &first, at);
        }
        if let Some(now) = now.filter(|now| now.len() > at) {
            let rest = egress.advance_to(now.clone());
            write_group(out, &rest, egress.message().len());
        }
        UiEvents { egress }
    }

    /// The events of one later frame appended to `out`: a chunk or an event is one group at the
    /// offset it ends at (nothing when it changes nothing a reader sees, or the message's rules
    /// refuse it: a relay's doing); an `end` is [`UiEvents::end`]; any other frame writes
    /// nothing. Whether it was the stream's `end`.
    pub fn frame(&mut self, out: &mut String, frame: &MessageFrame) -> bool {
        match frame {
            MessageFrame::Chunk { .. } | MessageFrame::Event { .. } => {
                if let Ok(chunks) = self.egress.frame(frame) {
                    write_group(out, &chunks, frame.span().map_or(0, |(_, seq)| seq));
                }
                false
            }
            MessageFrame::End { status, error, .. } => {
                self.end(out, *status, error.as_ref());
                true
            }
            _ => false,
        }
    }

    /// The stream's end, appended to `out`: its end chunks as one group at the message's length,
    /// then [`DONE_EVENT`].
    pub fn end(&mut self, out: &mut String, status: StreamStatus, error: Option<&Text>) {
        let chunks = self.egress.end(status, error);
        write_group(out, &chunks, self.at());
        out.push_str(DONE_EVENT);
    }

    /// The message as the reader holds it.
    pub fn message(&self) -> &Message {
        self.egress.message()
    }

    /// The length of the message the reader holds.
    pub fn at(&self) -> u64 {
        self.egress.message().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_value;
    use crate::message::MessageLog;

    #[test]
    fn only_a_groups_last_event_carries_its_id() {
        let chunks: Vec<JsonValue> =
            ["{\"type\":\"text-start\",\"id\":\"t\"}", "{\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"hi\"}"]
                .iter()
                .map(|s| parse_value(s).unwrap())
                .collect();
        let mut out = String::new();
        write_group(&mut out, &chunks, 3);
        write_group(&mut out, &[], 9);
        assert_eq!(
            out,
            "data: {\"type\":\"text-start\",\"id\":\"t\"}\n\nid: 3\ndata: {\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"hi\"}\n\n"
        );
    }

    /// A text message of `n` units, grown a unit at a time, and its frames.
    fn text_log(n: usize) -> MessageLog {
        let mut log = MessageLog::new();
        for _ in 0..n {
            log.delta(0, Text::from("a")).unwrap();
        }
        log
    }

    fn ids(out: &str) -> Vec<u64> {
        out.lines().filter_map(|l| l.strip_prefix("id: ")).map(|n| n.parse().unwrap()).collect()
    }

    #[test]
    fn a_fresh_join_replays_what_the_reader_holds_then_advances_to_now() {
        let log = text_log(5);
        let id = Text::from("m");
        let mut out = String::new();
        let events = UiEvents::join(&mut out, &id, log.message_at(2), Some(&log.message_at(4)), true);
        assert_eq!(ids(&out), [2, 4]);
        assert!(out.starts_with("data: {\"type\":\"start\",\"messageId\":\"m\"}\n\n"));
        assert_eq!(events.at(), 4);
        assert_eq!(events.message(), &log.message_at(4));
        // The response under way gets the same, without its first group.
        let mut tail = String::new();
        drop(UiEvents::join(&mut tail, &id, log.message_at(2), Some(&log.message_at(4)), false));
        let first = out.find("\n\n").map(|i| i + 2).unwrap();
        let first = out[first..].find("id: 2\n").map(|i| first + i).unwrap();
        let first = first + out[first..].find("\n\n").unwrap() + 2;
        assert_eq!(&out[first..], tail);
    }

    #[test]
    fn a_join_at_now_writes_one_group_and_nothing_when_under_way() {
        let log = text_log(3);
        let id = Text::from("m");
        let mut out = String::new();
        drop(UiEvents::join(&mut out, &id, log.message_at(3), None, true));
        assert_eq!(ids(&out), [3]);
        let mut tail = String::new();
        drop(UiEvents::join(&mut tail, &id, log.message_at(3), Some(&log.message_at(3)), false));
        assert_eq!(tail, "");
        // A `now` shorter than what the reader holds takes it nowhere.
        drop(UiEvents::join(&mut tail, &id, log.message_at(3), Some(&log.message_at(1)), false));
        assert_eq!(tail, "");
    }

    #[test]
    fn frames_are_groups_at_their_end_and_the_end_is_done() {
        let log = text_log(3);
        let id = Text::from("m");
        let mut out = String::new();
        let mut events = UiEvents::join(&mut out, &id, log.message_at(1), None, true);
        for f in &log.frames()[1..] {
            assert!(!events.frame(&mut out, f));
        }
        assert!(!events.frame(&mut out, &MessageFrame::Durable { seq: 3 }));
        let end = MessageFrame::End { seq: 3, status: StreamStatus::Complete, error: None };
        assert!(events.frame(&mut out, &end));
        assert_eq!(ids(&out), [1, 2, 3, 3]);
        assert!(out.ends_with(DONE_EVENT));
        assert_eq!(out.matches(DONE_EVENT).count(), 1);
        // The same end, said directly.
        let mut again = String::new();
        let mut events = UiEvents::join(&mut again, &id, log.message_at(1), Some(&log.message_at(3)), true);
        events.end(&mut again, StreamStatus::Complete, None);
        assert!(again.ends_with(&format!("id: 3\ndata: {{\"type\":\"finish\"}}\n\n{DONE_EVENT}")));
    }

    #[test]
    fn holding_writes_nothing_and_follows_from_there() {
        let log = text_log(2);
        let id = Text::from("m");
        let mut held = UiEvents::holding(&id, log.message_at(1));
        let mut joined = UiEvents::join(&mut String::new(), &id, log.message_at(1), None, false);
        let (mut a, mut b) = (String::new(), String::new());
        held.frame(&mut a, &log.frames()[1]);
        joined.frame(&mut b, &log.frames()[1]);
        assert_eq!(a, b);
        assert_eq!(ids(&a), [2]);
    }
}
