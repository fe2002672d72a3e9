//! Property tests of the two invariants and of the conform and reader state machines.
//!
//! - S (splice): durable text at the join ++ the frames delivered from it == produced text, for
//!   every join offset and join time, with the reader in the loop and connections dropping
//!   anywhere in their frames and resuming from the reader's own resume point, or from further
//!   back (a replay the reader must absorb), after any number of deltas went by unseen.
//! - P (prefix): what the reader renders only ever grows: each rendered text extends the one
//!   before it (and is a prefix of the produced text, never shorter than the store's text).
//! - Conform: relayed sequences built from the true frames of a production (replays, overlaps,
//!   gaps, drops, duplicates, reordering, truncation; the text itself never forged) never make a
//!   reader hold text that is not a prefix or take back text it held, the `durable` claims that
//!   pass never decrease nor outrun the delivered text, an `end` that passes means the whole
//!   text arrived, and the output always obeys the frame contract.
//!
//! Checkpoints fall anywhere, including between the halves of a surrogate pair. The case count
//! is 256 unless `PROPTEST_CASES` says otherwise (raise it for a longer search).

mod common;

use proptest::prelude::*;
use twoplane_core::conform::RelayConform;
use twoplane_core::reader::{ReaderAction, StopReason, TextReader};
use twoplane_core::scenarios::relay_mutations;
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
    common::joined(piece)
}

/// A produced text as its deltas, plus the durable length after each delta (a checkpoint
/// schedule: non-decreasing, never past what was produced, and otherwise anywhere: a checkpoint
/// may land at any offset between the last one and the produced length).
fn production() -> impl Strategy<Value = (Vec<Text>, Vec<usize>)> {
    prop::collection::vec((delta(), prop::option::of(any::<prop::sample::Index>())), 1..40).prop_map(|steps| {
        let mut deltas = Vec::new();
        let mut durable = Vec::new();
        let mut produced = 0usize;
        let mut d = 0usize;
        for (delta, checkpoint) in steps {
            produced += delta.len();
            deltas.push(delta);
            if let Some(at) = checkpoint {
                d += at.index(produced - d + 1);
            }
            durable.push(d);
        }
        (deltas, durable)
    })
}

