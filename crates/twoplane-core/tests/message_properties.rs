//! Property tests of messages made of parts (docs/contract.md §8), over generated messages: any
//! mix and number of parts (texts, reasoning, tool inputs, atomic parts, data parts replaced,
//! transient parts, metadata, finish), bodies with lone surrogates and surrogate pairs split
//! between deltas, and generated checkpoint, join, drop and reload points.
//!
//! - P: the message assembled from the chunk rows of any prefix of the checkpoints is the
//!   produced message at that offset, and its length is the checkpoint's; the document a seal
//!   stores, cut at any offset, is too.
//! - S: a reader that joins with the durable message at any checkpoint and reads the replay from
//!   there, dropping its connection anywhere (resuming from its own resume point or from further
//!   back) and reloading from the store at a later checkpoint, ends with exactly the produced
//!   message: every part, its attributes, each body; it never stops on an honest stream, so no
//!   delta ever reaches it before its part.
//! - Conform: relayed replays with forged part numbers, body offsets, renumbered part starts,
//!   drops and duplicates never make the reader hold anything but the produced message at its
//!   own length, and, when the relay sent its open (so the pass knows the parts before the
//!   join), never get a frame past the pass that the reader refuses.
//! - A message that only has part 0 is today's stream: every frame in the six-frame form and
//!   every chunk row a text row.
//! - The display-rate merge: the frames a reader is due, merged, fold to the produced message, and
//!   a reader cut after any merged frame that resumes from its resume point (through a merged
//!   replay again) ends with it too; every resume point the merged frames carry is one the
//!   unmerged frames carried.
//! - U: a UI reader's events (`twoplane_core::ui::UiEvents`): joined holding the message at any
//!   offset, at a stream whose message is now at any later one, then every later frame and the
//!   end, its group ids never go back nor past the length, `[DONE]` ends it once, it holds the
//!   produced message, a response under way gets exactly what a new one gets after its first
//!   group, and a join with nothing to advance gives the chunks `resume_all` gives.

mod common;

use proptest::prelude::*;
use twoplane_core::json::parse_value;
use twoplane_core::message::{
    assemble_durable_message, assemble_durable_message_at, merge_frames, message_resume_point, stored_frames, Attrs,
    Event, FrameNumbers, Message, MessageAction, MessageChunkRow, MessageConform, MessageFrame, MessageLog,
    MessageReader, MessageVerdict,
};
use twoplane_core::ui::{resume_all, UiEvents, DONE_EVENT};
use twoplane_core::{StreamStatus, Text};

#[derive(Clone, Debug)]
enum Op {
    Delta(usize, Text),
    /// A surrogate pair whose halves are two deltas.
    SplitPair(usize),
    Start(usize, u8),
    End(usize),
    Set(usize, u8),
    Meta(u8),
    Finish(u8),
    Transient(u8),
}

fn body_text() -> impl Strategy<Value = Text> {
    let piece = prop_oneof![
        4 => "[a-z {}\":]{1,5}".prop_map(|s| Text::from(s.as_str())),
        2 => "[漢字😀🎉]{1,2}".prop_map(|s| Text::from(s.as_str())),
        1 => (0xD800u16..0xE000).prop_map(|u| Text::from_units(vec![u])),
    ];
    common::joined(piece)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (any::<usize>(), body_text()).prop_map(|(p, t)| Op::Delta(p, t)),
        1 => any::<usize>().prop_map(Op::SplitPair),
        3 => (any::<usize>(), any::<u8>()).prop_map(|(k, s)| Op::Start(k, s)),
        2 => any::<usize>().prop_map(Op::End),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(p, s)| Op::Set(p, s)),
        1 => any::<u8>().prop_map(Op::Meta),
        1 => any::<u8>().prop_map(Op::Finish),
        1 => any::<u8>().prop_map(Op::Transient),
    ]
}

const KINDS: [&str; 8] =
    ["reasoning", "tool-search", "text", "source-url", "data-d", "step-start", "file", "dynamic-tool"];

