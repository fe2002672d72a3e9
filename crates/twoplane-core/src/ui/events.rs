//! UI message chunks as server-sent events (docs/ai-sdk.md, "Resuming"): how the resume route
//! writes them, one rule for every server that writes them.
//!
//! Guarantees:
//! - A group of chunks (what one step of the stream adds: a replay, one frame's chunks, the end)
//!   is one `data: <chunk>` event per chunk, and only its last carries `id:`, the message's length
//!   the group brings the reader to (docs/contract.md §8), so a `Last-Event-ID` is always a whole
//!   group's. An empty group writes nothing.
//! - The stream ends with [`DONE_EVENT`], as the AI SDK's own UI message stream does.

use crate::json::{write_json_value, JsonValue};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_value;

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
}
