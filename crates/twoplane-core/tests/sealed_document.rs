//! The sealed document (docs/contract.md §8, `spans`): written by a seal from the producer's log,
//! it cuts to the produced message at every offset and gives back the frames it was made of; a
//! document without spans, or one edited so that its spans no longer fold to its parts, is known
//! only whole. (Here rather than beside `message::spans`, whose tests would use the log, the rows
//! and the stored frames that use it: the module graph stays one way.)
use twoplane_core::json::parse_value;
use twoplane_core::message::{
    assemble_durable_message_at, document_frames, stored_frames, Attrs, Event, MessageFrame, MessageLog,
};
use twoplane_core::Text;

fn attrs(json: &str) -> Attrs {
    parse_value(json).unwrap().as_object().unwrap().to_vec()
}

/// An AI SDK-like message: part 0 untouched, a reasoning part and a tool call whose input
/// deltas interleave, its output set later, a transient part, metadata and a finish.
fn produced() -> MessageLog {
    let mut log = MessageLog::new();
    let (r, _) = log.start("reasoning".into(), vec![]).unwrap();
    log.delta(r, "thi".into()).unwrap();
    let (t, _) = log.start("tool-search".into(), attrs(r#"{"toolCallId":"c1"}"#)).unwrap();
    log.delta(t, "{\"q\":".into()).unwrap();
    log.delta(r, Text::from_units(vec![0x6E, 0xD83D])).unwrap();
    log.delta(r, Text::from_units(vec![0xDE00, 0x6B])).unwrap();
    log.delta(t, "1}".into()).unwrap();
    log.event(Event::End { part: r, value: vec![] }).unwrap();
    log.event(Event::Set { part: t, value: attrs(r#"{"state":"input-available","input":{"q":1}}"#) }).unwrap();
    log.event(Event::Transient { kind: Some("data-t".into()), value: attrs(r#"{"data":1}"#) }).unwrap();
    let (x, _) = log.start("text".into(), vec![]).unwrap();
    log.delta(x, "ok".into()).unwrap();
    log.event(Event::Set { part: t, value: attrs(r#"{"state":"output-available","output":[2]}"#) }).unwrap();
    log.event(Event::Meta { value: attrs(r#"{"m":1}"#) }).unwrap();
    log.event(Event::Finish { reason: "stop".into() }).unwrap();
    log
}

#[test]
fn a_sealed_document_cuts_exactly_at_every_offset() {
    let log = produced();
    let doc = log.sealed_document();
    let len = log.len();
    let whole = log.message().document().to_string_lossy();
    let sealed = doc.to_string_lossy();
    // The document the app reads, then the spans: the parts are written once.
    assert!(sealed.starts_with(&whole[..whole.len() - 1]), "{sealed}");
    assert!(sealed.contains(r#""spans":[{"type":"part","from":0,"seq":1,"part":1,"kind":"reasoning"},[1,3],"#));
    assert!(sealed.contains(r#"{"type":"transient","from":"#) && !sealed.contains(r#""data":1"#));
    for at in 0..len {
        let cut = assemble_durable_message_at(None, Some(&doc), len, &[], at).unwrap();
        assert_eq!(cut, Some(log.message_at(at)), "at {at}");
    }
    let at_end = assemble_durable_message_at(None, Some(&doc), len, &[], len).unwrap().unwrap();
    assert_eq!(at_end.document(), log.message().document());
    // Back to the frames the producer made, which fold to the message.
    let frames = stored_frames(None, Some(&doc), &[]).unwrap().unwrap();
    let stored: Vec<MessageFrame> = log
        .frames_from(0)
        .into_iter()
        .map(|f| match f {
            MessageFrame::Event { from, event } => MessageFrame::Event { from, event: event.stored() },
            other => other,
        })
        .collect();
    assert_eq!(frames, stored);
    assert_eq!(document_frames(&doc).unwrap().map(|(_, n)| n), Some(len));
}

#[test]
fn a_document_without_spans_or_edited_since_is_known_only_whole() {
    let log = produced();
    let len = log.len();
    let plain = log.message().document();
    assert_eq!(document_frames(&plain).unwrap(), None);
    assert_eq!(assemble_durable_message_at(None, Some(&plain), len, &[], 3).unwrap(), None);
    assert_eq!(stored_frames(None, Some(&plain), &[]).unwrap(), None);
    let sealed = log.sealed_document().to_string_lossy();
    // A body made longer after the seal, spans that name a part the parts do not have, spans
    // longer than the bodies, an event out of place: none of them is read as a cut.
    let edits = [
        sealed.replacen("\"ok\"", "\"okay\"", 1),
        sealed.replacen("[1,3]", "[7,3]", 1),
        sealed.replacen("[1,3]", "[1,30]", 1),
        sealed.replacen(r#""from":0,"seq":1,"part":1"#, r#""from":1,"seq":2,"part":1"#, 1),
        sealed.replacen("\"spans\":[", "\"spans\":[7,", 1),
    ];
    for edited in edits {
        assert_ne!(edited, sealed);
        let edited = Text::from(edited.as_str());
        assert_eq!(document_frames(&edited).unwrap(), None, "{edited}");
        assert_eq!(assemble_durable_message_at(None, Some(&edited), len, &[], 3).unwrap(), None);
    }
    assert!(document_frames(&Text::from("[1]")).is_err(), "not a document at all");
}

#[test]
fn a_text_only_start_and_a_listed_part_0_number_the_same() {
    // Part 0 written to before anything structural: listed, so no shift.
    let mut log = MessageLog::new();
    log.delta(0, "ab".into()).unwrap();
    let (r, _) = log.start("reasoning".into(), vec![]).unwrap();
    log.delta(r, "x".into()).unwrap();
    log.delta(0, "c".into()).unwrap();
    let doc = log.sealed_document();
    assert!(doc.to_string_lossy().contains(r#""spans":[[0,2],"#));
    for at in 0..log.len() {
        assert_eq!(
            assemble_durable_message_at(None, Some(&doc), log.len(), &[], at).unwrap(),
            Some(log.message_at(at))
        );
    }
}