fn attrs(json: &str) -> Attrs {
    parse_value(json).unwrap().as_object().unwrap().to_vec()
}

/// Play the ops into a log; an op that does not fit the message so far is skipped.
fn produce(ops: &[Op]) -> MessageLog {
    let mut log = MessageLog::new();
    let open_parts = |log: &MessageLog| -> Vec<u32> {
        let parts = log.message().parts();
        (0..parts.len() as u32).filter(|&i| !parts[i as usize].ended).collect()
    };
    for op in ops {
        match op {
            Op::Delta(i, text) => {
                let open = open_parts(&log);
                if !open.is_empty() {
                    log.delta(open[i % open.len()], text.clone()).unwrap();
                }
            }
            Op::SplitPair(i) => {
                let open = open_parts(&log);
                if !open.is_empty() {
                    let p = open[i % open.len()];
                    log.delta(p, Text::from_units(vec![0xD83D])).unwrap();
                    log.delta(p, Text::from_units(vec![0xDE00])).unwrap();
                }
            }
            Op::Start(k, s) => {
                let kind = KINDS[k % KINDS.len()];
                let value = if kind == "data-d" { attrs(&format!(r#"{{"id":"d{s}","data":{s}}}"#)) } else { vec![] };
                log.start(kind.into(), value).unwrap();
            }
            Op::End(i) => {
                let open = open_parts(&log);
                if !open.is_empty() {
                    let part = open[i % open.len()];
                    log.event(Event::End { part, value: attrs(r#"{"state":"done"}"#) }).unwrap();
                }
            }
            Op::Set(i, s) => {
                let part = (i % log.message().parts().len()) as u32;
                // A data part's replacement, a tool's (preliminary) output: one merge rule.
                let value = attrs(&format!(r#"{{"data":{s},"output":{{"n":{s}}},"preliminary":{}}}"#, s % 2 == 0));
                log.event(Event::Set { part, value }).unwrap();
            }
            Op::Meta(s) => {
                log.event(Event::Meta { value: attrs(&format!(r#"{{"m":{s}}}"#)) }).unwrap();
            }
            Op::Finish(s) => {
                let reason = ["stop", "length", "tool-calls"][*s as usize % 3];
                log.event(Event::Finish { reason: reason.into() }).unwrap();
            }
            Op::Transient(s) => {
                let value = attrs(&format!(r#"{{"data":{s}}}"#));
                log.event(Event::Transient { kind: Some("data-t".into()), value }).unwrap();
            }
        }
    }
    log
}

/// Checkpoint ends: ascending, within the produced length, starting after 0.
fn cuts(log: &MessageLog, picks: &[prop::sample::Index]) -> Vec<u64> {
    let len = log.len() as usize;
    let mut out: Vec<u64> = picks.iter().map(|i| i.index(len + 1) as u64).collect();
    out.sort_unstable();
    out.dedup();
    out.retain(|&c| c > 0);
    out
}

/// The chunk rows of the checkpoints through `upto` (each row from the previous cut).
fn rows(log: &MessageLog, cuts: &[u64], upto: usize) -> Vec<MessageChunkRow> {
    let mut from = 0;
    let mut out = Vec::new();
    for &to in &cuts[..upto] {
        out.push(log.row(from, to));
        from = to;
    }
    out
}

fn durable_at(log: &MessageLog, cuts: &[u64], upto: usize) -> Message {
    assemble_durable_message(None, None, 0, &rows(log, cuts, upto)).unwrap()
}

fn production() -> impl Strategy<Value = (Vec<Op>, Vec<prop::sample::Index>)> {
    (prop::collection::vec(op(), 0..40), prop::collection::vec(any::<prop::sample::Index>(), 0..8))
}

/// Feed `frames` to the reader, asserting that an honest stream is never refused.
fn read_all(r: &mut MessageReader, frames: &[MessageFrame]) {
    for f in frames {
        let action = r.feed(f);
        assert!(!matches!(action, MessageAction::Stop(_)), "{action:?} on {f:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256), ..ProptestConfig::default() })]

    /// P: every durable message is the produced message at its length, and the lengths grow.
    #[test]
    fn p_durable_is_the_produced_message_at_its_length((ops, picks) in production()) {
        let log = produce(&ops);
        let cuts = cuts(&log, &picks);
        let mut last = 0;
        for upto in 0..=cuts.len() {
            let durable = durable_at(&log, &cuts, upto);
            let d = if upto == 0 { 0 } else { cuts[upto - 1] };
            prop_assert_eq!(durable.len(), d);
            prop_assert!(d >= last);
            last = d;
            prop_assert_eq!(&durable, &log.message_at(d));
            // Per part: bodies are prefixes of the produced bodies, kinds never change.
            for (held, produced) in durable.parts().iter().zip(log.message().parts()) {
                prop_assert_eq!(&held.kind, &produced.kind);
                prop_assert!(produced.body.units().starts_with(held.body.units()));
            }
        }
        // The seal: the document loads back to the same document.
        let doc = log.message().document();
        let sealed = assemble_durable_message(None, Some(&doc), log.len(), &[]).unwrap();
        prop_assert_eq!(sealed.document(), doc);
        // The sealed document keeps the order: cut anywhere, it is the produced message there,
        // and it gives back the frames the producer made.
        let kept = log.sealed_document();
        for at in 0..log.len() {
            let cut = assemble_durable_message_at(None, Some(&kept), log.len(), &[], at).unwrap();
            prop_assert_eq!(cut, Some(log.message_at(at)));
        }
        let back = stored_frames(None, Some(&kept), &[]).unwrap().unwrap();
        let mut folded = Message::new();
        for f in &back {
            folded.apply(f).unwrap();
        }
        prop_assert_eq!(folded, log.message_at(log.len()));
    }

    /// S: join at any checkpoint, drop anywhere, resume from the resume point or further back,
    /// reload from the store at a later checkpoint: the reader ends with the produced message.
    #[test]
    fn s_every_join_drop_and_reload_ends_with_the_produced_message(
        (ops, picks) in production(),
        join in any::<prop::sample::Index>(),
        drop_after in any::<prop::sample::Index>(),
        back in 0u64..6,
        reload in prop::option::of((any::<prop::sample::Index>(), any::<prop::sample::Index>())),
    ) {
        let log = produce(&ops);
        let cuts = cuts(&log, &picks);
        let id = Text::from("m");
        let j = join.index(cuts.len() + 1);
        let d = if j == 0 { 0 } else { cuts[j - 1] };
        let mut r = MessageReader::new(id.clone(), durable_at(&log, &cuts, j));
        let open = log.open_frame(id.clone(), d, d, false);
        read_all(&mut r, std::slice::from_ref(&open));
        let replay = log.frames_from(d);
        let k = drop_after.index(replay.len() + 1);
        read_all(&mut r, &replay[..k]);
        // The connection drops; the reconnect asks from the resume point, or from further back.
        let resume = r.core().resume_from().saturating_sub(back);
        read_all(&mut r, &log.frames_from(resume));
        prop_assert_eq!(r.message(), log.message());

        if let Some((at, later)) = reload {
            // A reload mid-stream: a new reader from the store at a later checkpoint.
            let m = j + later.index(cuts.len() + 1 - j);
            let d2 = if m == 0 { 0 } else { cuts[m - 1] };
            let mut r2 = MessageReader::new(id.clone(), durable_at(&log, &cuts, m));
            let replay = log.frames_from(d2);
            let k = at.index(replay.len() + 1);
            read_all(&mut r2, &replay[..k]);
            prop_assert_eq!(r2.message(), &log.message_at(r2.core().resume_from()));
            read_all(&mut r2, &replay[k..]);
            prop_assert_eq!(r2.message(), log.message());
        }
    }

    /// The display-rate merge keeps what a reader folds, and where it can resume.
    #[test]
    fn merged_frames_fold_to_the_same_message_and_resume_after_any_of_them(
        (ops, picks) in production(),
        cut in any::<prop::sample::Index>(),
        join in any::<prop::sample::Index>(),
    ) {
        let log = produce(&ops);
        let cuts = cuts(&log, &picks);
        let id = Text::from("m");
        // What a reader joining at checkpoint `j` is due: the open, the replay from there, a
        // durable wherever a checkpoint ends.
        let j = join.index(cuts.len() + 1);
        let d = if j == 0 { 0 } else { cuts[j - 1] };
        let due = |from: u64| {
            let mut frames = Vec::new();
            for f in log.frames_from(from) {
                let end = f.span().map(|(_, seq)| seq);
                frames.push(f);
                if let Some(seq) = end.filter(|seq| cuts.contains(seq)) {
                    frames.push(MessageFrame::Durable { seq });
                }
            }
            frames
        };
        let mut frames = vec![log.open_frame(id.clone(), d, d, false)];
        frames.extend(due(d));
        let merged = merge_frames(&frames);
        prop_assert!(merged.len() <= frames.len());
        let points: std::collections::HashSet<u64> = frames.iter().filter_map(message_resume_point).collect();
        for f in &merged {
            if let Some(p) = message_resume_point(f) {
                prop_assert!(points.contains(&p), "{:?} carries {} which no unmerged frame does", f, p);
            }
        }
        let mut whole = MessageReader::new(id.clone(), durable_at(&log, &cuts, j));
        read_all(&mut whole, &merged);
        prop_assert_eq!(whole.message(), log.message());
        // Cut after any merged frame; the reconnect asks from the reader's resume point and is
        // answered with the merged replay from there.
        let k = cut.index(merged.len() + 1);
        let mut r = MessageReader::new(id.clone(), durable_at(&log, &cuts, j));
        read_all(&mut r, &merged[..k]);
        let resume = r.core().resume_from();
        read_all(&mut r, &merge_frames(&due(resume)));
        prop_assert_eq!(r.message(), log.message());
    }

    /// Conform: whatever a relay forges in the numbers, what passes never makes the reader break
    /// a rule, and the reader only ever holds the produced message at its own length.
    #[test]
    fn conform_turns_forged_part_frames_into_one_stale(
        (ops, picks) in production(),
        join in any::<prop::sample::Index>(),
        mutations in prop::collection::vec((any::<prop::sample::Index>(), 0u8..6, 1u64..4), 0..4),
        send_open in any::<bool>(),
    ) {
        let log = produce(&ops);
        let cuts = cuts(&log, &picks);
        let id = Text::from("m");
        let j = join.index(cuts.len() + 1);
        let d = if j == 0 { 0 } else { cuts[j - 1] };
        let durable = durable_at(&log, &cuts, j);
        let mut relayed: Vec<MessageFrame> = Vec::new();
        if send_open {
            relayed.push(log.open_frame(id.clone(), d, d, false));
        }
        relayed.extend(log.frames_from(d));
        for (at, how, k) in &mutations {
            if relayed.is_empty() {
                break;
            }
            let i = at.index(relayed.len());
            let count = log.message().parts().len() as u32;
            match (how, relayed[i].clone()) {
                // A delta for a part that never started.
                (0, MessageFrame::Chunk { from, seq, at, text, .. }) => {
                    relayed[i] = MessageFrame::Chunk { from, seq, part: count + *k as u32, at, text };
                }
                // A body offset that leaves a gap in its part.
                (1, MessageFrame::Chunk { from, seq, part, at, text }) => {
                    relayed[i] = MessageFrame::Chunk { from, seq, part, at: at + k, text };
                }
                // A part that starts again (with another kind) where the next one should.
                (2, MessageFrame::Event { from, event: Event::Start { part, .. } }) if part > 0 => {
                    let kind = Text::from("source-url");
                    relayed.insert(i + 1, MessageFrame::Event { from: from + 1, event: Event::Start { part: part - 1, kind, value: vec![] } });
                }
                // A set or end for a part that never started.
                (3, MessageFrame::Event { from, event: Event::Set { value, .. } }) => {
                    relayed[i] = MessageFrame::Event { from, event: Event::Set { part: count + *k as u32, value } };
                }
                (4, _) => { relayed.remove(i); }
                (5, f) => relayed.insert(i, f),
                _ => {}
            }
        }
        // Whether the pass learns the parts before the join: the open may have been dropped.
        let has_open = matches!(relayed.first(), Some(MessageFrame::Open { .. }));
        let mut c = MessageConform::new(d as f64);
        let mut r = MessageReader::new(id.clone(), durable);
        for f in &relayed {
            let verdict = match f {
                MessageFrame::Open { parts, .. } => {
                    let n = FrameNumbers::of(f, &id);
                    let table: Option<Vec<f64>> = parts.as_ref().map(|p| p.iter().map(|&x| x as f64).collect());
                    c.feed_open(n.id_matches, n.a, n.b, n.c, table.as_deref())
                }
                _ => c.feed_numbers(FrameNumbers::of(f, &id)),
            };
            let passed = match verdict {
                MessageVerdict::Pass => vec![f.clone()],
                MessageVerdict::OpenThenPass => vec![log.open_frame(id.clone(), d, d, false), f.clone()],
                MessageVerdict::Drop => vec![],
                MessageVerdict::Violation(_) | MessageVerdict::Terminate => {
                    prop_assert!(c.is_done());
                    break;
                }
            };
            for p in &passed {
                let action = r.feed(p);
                // With the relay's open the pass knows the parts before the join and lets nothing
                // through that the reader refuses. Without it, it assumes none (§8), and a forgery
                // that fits the assumption is the reader's to refuse: safe, checked below.
                if has_open {
                    prop_assert!(!matches!(action, MessageAction::Stop(_)), "conform passed {:?}, the reader refused it", p);
                }
            }
            prop_assert_eq!(r.message(), &log.message_at(r.core().resume_from()));
        }
    }

    /// A message that is only part 0 is today's stream, frame for frame and row for row.
    #[test]
    fn a_single_text_message_is_todays_stream(
        deltas in prop::collection::vec(body_text(), 0..20),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        join in any::<prop::sample::Index>(),
    ) {
        let mut log = MessageLog::new();
        let mut produced = Text::new();
        for t in &deltas {
            log.delta(0, t.clone()).unwrap();
            produced.push_units(t.units());
        }
        for f in log.frames() {
            prop_assert!(f.to_frame().is_some());
        }
        let f = join.index(log.len() as usize + 1) as u64;
        for frame in log.frames_from(f) {
            prop_assert!(frame.to_frame().is_some());
        }
        prop_assert!(log.open_frame("m".into(), f, f, false).to_frame().is_some());
        let cuts = cuts(&log, &picks);
        let mut from = 0usize;
        for row in rows(&log, &cuts, cuts.len()) {
            prop_assert_eq!(row.parts, None);
            let to = row.seq as usize;
            let text = row.text.unwrap();
            prop_assert_eq!(text.units(), &produced.units()[from..to]);
            from = to;
        }
        let want = if produced.is_empty() {
            r#"{"parts":[]}"#.to_owned()
        } else {
            let mut s = String::from(r#"{"parts":[{"type":"text","text":"#);
            twoplane_core::json::write_json_string(&mut s, produced.units());
            s.push_str("}]}");
            s
        };
        prop_assert_eq!(log.message().document(), Text::from(want.as_str()));
    }

    /// Any numbers at all: the pass and the reader never panic, and once done stay done.
    #[test]
    fn any_numbers_never_panic(
        from in prop_oneof![Just(f64::NAN), -2.0f64..10.0, 0.0f64..10.0],
        frames in prop::collection::vec(
            (0u32..16, any::<bool>(), prop::array::uniform5(prop_oneof![
                Just(f64::NAN), Just(f64::INFINITY), Just(-1.0), Just(0.5), (0u32..12).prop_map(f64::from),
            ])),
            0..24,
        ),
        table in prop::option::of(prop::collection::vec((0u32..6).prop_map(f64::from), 0..4)),
    ) {
        let mut c = MessageConform::new(from);
        let mut r = twoplane_core::message::MessageReaderCore::from_js(from, table.as_deref().unwrap_or_default(), &[])
            .unwrap_or_else(|_| twoplane_core::message::MessageReaderCore::from_js(0.0, &[], &[]).unwrap());
        for (kind, id_matches, [a, b, c_, part, at]) in frames {
            let n = FrameNumbers { kind, id_matches, a, b, c: c_, part, at };
            let v = if kind == 0 { c.feed_open(id_matches, a, b, c_, table.as_deref()) } else { c.feed_numbers(n) };
            if c.is_done() {
                prop_assert!(matches!(c.feed_numbers(n), MessageVerdict::Drop));
            }
            let _ = v.code();
            let _ = r.feed_numbers(n).code();
        }
    }

    /// U: the UI events rule: replay to what the reader holds, advance to now, every later frame,
    /// the end.
    #[test]
    fn u_ui_events_replay_advance_and_end((ops, _) in production(), held in any::<prop::sample::Index>(), now in any::<prop::sample::Index>(), status in 0usize..4) {
        let log = produce(&ops);
        let len = log.len();
        let a = held.index(len as usize + 1) as u64;
        let b = a + now.index((len - a) as usize + 1) as u64;
        let status = StreamStatus::ALL[status];
        let id = Text::from("m");
        let write = |fresh: bool| {
            let mut out = String::new();
            let mut events = UiEvents::join(&mut out, &id, log.message_at(a), Some(&log.message_at(b)), fresh);
            assert_eq!(events.message(), &log.message_at(b));
            // Every frame pushed after `b` (one across it cut there), as the producer pushed them.
            for piece in log.frames().iter().filter_map(|f| f.cut_at(b).1) {
                assert!(!events.frame(&mut out, &piece));
            }
            assert_eq!(events.message(), log.message());
            assert!(events.frame(&mut out, &MessageFrame::End { seq: len, status, error: None }));
            out
        };
        let fresh = write(true);
        let tail = write(false);
        // Ids: never back, never past the length; `[DONE]` once, at the end.
        let ids: Vec<u64> = fresh.lines().filter_map(|l| l.strip_prefix("id: ")).map(|n| n.parse().unwrap()).collect();
        prop_assert!(ids.windows(2).all(|w| w[0] <= w[1]), "{:?}", ids);
        prop_assert!(ids.iter().all(|&i| i <= len));
        prop_assert_eq!(ids.first(), Some(&a));
        prop_assert!(fresh.ends_with(DONE_EVENT));
        prop_assert_eq!(fresh.matches(DONE_EVENT).count(), 1);
        // A response under way: the same events without the first group (`start` and the message
        // at `a`, whose last event carries `id: a`).
        let first = fresh.find("id: ").unwrap();
        let first = first + fresh[first..].find("\n\n").unwrap() + 2;
        prop_assert_eq!(&fresh[first..], tail.as_str());
        // Nothing to advance: the chunks `resume_all` gives for a reader at `a`.
        if a == b {
            let data: Vec<&str> = fresh.lines().filter_map(|l| l.strip_prefix("data: ")).filter(|d| *d != "[DONE]").collect();
            let want = resume_all(&id, log.frames(), a, status, None).unwrap();
            let want: Vec<String> = want.iter().map(|c| { let mut s = String::new(); twoplane_core::json::write_json_value(&mut s, c); s }).collect();
            prop_assert_eq!(data, want);
        }
    }
}