/// The durable length once `k` deltas were produced.
fn durable_at(durable: &[usize], k: usize) -> usize {
    if k == 0 {
        0
    } else {
        durable[k - 1]
    }
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
/// replay, then the live frames of the deltas that follow, then the seal. Each frame comes with
/// the number of deltas produced when it was sent.
fn subscription(deltas: &[Text], durable: &[usize], k: usize, from: usize) -> Vec<(Frame, usize)> {
    let produced = concat(&deltas[..k]);
    let seq = produced.len();
    let d = durable_at(durable, k);
    let from = from.min(seq);
    let mut frames = vec![(
        Frame::Open { stream_id: "s".into(), from: from as u64, seq: seq as u64, durable_seq: d as u64, ended: false },
        k,
    )];
    if seq > from {
        frames.push((Frame::chunk(from as u64, Text::from_slice(&produced.units()[from..])).unwrap(), k));
    }
    if d > from {
        frames.push((Frame::Durable { seq: d as u64 }, k));
    }
    let mut pos = seq as u64;
    let mut last_d = d;
    for (i, delta) in deltas.iter().enumerate().skip(k) {
        let f = Frame::chunk(pos, delta.clone()).unwrap();
        pos += delta.len() as u64;
        frames.push((f, i + 1));
        if durable[i] > last_d {
            last_d = durable[i];
            frames.push((Frame::Durable { seq: last_d as u64 }, i + 1));
        }
    }
    frames.push((Frame::End { seq: pos, status: StreamStatus::Complete, error: None }, deltas.len()));
    frames
}

/// One dropped connection: where it is cut (any frame, or none), how many deltas go by before
/// the next one joins, and how far behind the reader's resume point the next one asks to start
/// (`None`: exactly at it).
type Cut = (prop::sample::Index, prop::sample::Index, Option<prop::sample::Index>);

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// S and P with the reader in the loop, across dropped connections.
    #[test]
    fn splice_and_prefix_hold_for_every_join((deltas, durable) in production(), join_at in any::<prop::sample::Index>(), drops in prop::collection::vec(any::<Cut>(), 0..6)) {
        let produced = concat(&deltas);
        let n = deltas.len();
        let k = join_at.index(n + 1);
        let id: Text = "s".into();
        let mut reader = TextReader::new(id.clone(), prefix(&produced, durable_at(&durable, k)));
        // `now`: deltas produced so far. Time only moves forward, across connections too.
        let mut now = k;
        let mut shown = reader.rendered(&id, &produced.units()[..durable_at(&durable, now)]);
        let mut ended = false;
        // Each drop cuts its connection after some frames; the next connection is a fresh
        // subscription, possibly after many deltas went by, from the reader's resume point or
        // from further back. The last connection runs to the seal.
        for attempt in 0..=drops.len() {
            let resume = reader.core().resume_from() as usize;
            let (limit, from) = match drops.get(attempt) {
                Some((cut, _, back)) => (Some(cut), resume - back.map_or(0, |b| b.index(resume + 1))),
                None => (None, resume),
            };
            let frames = subscription(&deltas, &durable, now, from);
            let limit = limit.map_or(frames.len(), |cut| cut.index(frames.len() + 1));
            for (f, sent_at) in &frames[..limit] {
                now = now.max(*sent_at);
                let action = reader.feed(f);
                // P: against the store as it stands when the frame arrives, the rendered text
                // is a prefix of what was produced, holds at least the store's text, and extends
                // what was rendered before.
                let store = &produced.units()[..durable_at(&durable, now)];
                let next = reader.rendered(&id, store);
                prop_assert!(produced.units().starts_with(next.units()), "rendered text that was never produced");
                prop_assert!(next.units().starts_with(store), "rendered less than the store holds");
                prop_assert!(next.units().starts_with(shown.units()), "P: the rendered text took back {} units", shown.len() - next.len().min(shown.len()));
                shown = next;
                if let ReaderAction::Stop(reason) = action {
                    prop_assert_eq!(reason, StopReason::End);
                    ended = true;
                    break;
                }
            }
            if ended {
                break;
            }
            if let Some((_, skip, _)) = drops.get(attempt) {
                now += skip.index(n - now + 1);
            }
        }
        prop_assert!(ended, "the last connection runs to the seal");
        // S: the durable text at the join plus everything delivered is the produced text.
        prop_assert_eq!(reader.text(), &produced);
    }

    /// Conform over relayed sequences derived from the true frames; the reader behind it.
    #[test]
    fn conform_keeps_readers_on_a_prefix((deltas, durable) in production(), join_at in any::<prop::sample::Index>(), ops in prop::collection::vec((0u8..8, any::<usize>()), 0..30), finish in 0u8..3) {
        let produced = concat(&deltas);
        let truth: Vec<Frame> = subscription(&deltas, &durable, 0, 0).into_iter().map(|(f, _)| f).collect();
        let join = join_at.index(produced.len() + 1);
        let relayed = relay_mutations(&truth, produced.units(), ops);
        let mut conform = RelayConform::new("s".into(), join as u64);
        let mut reader = TextReader::new("s".into(), prefix(&produced, join));
        let mut out: Vec<Frame> = Vec::new();
        let mut last_durable = 0u64;
        let mut feed_out = |frames: Vec<Frame>, reader: &mut TextReader, out: &mut Vec<Frame>| -> Result<(), TestCaseError> {
            for f in frames {
                let before = reader.text().clone();
                reader.feed(&f);
                prop_assert!(produced.units().starts_with(reader.text().units()), "reader left the prefix");
                prop_assert!(reader.text().units().starts_with(before.units()), "the reader took back text it held");
                if let Frame::Durable { seq } = f {
                    // P as a relayed reader sees it: durable claims never go back, and never
                    // claim text the reader was not given.
                    prop_assert!(seq >= last_durable, "durable went back from {} to {}", last_durable, seq);
                    prop_assert!(seq as usize <= reader.text().len(), "durable {} outruns the {} units delivered", seq, reader.text().len());
                    last_durable = seq;
                }
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
