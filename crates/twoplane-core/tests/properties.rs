//! Property tests of the two invariants and of the conform and reader state machines.
//!
//! - S (splice): durable text at the join ++ the frames delivered from it == produced text, for
//!   every join offset and join time, with the reader in the loop and connections dropping and
//!   resuming from the reader's own resume point.
//! - P (prefix): what the reader renders while live is always a prefix of the produced text.
//! - Conform: relayed sequences built from the true frames of a production (replays, overlaps,
//!   gaps, drops, duplicates, reordering, truncation; the text itself never forged) never make a
//!   reader hold text that is not a prefix, an `end` that passes means the whole text arrived,
//!   and the output always obeys the frame contract.

use proptest::prelude::*;
use twoplane_core::conform::RelayConform;
use twoplane_core::reader::{ReaderAction, StopReason, TextReader};
use twoplane_core::{Frame, StreamStatus, Text};

/// Deltas as a model emits them: ASCII, CJK, astral characters (surrogate pairs), and the odd
/// unpaired surrogate JavaScript can produce.
fn delta() -> impl Strategy<Value = Text> {
    let piece = prop_oneof![
        4 => "[a-z ]{1,6}".prop_map(|s| Text::from(s.as_str())),
        2 => "[漢字かなカナ]{1,3}".prop_map(|s| Text::from(s.as_str())),
        2 => "[😀🎉👩🚀]{1,2}".prop_map(|s| Text::from(s.as_str())),
        1 => (0xD800u16..0xE000).prop_map(|u| Text::from_units(vec![u])),
    ];
    prop::collection::vec(piece, 1..3).prop_map(|parts| {
        let mut t = Text::new();
        for p in parts {
            t.push_units(p.units());
        }
        t
    })
}

/// A produced text as its deltas, plus the durable length after each delta (a checkpoint
/// schedule: non-decreasing, never past what was produced).
fn production() -> impl Strategy<Value = (Vec<Text>, Vec<usize>)> {
    prop::collection::vec((delta(), any::<bool>(), 0u8..=100), 1..40).prop_map(|steps| {
        let mut deltas = Vec::new();
        let mut durable = Vec::new();
        let mut produced = 0usize;
        let mut d = 0usize;
        for (delta, checkpoint, frac) in steps {
            produced += delta.len();
            deltas.push(delta);
            if checkpoint {
                d = d.max(produced * frac as usize / 100);
            }
            durable.push(d);
        }
        (deltas, durable)
    })
}

fn concat(deltas: &[Text]) -> Text {
    let mut t = Text::new();
    for d in deltas {
        t.push_units(d.units());
    }
    t
}

fn prefix(t: &Text, len: usize) -> Text {
    Text::from_slice(&t.units()[..len.min(t.len())])
}

