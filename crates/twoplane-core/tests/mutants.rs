//! Tests that pin rules a mutation of the code once got past (`bash scripts/mutants.sh`).
//!
//! Each test is named for the rule it holds and grouped by the module that owns the rule; the
//! mutants that survive on purpose are listed, with why, in `crates/twoplane-core/mutants.md`.
//! These are ordinary tests: each asserts behaviour the contract (docs/contract.md) or a
//! binding relies on, so a wrong rule fails here whatever broke it.

use twoplane_core::conform::{Conform, ConformInput, RawPieces, RelayConform, Verdict, Violation};
use twoplane_core::frame::{Frame, StreamStatus};
use twoplane_core::Text;

fn t(s: &str) -> Text {
    Text::from(s)
}

fn chunk(from: u64, s: &str) -> Frame {
    Frame::chunk(from, t(s)).unwrap()
}

fn end(seq: u64) -> Frame {
    Frame::End { seq, status: StreamStatus::Complete, error: None }
}

fn open(id: &str, from: u64, seq: u64, durable_seq: u64) -> Frame {
    Frame::Open { stream_id: t(id), from, seq, durable_seq, ended: false }
}

mod conform {
    use super::*;

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    #[test]
    fn verdict_codes_are_the_binding_contract() {
        let codes: Vec<u32> = [
            Verdict::Drop,
            Verdict::Pass,
            Verdict::OpenThenPass,
            Verdict::Violation(Violation::ChunkSpan),
            Verdict::Terminate,
        ]
        .into_iter()
        .map(Verdict::code)
        .collect();
        assert_eq!(codes, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn violation_codes_are_the_binding_contract() {
        let codes: Vec<u32> = [
            Violation::OpenMalformed,
            Violation::OpenCannotServe { from: 1.0, requested: 0.0 },
            Violation::ChunkSpan,
            Violation::ChunkGap { from: 2.0, pos: 1.0 },
            Violation::EndMalformed,
            Violation::EndOutruns { seq: 3.0, pos: 1.0 },
            Violation::UnknownType,
            Violation::SourceEnded,
        ]
        .into_iter()
        .map(Violation::code)
        .collect();
        assert_eq!(codes, (0..8).collect::<Vec<u32>>());
    }

    #[test]
    fn opened_and_done_follow_the_state_machine() {
        let mut c = Conform::new(0.0);
        assert!(!c.is_opened() && !c.is_done());
        assert_eq!(c.feed(ConformInput::Chunk { from: 0.0, seq: 1.0, text_len: Some(1.0) }), Verdict::OpenThenPass);
        assert!(c.is_opened() && !c.is_done());
        assert_eq!(c.feed(ConformInput::End { seq: 1.0 }), Verdict::Pass);
        assert!(c.is_opened() && c.is_done());

        // A relayed open opens the pass too, and a violation ends it.
        let mut c = Conform::new(4.0);
        let open = ConformInput::Open { stream_id_matches: true, from: 2.0, seq: 6.0, durable_seq: 2.0 };
        assert_eq!(c.feed(open), Verdict::Pass);
        assert!(c.is_opened() && !c.is_done());
        assert_eq!(c.feed(ConformInput::Chunk { from: 9.0, seq: 10.0, text_len: Some(1.0) }).code(), 3);
        assert!(c.is_done());

        let mut r = RelayConform::new(t("s"), 0);
        assert!(!r.is_done());
        r.feed(Frame::Absent);
        assert!(r.is_done());
    }

    #[test]
    fn feed_code_answers_the_verdict_code_and_keeps_the_violation() {
        let mut c = Conform::new(0.0);
        assert_eq!(c.last_violation(), None);
        assert_eq!(c.feed_code(1, false, 0.0, 2.0, 2.0), 2);
        assert_eq!(c.feed_code(1, false, 1.0, 3.0, 2.0), 1);
        assert_eq!(c.feed_code(1, false, 0.0, 2.0, 2.0), 0);
        assert_eq!(c.last_violation(), None);
        assert_eq!(c.feed_code(1, false, 5.0, 6.0, 1.0), 3);
        assert_eq!(c.last_violation(), Some(Violation::ChunkGap { from: 5.0, pos: 3.0 }));
        assert_eq!(c.feed_code(4, false, f64::NAN, f64::NAN, f64::NAN), 0);
    }

    #[test]
    fn input_codes_map_to_the_six_frame_kinds() {
        let nan = f64::NAN;
        assert_eq!(
            ConformInput::from_code(0, true, 1.0, 2.0, 3.0),
            ConformInput::Open { stream_id_matches: true, from: 1.0, seq: 2.0, durable_seq: 3.0 }
        );
        assert_eq!(
            ConformInput::from_code(1, false, 1.0, 2.0, 1.0),
            ConformInput::Chunk { from: 1.0, seq: 2.0, text_len: Some(1.0) }
        );
        // NaN in the length slot means the text was not a string.
        assert_eq!(
            ConformInput::from_code(1, false, 1.0, 2.0, nan),
            ConformInput::Chunk { from: 1.0, seq: 2.0, text_len: None }
        );
        assert_eq!(ConformInput::from_code(2, false, 4.0, nan, nan), ConformInput::Durable { seq: 4.0 });
        assert_eq!(ConformInput::from_code(3, false, 5.0, nan, nan), ConformInput::End { seq: 5.0 });
        assert_eq!(ConformInput::from_code(4, false, nan, nan, nan), ConformInput::Stale);
        assert_eq!(ConformInput::from_code(5, false, nan, nan, nan), ConformInput::Absent);
        assert_eq!(ConformInput::from_code(6, false, nan, nan, nan), ConformInput::Unknown);
    }

    #[test]
    fn a_relayed_chunk_that_misstates_its_span_quotes_its_own_offsets() {
        let mut c = RelayConform::new(t("s"), 2);
        let out = c.feed(Frame::Chunk { from: 1, seq: 5, text: t("a") });
        assert_eq!(out.violation.as_deref(), Some("relay chunk 1\u{2192}5 does not span exactly its offsets"));
        assert_eq!(out.frames, vec![Frame::Stale { floor_seq: 2, durable_seq: 0 }]);
        assert!(c.is_done());
        assert_eq!(c.feed(chunk(2, "x")).frames, vec![]);
        assert_eq!(c.fail().frames, vec![]);
    }

    #[test]
    fn a_relay_pass_serves_its_frames_and_one_terminal() {
        let mut c = RelayConform::new(t("s"), 1);
        let first = c.feed(open("s", 0, 3, 0));
        assert_eq!((first.frames, first.violation), (vec![open("s", 0, 3, 0)], None));
        assert_eq!(c.feed(chunk(0, "abc")).frames, vec![chunk(0, "abc")]);
        assert_eq!(c.feed(Frame::Durable { seq: 2 }).frames, vec![Frame::Durable { seq: 2 }]);
        let out = c.fail();
        assert_eq!((out.frames, out.violation), (vec![Frame::Stale { floor_seq: 3, durable_seq: 2 }], None));
        assert_eq!(c.end().frames, vec![]);
    }

    #[test]
    fn every_reason_quotes_its_values_as_javascript_prints_them() {
        let raw = RawPieces {
            stream_id_json: &units("\"x\""),
            from: &units("1.5"),
            seq: &units("-0"),
            type_json: &units("\"bogus\""),
        };
        let reason = |v: Violation| v.reason(&raw).to_string_lossy();
        assert_eq!(reason(Violation::OpenMalformed), "relay open for \"x\" at 1.5 is malformed");
        assert_eq!(
            reason(Violation::OpenCannotServe { from: 7.0, requested: 2.5 }),
            "relay open at 7 cannot serve the requested 2.5"
        );
        assert_eq!(reason(Violation::ChunkSpan), "relay chunk 1.5\u{2192}-0 does not span exactly its offsets");
        assert_eq!(reason(Violation::ChunkGap { from: 1e21, pos: 3.0 }), "relay chunk at 1e+21 leaves a gap after 3");
        assert_eq!(reason(Violation::EndMalformed), "relay end at -0 is malformed");
        assert_eq!(
            reason(Violation::EndOutruns { seq: 9.0, pos: 4.0 }),
            "relay end at 9 outruns the 4 characters delivered"
        );
        assert_eq!(reason(Violation::UnknownType), "relay frame of unknown type \"bogus\"");
        assert_eq!(reason(Violation::SourceEnded), "relay source ended without a terminal frame");
    }
}

mod reader {
    use super::*;
    use twoplane_core::reader::{Reader, ReaderAction, ReaderInput, StopReason, TextReader};

    const REASONS: [StopReason; 6] = [
        StopReason::End,
        StopReason::Stale,
        StopReason::Absent,
        StopReason::Gap,
        StopReason::ForeignStream,
        StopReason::Malformed,
    ];

    #[test]
    fn stop_reasons_have_stable_names_and_codes() {
        let names: Vec<&str> = REASONS.iter().map(|r| r.as_str()).collect();
        assert_eq!(names, ["end", "stale", "absent", "gap", "foreign_stream", "malformed"]);
        let codes: Vec<u32> = REASONS.iter().map(|r| r.code()).collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn action_codes_are_the_binding_contract() {
        assert_eq!(ReaderAction::Ignore.code(), 0);
        assert_eq!(ReaderAction::Splice { at: 9 }.code(), 1);
        assert_eq!(ReaderAction::Stop(StopReason::Gap).code(), 2);
    }

    #[test]
    fn input_codes_map_to_the_six_frame_kinds() {
        let nan = f64::NAN;
        assert_eq!(
            ReaderInput::from_code(0, true, 3.0, nan, nan),
            ReaderInput::Open { stream_id_matches: true, from: 3.0 }
        );
        assert_eq!(
            ReaderInput::from_code(1, false, 1.0, 3.0, 2.0),
            ReaderInput::Chunk { from: 1.0, seq: 3.0, text_len: Some(2.0) }
        );
        assert_eq!(
            ReaderInput::from_code(1, false, 1.0, 3.0, nan),
            ReaderInput::Chunk { from: 1.0, seq: 3.0, text_len: None }
        );
        assert_eq!(ReaderInput::from_code(2, false, 1.0, nan, nan), ReaderInput::Durable);
        assert_eq!(ReaderInput::from_code(3, false, 1.0, nan, nan), ReaderInput::End);
        assert_eq!(ReaderInput::from_code(4, false, nan, nan, nan), ReaderInput::Stale);
        assert_eq!(ReaderInput::from_code(5, false, nan, nan, nan), ReaderInput::Absent);
        assert_eq!(ReaderInput::from_code(6, false, nan, nan, nan), ReaderInput::Unknown);
        assert_eq!(ReaderInput::from_code(u32::MAX, false, nan, nan, nan), ReaderInput::Unknown);
    }

    #[test]
    fn join_offset_stays_while_the_accumulator_grows() {
        let mut r = Reader::new(2);
        assert_eq!((r.join_offset(), r.acc_len(), r.resume_from()), (2, 2, 2));
        assert_eq!(
            r.feed(ReaderInput::Chunk { from: 1.0, seq: 5.0, text_len: Some(4.0) }),
            ReaderAction::Splice { at: 1 }
        );
        assert_eq!((r.join_offset(), r.acc_len(), r.resume_from()), (2, 5, 5));
        assert!(r.is_live());
        assert_eq!(r.stopped(), None);
        assert_eq!(r.feed(ReaderInput::Stale), ReaderAction::Stop(StopReason::Stale));
        assert!(!r.is_live());
        assert_eq!(r.stopped(), Some(StopReason::Stale));
        assert_eq!((r.join_offset(), r.acc_len()), (2, 5));
    }

    #[test]
    fn an_open_for_this_stream_changes_nothing() {
        let mut r = Reader::new(3);
        assert_eq!(r.feed(ReaderInput::Open { stream_id_matches: true, from: 0.0 }), ReaderAction::Ignore);
        assert_eq!(r.feed(ReaderInput::Durable), ReaderAction::Ignore);
        assert!(r.is_live());
        assert_eq!(
            r.feed(ReaderInput::Open { stream_id_matches: true, from: -1.0 }),
            ReaderAction::Stop(StopReason::Malformed)
        );
        let mut r = Reader::new(3);
        assert_eq!(
            r.feed(ReaderInput::Open { stream_id_matches: false, from: 3.0 }),
            ReaderAction::Stop(StopReason::ForeignStream)
        );
    }

    #[test]
    fn an_empty_chunk_at_the_end_is_ignored_not_malformed() {
        let mut r = Reader::new(4);
        assert_eq!(r.feed(ReaderInput::Chunk { from: 4.0, seq: 4.0, text_len: Some(0.0) }), ReaderAction::Ignore);
        assert!(r.is_live());
        let mut tr = TextReader::new(t("s"), t("abcd"));
        assert_eq!(tr.feed(&chunk(4, "")), ReaderAction::Ignore);
        assert_eq!(tr.core().stopped(), None);
    }

    #[test]
    fn a_chunk_must_span_exactly_its_offsets() {
        for (from, seq, len) in [
            (2.0, 1.0, Some(1.0)),
            (0.0, 3.0, Some(2.0)),
            (0.0, 3.0, Some(4.0)),
            (1.0, 3.0, None),
            (1.0, 3.0, Some(4.0)),
        ] {
            let mut r = Reader::new(1);
            assert_eq!(
                r.feed(ReaderInput::Chunk { from, seq, text_len: len }),
                ReaderAction::Stop(StopReason::Malformed),
                "{from} {seq} {len:?}"
            );
        }
        for bad in [-1.0, 0.5, f64::NAN, f64::INFINITY, 9007199254740992.0] {
            let mut r = Reader::new(0);
            assert_eq!(
                r.feed(ReaderInput::Chunk { from: bad, seq: 1.0, text_len: Some(1.0) }),
                ReaderAction::Stop(StopReason::Malformed)
            );
            let mut r = Reader::new(0);
            assert_eq!(
                r.feed(ReaderInput::Chunk { from: 0.0, seq: bad, text_len: Some(1.0) }),
                ReaderAction::Stop(StopReason::Malformed)
            );
        }
        // The exact span is accepted, and splices at its own start.
        let mut r = Reader::new(1);
        assert_eq!(
            r.feed(ReaderInput::Chunk { from: 1.0, seq: 3.0, text_len: Some(2.0) }),
            ReaderAction::Splice { at: 1 }
        );
    }

    #[test]
    fn a_gap_is_a_chunk_starting_past_the_end_only() {
        // Starting exactly at the end is the normal case, not a gap.
        let mut r = Reader::new(3);
        assert_eq!(
            r.feed(ReaderInput::Chunk { from: 3.0, seq: 4.0, text_len: Some(1.0) }),
            ReaderAction::Splice { at: 3 }
        );
        // Starting below the end overlaps, and still splices at its own from.
        assert_eq!(
            r.feed(ReaderInput::Chunk { from: 2.0, seq: 6.0, text_len: Some(4.0) }),
            ReaderAction::Splice { at: 2 }
        );
        assert_eq!(r.acc_len(), 6);
        assert_eq!(
            r.feed(ReaderInput::Chunk { from: 7.0, seq: 8.0, text_len: Some(1.0) }),
            ReaderAction::Stop(StopReason::Gap)
        );
        assert_eq!(r.acc_len(), 6);
    }

    #[test]
    fn a_chunk_ending_at_or_inside_the_accumulator_is_ignored() {
        let mut r = Reader::new(5);
        assert_eq!(r.feed(ReaderInput::Chunk { from: 2.0, seq: 5.0, text_len: Some(3.0) }), ReaderAction::Ignore);
        assert_eq!(r.feed(ReaderInput::Chunk { from: 0.0, seq: 4.0, text_len: Some(4.0) }), ReaderAction::Ignore);
        assert_eq!(r.acc_len(), 5);
        assert_eq!(
            r.feed(ReaderInput::Chunk { from: 4.0, seq: 6.0, text_len: Some(2.0) }),
            ReaderAction::Splice { at: 4 }
        );
        assert_eq!(r.acc_len(), 6);
    }

    #[test]
    fn terminal_frames_stop_with_their_own_reason() {
        for (input, reason) in [
            (ReaderInput::End, StopReason::End),
            (ReaderInput::Stale, StopReason::Stale),
            (ReaderInput::Absent, StopReason::Absent),
            (ReaderInput::Unknown, StopReason::Malformed),
        ] {
            let mut r = Reader::new(0);
            assert_eq!(r.feed(input), ReaderAction::Stop(reason));
            assert_eq!(r.stopped(), Some(reason));
            assert_eq!(r.feed(ReaderInput::Chunk { from: 0.0, seq: 1.0, text_len: Some(1.0) }), ReaderAction::Ignore);
            assert_eq!(r.acc_len(), 0);
        }
    }

    #[test]
    fn text_reader_holds_its_stream_and_text() {
        let mut r = TextReader::new(t("s1"), t("ab"));
        assert_eq!(r.stream_id(), &t("s1"));
        assert_eq!(r.text(), &t("ab"));
        assert_eq!(r.core().join_offset(), 2);
        assert_eq!(r.feed(&open("s1", 2, 2, 2)), ReaderAction::Ignore);
        assert_eq!(r.feed(&chunk(1, "Bcd")), ReaderAction::Splice { at: 1 });
        assert_eq!(r.text(), &t("aBcd"));
        assert_eq!(r.core().acc_len(), 4);
        assert_eq!(r.rendered(&t("s1"), t("ab").units()), t("abcd"));
        assert_eq!(r.rendered(&t("s2"), t("ab").units()), t("ab"));
        assert_eq!(r.feed(&end(4)), ReaderAction::Stop(StopReason::End));
        let mut r = TextReader::new(t("s1"), t(""));
        assert_eq!(r.feed(&open("s2", 0, 0, 0)), ReaderAction::Stop(StopReason::ForeignStream));
        assert_eq!(r.rendered(&t("s1"), t("z").units()), t("z"));
    }
}

mod splice {
    use super::*;
    use twoplane_core::splice::{
        assemble_durable_text, assembly_order, splice_point, splice_stream_text, stream_chunk_id,
        stream_chunk_id_units, ChunkRow,
    };

    #[test]
    fn equal_lengths_keep_the_durable_text() {
        // No prefix check: of two texts of one length, the durable one is the answer.
        assert_eq!(splice_stream_text(t("ab").units(), t("xy").units()), t("ab"));
        assert_eq!(splice_stream_text(t("").units(), t("").units()), t(""));
        assert_eq!(splice_point(2, 2), None);
        assert_eq!(splice_point(3, 1), None);
        assert_eq!(splice_point(0, 4), Some(0));
        assert_eq!(splice_point(5, 9), Some(5));
    }

    #[test]
    fn assembly_order_sorts_ascending_and_keeps_ties_in_input_order() {
        assert_eq!(assembly_order(&[]), Vec::<u32>::new());
        assert_eq!(assembly_order(&[7.0]), vec![0]);
        assert_eq!(assembly_order(&[9.0, 3.0, 5.0, 3.0]), vec![1, 3, 2, 0]);
        assert_eq!(assembly_order(&[-0.0, 0.0, -0.0]), vec![0, 1, 2]);
        assert_eq!(assembly_order(&[2.0, -1.0]), vec![1, 0]);
    }

    #[test]
    fn assembly_appends_every_row_after_the_body() {
        // A body longer than the rows and rows longer than the body both assemble whole.
        let rows = [ChunkRow { seq: 9, text: Some(t("xyz")) }, ChunkRow { seq: 4, text: Some(t("w")) }];
        assert_eq!(assemble_durable_text(Some(&t("body")), &rows), t("bodywxyz"));
        assert_eq!(assemble_durable_text(Some(&t("b")), &rows), t("bwxyz"));
        assert_eq!(assemble_durable_text(None, &rows), t("wxyz"));
        assert_eq!(assemble_durable_text(Some(&t("only")), &[]), t("only"));
    }

    #[test]
    fn chunk_ids_join_the_stream_id_and_seq() {
        assert_eq!(stream_chunk_id("", 0), ":0");
        assert_eq!(stream_chunk_id("a:b", 9007199254740991), "a:b:9007199254740991");
        let lone = Text::from_units(vec![0xD800]);
        let mut want = lone.clone();
        want.push_str(":0");
        assert_eq!(stream_chunk_id_units(lone.units(), -0.0), want);
        assert_eq!(stream_chunk_id_units(t("m").units(), 12.0), t("m:12"));
    }
}

mod text {
    use twoplane_core::text::{is_high_surrogate, is_low_surrogate, pair_safe_cut, Text};

    fn t(s: &str) -> Text {
        Text::from(s)
    }

    #[test]
    fn constructors_keep_every_unit() {
        let units = vec![0x61, 0xDC00, 0xD800];
        assert_eq!(Text::from_units(units.clone()).units(), &units[..]);
        assert_eq!(Text::from_slice(&units).units(), &units[..]);
        assert_eq!(Text::from(&units[..]).units(), &units[..]);
        assert_eq!(Text::from(units.clone()).units(), &units[..]);
        assert_eq!(Text::from(String::from("é😀")).units(), &[0xE9, 0xD83D, 0xDE00]);
        assert_eq!(Text::from_units(units.clone()).into_units(), units);
        let mut w = Text::with_capacity(4);
        assert!(w.is_empty());
        w.push_units(&[0xD800]);
        w.push_str("a");
        assert_eq!(w.units(), &[0xD800, 0x61]);
        assert_eq!(Text::new(), Text::default());
    }

    #[test]
    fn length_and_emptiness_count_code_units() {
        assert_eq!(t("").len(), 0);
        assert!(t("").is_empty());
        assert_eq!(t("abc").len(), 3);
        assert!(!t("x").is_empty());
        assert_eq!(Text::from_units(vec![0xD800, 0xD800]).len(), 2);
    }

    #[test]
    fn slice_and_tail_bounds() {
        let x = t("abcd");
        assert_eq!(x.slice(1, 3).unwrap(), &[0x62, 0x63]);
        assert_eq!(x.slice(0, 4).unwrap(), x.units());
        assert_eq!(x.slice(4, 4).unwrap(), &[] as &[u16]);
        assert_eq!(x.slice(2, 2).unwrap(), &[] as &[u16]);
        assert!(x.slice(0, 5).is_err());
        assert!(x.slice(3, 2).is_err());
        assert!(x.slice(5, 5).is_err());
        assert_eq!(x.tail(0), x.units());
        assert_eq!(x.tail(2), &[0x63, 0x64]);
        assert_eq!(x.tail(4), &[] as &[u16]);
    }

    #[test]
    fn truncate_keeps_a_prefix() {
        let mut x = t("abcd");
        x.truncate(9);
        assert_eq!(x, t("abcd"));
        x.truncate(2);
        assert_eq!(x, t("ab"));
        x.truncate(0);
        assert!(x.is_empty());
    }

    #[test]
    fn conversions_to_utf8_say_when_they_lose() {
        let good = t("a😀");
        assert!(good.is_well_formed());
        assert_eq!(good.to_string_checked().as_deref(), Some("a😀"));
        assert_eq!(good.to_string_lossy(), "a😀");
        let lone = Text::from_units(vec![0x61, 0xDE00]);
        assert!(!lone.is_well_formed());
        assert_eq!(lone.to_string_checked(), None);
        assert_eq!(lone.to_string_lossy(), "a\u{FFFD}");
        assert_eq!(format!("{lone}"), "a\u{FFFD}");
        assert_eq!(format!("{good}"), "a😀");
        assert_eq!(format!("{:?}", t("a\"b")), "\"a\\\"b\"");
    }

    #[test]
    fn comparing_with_str_compares_units() {
        assert!(t("ab") == *"ab");
        assert!(t("ab") != *"abc");
        assert!(t("ab") == "ab");
        assert!(t("ab") != "ba");
    }

    #[test]
    fn surrogate_classes() {
        for (u, high, low) in [
            (0xD7FF, false, false),
            (0xD800, true, false),
            (0xDBFF, true, false),
            (0xDC00, false, true),
            (0xDFFF, false, true),
            (0xE000, false, false),
            (0x0061, false, false),
        ] {
            assert_eq!((is_high_surrogate(u), is_low_surrogate(u)), (high, low), "{u:#x}");
        }
    }

    #[test]
    fn pair_safe_cut_moves_back_only_inside_a_pair() {
        let x = t("😀a😀");
        assert_eq!(x.pair_safe_cut(0), 0);
        assert_eq!(x.pair_safe_cut(1), 0);
        assert_eq!(x.pair_safe_cut(2), 2);
        assert_eq!(x.pair_safe_cut(3), 3);
        assert_eq!(x.pair_safe_cut(4), 3);
        assert_eq!(x.pair_safe_cut(5), 5);
        assert_eq!(pair_safe_cut(x.units(), 4), 3);
        assert_eq!(pair_safe_cut(&[], 3), 0);
        // Two lone halves in the wrong order are not a pair.
        assert_eq!(pair_safe_cut(&[0xDC00, 0xD800], 1), 1);
        // A high surrogate followed by a non-surrogate, and a low one preceded by one.
        assert_eq!(pair_safe_cut(&[0xD800, 0x61], 1), 1);
        assert_eq!(pair_safe_cut(&[0x61, 0xDC00], 1), 1);
        assert_eq!(pair_safe_cut(&[0x61, 0x62, 0xD800, 0xDC00], 3), 2);
    }
}

mod frame {
    use super::*;
    use twoplane_core::frame::{check_chunk_span, frame_resume_point, FrameKind};
    use twoplane_core::jsnum::MAX_SAFE_INTEGER;
    use twoplane_core::ErrorKind;

    #[test]
    fn statuses_print_and_parse_by_their_contract_names() {
        let names: Vec<&str> = StreamStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["complete", "cancelled", "error", "interrupted"]);
        assert_eq!(StreamStatus::parse("error").unwrap(), StreamStatus::Error);
        assert_eq!(StreamStatus::parse("Complete").unwrap_err().kind(), ErrorKind::InvalidStatus);
        assert_eq!(StreamStatus::parse("").unwrap_err().kind(), ErrorKind::InvalidStatus);
    }

    #[test]
    fn kinds_print_parse_and_code_by_the_wire_names() {
        let names: Vec<&str> = FrameKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, ["open", "chunk", "durable", "end", "stale", "absent"]);
        assert_eq!(FrameKind::from_name("end"), Some(FrameKind::End));
        assert_eq!(FrameKind::from_name("End"), None);
        assert_eq!(FrameKind::from_name(""), None);
        assert_eq!(FrameKind::from_code(1), Some(FrameKind::Chunk));
        assert_eq!(FrameKind::from_code(5), Some(FrameKind::Absent));
        assert_eq!(FrameKind::from_code(7), None);
    }

    #[test]
    fn only_end_stale_and_absent_are_terminal() {
        let frames = [
            open("s", 0, 0, 0),
            chunk(0, "a"),
            Frame::Durable { seq: 0 },
            end(0),
            Frame::Stale { floor_seq: 0, durable_seq: 0 },
            Frame::Absent,
        ];
        let kinds: Vec<FrameKind> = frames.iter().map(Frame::kind).collect();
        assert_eq!(kinds, FrameKind::ALL);
        let terminal: Vec<bool> = frames.iter().map(Frame::is_terminal).collect();
        assert_eq!(terminal, [false, false, false, true, true, true]);
        let terminal: Vec<bool> = FrameKind::ALL.iter().map(|k| k.is_terminal()).collect();
        assert_eq!(terminal, [false, false, false, true, true, true]);
    }

    #[test]
    fn a_chunk_may_end_exactly_at_the_largest_safe_offset() {
        let f = Frame::chunk(MAX_SAFE_INTEGER - 1, t("x")).unwrap();
        assert_eq!(f, Frame::Chunk { from: MAX_SAFE_INTEGER - 1, seq: MAX_SAFE_INTEGER, text: t("x") });
        assert_eq!(Frame::chunk(2, t("abc")).unwrap(), Frame::Chunk { from: 2, seq: 5, text: t("abc") });
        let err = Frame::chunk(MAX_SAFE_INTEGER, t("x")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidOffset);
    }

    #[test]
    fn validate_bounds_every_offset_at_the_largest_safe_integer() {
        let max = MAX_SAFE_INTEGER;
        let ok = [
            open("s", max, max, max),
            Frame::Chunk { from: max, seq: max, text: t("") },
            Frame::Durable { seq: max },
            end(max),
            Frame::Stale { floor_seq: max, durable_seq: max },
            Frame::Absent,
            Frame::Durable { seq: 0 },
        ];
        for f in &ok {
            assert!(f.validate().is_ok(), "{f:?}");
        }
        let bad = [
            open("s", max + 1, max, 0),
            open("s", 0, max + 1, 0),
            open("s", 0, 0, max + 1),
            Frame::Chunk { from: max + 1, seq: max + 2, text: t("x") },
            Frame::Chunk { from: max, seq: max + 1, text: t("x") },
            Frame::Durable { seq: max + 1 },
            end(max + 1),
            Frame::Stale { floor_seq: max + 1, durable_seq: 0 },
            Frame::Stale { floor_seq: 0, durable_seq: max + 1 },
        ];
        for f in &bad {
            assert_eq!(f.validate().unwrap_err().kind(), ErrorKind::InvalidOffset, "{f:?}");
        }
    }

    #[test]
    fn a_chunk_span_is_exactly_seq_minus_from() {
        assert!(check_chunk_span(3, 5, 2).is_ok());
        assert!(check_chunk_span(4, 4, 0).is_ok());
        assert!(check_chunk_span(0, 0, 0).is_ok());
        for (from, seq, len) in [(3, 5, 1), (3, 5, 3), (5, 3, 2), (5, 4, 0), (0, 2, 4), (2, 2, 4), (4, 2, 2)] {
            assert_eq!(
                check_chunk_span(from, seq, len).unwrap_err().kind(),
                ErrorKind::ChunkSpan,
                "{from} {seq} {len}"
            );
        }
    }

    #[test]
    fn resume_points_are_the_offsets_a_reconnect_names() {
        assert_eq!(frame_resume_point(&open("s", 4, 9, 1)), Some(4));
        assert_eq!(frame_resume_point(&chunk(7, "abc")), Some(10));
        assert_eq!(frame_resume_point(&Frame::Durable { seq: 2 }), Some(2));
        assert_eq!(frame_resume_point(&end(6)), Some(6));
        assert_eq!(frame_resume_point(&Frame::Stale { floor_seq: 3, durable_seq: 3 }), None);
        assert_eq!(frame_resume_point(&Frame::Absent), None);
    }
}

mod sse {
    use super::*;
    use twoplane_core::jsnum::MAX_SAFE_INTEGER;
    use twoplane_core::sse::{encode_event, encode_events, encode_json_event_utf16, SseDecoder, SseEvent};

