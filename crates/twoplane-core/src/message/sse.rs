//! Message frames as SSE events (docs/contract.md §5 and §8): `id: <resume point>` when the frame
//! has one, then `data: <JSON>`, exactly as for the six frames, whose events stay byte-identical.

use std::fmt::Write as _;

use super::codec::encode_message_frame_into;
use super::frame::{message_resume_point, MessageFrame};

/// Append one message frame as one SSE event to `out`.
pub fn encode_message_event_into(out: &mut String, frame: &MessageFrame) {
    if let Some(id) = message_resume_point(frame) {
        // Writing into a String cannot fail.
        let _ = writeln!(out, "id: {id}");
    }
    out.push_str("data: ");
    encode_message_frame_into(out, frame);
    out.push_str("\n\n");
}

/// One message frame as one SSE event.
pub fn encode_message_event(frame: &MessageFrame) -> String {
    let mut out = String::new();
    encode_message_event_into(&mut out, frame);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Frame;
    use crate::message::frame::Event;
    use crate::sse::encode_event;

    #[test]
    fn events_of_todays_frames_are_todays_events() {
        for f in [Frame::chunk(3, "ab".into()).unwrap(), Frame::Durable { seq: 2 }, Frame::Absent] {
            assert_eq!(encode_message_event(&MessageFrame::from(f.clone())), encode_event(&f));
        }
        let e = MessageFrame::Event { from: 4, event: Event::Finish { reason: "stop".into() } };
        assert_eq!(
            encode_message_event(&e),
            "id: 5\ndata: {\"type\":\"finish\",\"from\":4,\"seq\":5,\"reason\":\"stop\"}\n\n"
        );
    }
}