/// What a hosting plane sends a subscriber joining at `from` after `k` deltas: the atomic
/// replay, then the live frames of the deltas that follow, then the seal.
fn subscription(deltas: &[Text], durable: &[usize], k: usize, from: usize) -> Vec<Frame> {
    let produced = concat(&deltas[..k]);
    let seq = produced.len();
    let d = if k == 0 { 0 } else { durable[k - 1] };
    let from = from.min(seq);
    let mut frames = vec![Frame::Open {
        stream_id: "s".into(),
        from: from as u64,
        seq: seq as u64,
        durable_seq: d as u64,
        ended: false,
    }];
    if seq > from {
        frames.push(Frame::chunk(from as u64, Text::from_slice(&produced.units()[from..])).unwrap());
    }
    if d > from {
        frames.push(Frame::Durable { seq: d as u64 });
    }
    let mut pos = seq as u64;
    let mut last_d = d;
    for (i, delta) in deltas.iter().enumerate().skip(k) {
        let f = Frame::chunk(pos, delta.clone()).unwrap();
        pos += delta.len() as u64;
        frames.push(f);
        if durable[i] > last_d {
            last_d = durable[i];
            frames.push(Frame::Durable { seq: last_d as u64 });
        }
    }
    frames.push(Frame::End { seq: pos, status: StreamStatus::Complete, error: None });
    frames
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// S and P with the reader in the loop, across dropped connections.
    #[test]
    fn splice_and_prefix_hold_for_every_join((deltas, durable) in production(), join_at in any::<prop::sample::Index>(), drops in prop::collection::vec(any::<prop::sample::Index>(), 0..4)) {
        let produced = concat(&deltas);
        let k = join_at.index(deltas.len() + 1);
        let durable_len = if k == 0 { 0 } else { durable[k - 1] };
        let mut reader = TextReader::new("s".into(), prefix(&produced, durable_len));
        // Each drop cuts the current connection after some frames; the next connection is a
        // fresh subscription from the reader's resume point at a later moment.
        let mut moment = k;
        let mut cuts: Vec<usize> = drops.iter().map(|i| i.index(64)).collect();
        cuts.sort_unstable();
        let mut ended = false;
        for attempt in 0..=cuts.len() {
            let from = reader.core().resume_from() as usize;
            let frames = subscription(&deltas, &durable, moment, from);
            let limit = cuts.get(attempt).copied().unwrap_or(usize::MAX);
            for (n, f) in frames.iter().enumerate() {
                if n >= limit {
                    break;
                }
                let action = reader.feed(f);
                // P: the rendered text is a prefix of what was produced, whatever the store shows.
                let d_now = if moment == 0 { 0 } else { durable[moment - 1] };
                let shown = reader.rendered(&"s".into(), &produced.units()[..d_now]);
                prop_assert!(produced.units().starts_with(shown.units()));
                if let ReaderAction::Stop(reason) = action {
                    prop_assert_eq!(reason, StopReason::End);
                    ended = true;
                    break;
                }
            }
            if ended {
                break;
            }
            moment = (moment + 1).min(deltas.len());
        }
        if !ended {
            // The last connection runs to the seal.
            let frames = subscription(&deltas, &durable, moment, reader.core().resume_from() as usize);
            for f in &frames {
                reader.feed(f);
            }
        }
        // S: the durable text at the join plus everything delivered is the produced text.
        prop_assert_eq!(reader.text(), &produced);
    }

    /// Conform over relayed sequences derived from the true frames; the reader behind it.
    #[test]
    fn conform_keeps_readers_on_a_prefix((deltas, durable) in production(), join_at in any::<prop::sample::Index>(), ops in prop::collection::vec((0u8..8, any::<prop::sample::Index>()), 0..30), finish in 0u8..3) {
        let produced = concat(&deltas);
        let truth = subscription(&deltas, &durable, 0, 0);
        let join = join_at.index(produced.len() + 1);
        let mut relayed: Vec<Frame> = truth.clone();
        for (op, at) in ops {
            if relayed.is_empty() {
                break;
            }
            let i = at.index(relayed.len());
            match op {
                0 => { relayed.remove(i); }                                  // drop
                1 => { let f = relayed[i].clone(); relayed.insert(i, f); }   // duplicate
                2 => { let f = relayed.remove(i); let j = at.index(relayed.len() + 1); relayed.insert(j, f); } // reorder
                3 => { relayed.truncate(i); }                                // truncate
                4 => {                                                       // replay an earlier span
                    let to = at.index(produced.len() + 1);
                    let from = to / 2;
                    relayed.insert(i, Frame::chunk(from as u64, Text::from_slice(&produced.units()[from..to])).unwrap());
                }
                5 => {                                                       // overlap the next frame
                    if let Frame::Chunk { from, seq, .. } = relayed[i].clone() {
                        let back = (from as usize).min(3);
                        let start = from as usize - back;
                        relayed[i] = Frame::chunk(start as u64, Text::from_slice(&produced.units()[start..seq as usize])).unwrap();
                    }
                }
                6 => { relayed.insert(i, Frame::Durable { seq: at.index(produced.len() + 2) as u64 }); }
                _ => { relayed.insert(i, Frame::Open { stream_id: "s".into(), from: at.index(produced.len() + 1) as u64, seq: produced.len() as u64, durable_seq: 0, ended: false }); }
            }
        }
        let mut conform = RelayConform::new("s".into(), join as u64);
        let mut reader = TextReader::new("s".into(), prefix(&produced, join));
        let mut out: Vec<Frame> = Vec::new();
        let feed_out = |frames: Vec<Frame>, reader: &mut TextReader, out: &mut Vec<Frame>| -> Result<(), TestCaseError> {
            for f in frames {
                reader.feed(&f);
                prop_assert!(produced.units().starts_with(reader.text().units()), "reader left the prefix");
                out.push(f);
            }
            Ok(())
        };
        for f in relayed {
            let c = conform.feed(f);
            feed_out(c.frames, &mut reader, &mut out)?;
        }
        let tail = match finish { 0 => conform.end(), 1 => conform.fail(), _ => Default::default() };
        feed_out(tail.frames, &mut reader, &mut out)?;

        // An `end` that conform passed means the whole text arrived.
        if out.iter().any(|f| matches!(f, Frame::End { .. })) {
            prop_assert_eq!(reader.text(), &produced);
        }
        // The frame contract: open first unless the only frame is a bare stale/absent; at most
        // one terminal, nothing after it; exactly one once the source was closed out.
        if let Some(first) = out.first() {
            let bare = matches!(first, Frame::Stale { .. } | Frame::Absent) && out.len() == 1;
            prop_assert!(bare || matches!(first, Frame::Open { .. }), "first frame {:?}", first);
        }
        let terminals: Vec<usize> = out.iter().enumerate().filter(|(_, f)| f.is_terminal()).map(|(i, _)| i).collect();
        prop_assert!(terminals.len() <= 1);
        if let Some(&t) = terminals.first() {
            prop_assert_eq!(t, out.len() - 1);
        }
        if finish < 2 {
            prop_assert_eq!(terminals.len(), 1);
        }
        prop_assert_eq!(out.iter().filter(|f| matches!(f, Frame::Open { .. })).count() <= 1, true);
    }
}