    fn utf16(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    fn decode(pieces: &[&[u8]]) -> (Vec<SseEvent>, SseDecoder) {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for p in pieces {
            d.feed(p, &mut out);
        }
        (out, d)
    }

    #[test]
    fn utf16_event_ids_print_every_digit() {
        for (id, printed) in [
            (0.0, "0"),
            (7.0, "7"),
            (10.0, "10"),
            (1234567890.0, "1234567890"),
            (MAX_SAFE_INTEGER as f64, "9007199254740991"),
            (-0.0, "0"),
            (2.5, "2.5"),
            (-1.0, "-1"),
            (f64::NAN, "NaN"),
        ] {
            let mut out = Vec::new();
            encode_json_event_utf16(&mut out, Some(id), &utf16("{}"));
            assert_eq!(String::from_utf16(&out).unwrap(), format!("id: {printed}\ndata: {{}}\n\n"), "{id}");
        }
        // Appends, never replaces: a batch encoder writes many events into one buffer.
        let mut out = utf16("x");
        encode_json_event_utf16(&mut out, None, &[0xD800]);
        let mut want = utf16("xdata: ");
        want.extend([0xD800, 0x0A, 0x0A]);
        assert_eq!(out, want);
    }

    #[test]
    fn long_texts_encode_whole() {
        // Long enough that a wrong size estimate would have to grow (or underflow).
        let text = "ab".repeat(150);
        let frame = chunk(1_000_000, &text);
        let want = format!(
            "id: 1000300\ndata: {{\"type\":\"chunk\",\"from\":1000000,\"seq\":1000300,\"text\":\"{text}\"}}\n\n"
        );
        assert_eq!(encode_event(&frame), want);
        assert_eq!(encode_events(&[frame.clone(), frame]), format!("{want}{want}"));
        let err = Frame::End { seq: 3, status: StreamStatus::Error, error: Some(t(&"e".repeat(100))) };
        assert!(encode_event(&err).ends_with(&format!("\"error\":\"{}\"}}\n\n", "e".repeat(100))));
        let id = Frame::Open { stream_id: t(&"s".repeat(80)), from: 0, seq: 0, durable_seq: 0, ended: true };
        assert!(encode_event(&id).contains(&"s".repeat(80)));
    }

    #[test]
    fn a_bom_split_byte_by_byte_is_dropped_once() {
        let (events, _) = decode(&[b"\xEF", b"\xBB", b"\xBF", b"\xEF\xBB\xBFdata: x\n\n"]);
        // The second BOM is content and spoils the field name.
        assert_eq!(events, vec![]);
        let (events, _) = decode(&[b"\xEF\xBB", b"\xBFdata: y\n\n"]);
        assert_eq!(events, vec![SseEvent { event: "message".into(), data: "y".into(), last_event_id: String::new() }]);
        // A partial BOM followed by other bytes is kept as content of the first line.
        let (events, _) = decode(&[b"\xEF", b"\xBBZ\ndata: z\n\n"]);
        assert_eq!(events, vec![SseEvent { event: "message".into(), data: "z".into(), last_event_id: String::new() }]);
        let (events, _) = decode(&[b"\xEF", b"data: q\n\n"]);
        assert_eq!(events, vec![]);
    }

    #[test]
    fn a_cr_at_the_end_of_one_feed_pairs_with_an_lf_at_the_start_of_the_next() {
        let (events, d) = decode(&[b"id: 1\r", b"\ndata: a\r", b"\n", b"\r", b"\nid: 2\n\n"]);
        assert_eq!(events, vec![SseEvent { event: "message".into(), data: "a".into(), last_event_id: "1".into() }]);
        assert_eq!(d.last_event_id(), "2");
        // A byte other than LF after the CR starts the next line ("x", an unknown field).
        let (events, _) = decode(&[b"data: a\r", b"x\n\n"]);
        assert_eq!(events, vec![SseEvent { event: "message".into(), data: "a".into(), last_event_id: String::new() }]);
    }

    #[test]
    fn retry_reads_the_decimal_value() {
        let (_, d) = decode(&[b"retry: 1234567\n"]);
        assert_eq!(d.retry(), Some(1234567));
        let (_, d) = decode(&[b"retry: 0009\n"]);
        assert_eq!(d.retry(), Some(9));
        let (_, d) = decode(&[b"data: x\n\n"]);
        assert_eq!(d.retry(), None);
    }
}

mod request {
    use twoplane_core::jsnum::MAX_SAFE_INTEGER;
    use twoplane_core::request::{encode_uri_component, stream_request_from_http, subscribe_url, StreamRequest};

    fn from(url: &str, header: Option<&str>) -> f64 {
        stream_request_from_http(url, header).from
    }

    #[test]
    fn a_negative_zero_offset_is_plain_zero() {
        // parseInt("-0") is -0; the contract maps everything not above 0 to 0, and a binding hands
        // `from` back to JavaScript, where -0 and 0 are told apart by Object.is.
        let f = from("/p?from=-0", None);
        assert_eq!(f, 0.0);
        assert!(f.is_sign_positive());
        let f = from("/p", Some("-0"));
        assert!(f.is_sign_positive());
    }

    #[test]
    fn from_offset_truncates_and_saturates() {
        let r = |from| StreamRequest { stream_id: String::new(), from };
        assert_eq!(r(7.9).from_offset(), 7);
        assert_eq!(r(0.5).from_offset(), 0);
        assert_eq!(r(MAX_SAFE_INTEGER as f64 - 1.0).from_offset(), MAX_SAFE_INTEGER - 1);
        assert_eq!(r(MAX_SAFE_INTEGER as f64).from_offset(), MAX_SAFE_INTEGER);
        assert_eq!(r(f64::NEG_INFINITY).from_offset(), 0);
    }

    #[test]
    fn the_query_starts_after_the_first_question_mark() {
        let r = stream_request_from_http("/p?streamId=a?b&from=3", None);
        assert_eq!((r.stream_id.as_str(), r.from), ("a?b", 3.0));
        let r = stream_request_from_http("?from=4&streamId=z", None);
        assert_eq!((r.stream_id.as_str(), r.from), ("z", 4.0));
        // Controls and spaces around the URL are trimmed, inner newlines and tabs deleted.
        let r = stream_request_from_http("\u{1}\n /p?stream\nId=q&fr\rom=5\t \u{0}", None);
        assert_eq!((r.stream_id.as_str(), r.from), ("q", 5.0));
        // A space inside the query is kept (it is not trimmed away).
        let r = stream_request_from_http("/p?streamId=a b", None);
        assert_eq!(r.stream_id, "a b");
    }

    #[test]
    fn stream_id_and_from_are_read_wherever_they_appear() {
        let r = stream_request_from_http("/p?x=1&from=6&y=2&streamId=s&from=7&streamId=t", None);
        assert_eq!((r.stream_id.as_str(), r.from), ("s", 6.0));
        let r = stream_request_from_http("/p?streamId=s&x=1&streamId=t&from=8", None);
        assert_eq!((r.stream_id.as_str(), r.from), ("s", 8.0));
        // The first `from` wins even while `streamId` has not been seen yet.
        let r = stream_request_from_http("/p?from=6&from=7&streamId=s", None);
        assert_eq!((r.stream_id.as_str(), r.from), ("s", 6.0));
        assert_eq!(stream_request_from_http("/p?from=2&from=3", None).from, 2.0);
    }

    #[test]
    fn subscribe_urls_escape_every_reserved_byte() {
        assert_eq!(subscribe_url("/s", "a/b?c&d=e#f%", 5), "/s?streamId=a%2Fb%3Fc%26d%3De%23f%25&from=5");
        assert_eq!(encode_uri_component("\u{7f}\u{80}~"), "%7F%C2%80~");
        assert_eq!(encode_uri_component("AZ"), "AZ");
    }
}

mod jsnum {
    use twoplane_core::jsnum::parse_int10;
    use twoplane_core::request::stream_request_from_http;

    #[test]
    fn parse_int_skips_exactly_javascript_whitespace() {
        // Unicode space separators (category Zs) are JavaScript whitespace...
        for space in ['\u{1680}', '\u{2000}', '\u{2003}', '\u{200A}', '\u{202F}', '\u{205F}', '\u{3000}'] {
            assert_eq!(parse_int10(&format!("{space}7")), 7.0, "{:#x}", space as u32);
        }
        // ...but NEL is whitespace to Rust and not to JavaScript, nor is a zero-width space.
        assert!(parse_int10("\u{85}7").is_nan());
        assert!(parse_int10("\u{200B}7").is_nan());
        // The same rule reaches a subscribe request's offset.
        assert_eq!(stream_request_from_http("/p", Some("\u{3000}12")).from, 12.0);
        assert_eq!(stream_request_from_http("/p", Some("\u{85}12")).from, 0.0);
    }
}
