//! The pure text functions of docs/contract.md §2: splicing a live tail onto durable text, assembling
//! durable text from a message body and its chunk rows, and the chunk row id.
//!
//! Both planes hold prefixes of one produced text (invariant P), so merging two of them is taking
//! the longer one; [`splice_stream_text`] does exactly that by length and, like the function it
//! replaces, does not check that the shorter is a prefix of the longer.

use crate::jsnum;
use crate::text::Text;

/// `durable` followed by `produced[durable.len()..]` when `produced` is longer, else `durable`.
pub fn splice_stream_text(durable: &[u16], produced: &[u16]) -> Text {
    let mut out = Text::with_capacity(durable.len().max(produced.len()));
    out.push_units(durable);
    if produced.len() > durable.len() {
        out.push_units(&produced[durable.len()..]);
    }
    out
}

/// Where the live tail starts in a splice: `Some(durable.len())` when `produced` contributes
/// anything, `None` when the durable text wins whole. Lets a UI extend rather than rebuild.
pub fn splice_point(durable_len: usize, produced_len: usize) -> Option<usize> {
    (produced_len > durable_len).then_some(durable_len)
}

/// One chunk row as the durable plane stores it: the end offset and its slice of text (a missing
/// text counts as empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkRow {
    pub seq: u64,
    pub text: Option<Text>,
}

/// The order in which chunk rows are concatenated: ascending `seq`, input order kept for equal
/// `seq`. Values that are not numbers (NaN) sort after every number, so the order is total.
pub fn assembly_order(seqs: &[f64]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..seqs.len() as u32).collect();
    // `sort_by` is stable, and `total_cmp` is a total order, so no input can make it misbehave.
    // Adding 0.0 turns -0 into +0 first: JavaScript's comparator sees them as equal.
    order.sort_by(|&a, &b| (seqs[a as usize] + 0.0).total_cmp(&(seqs[b as usize] + 0.0)));
    order
}

/// `body` (missing counts as empty) followed by the chunks' texts in [`assembly_order`].
/// No dedupe and no gap check: the store's rows are taken as they are.
pub fn assemble_durable_text(body: Option<&Text>, chunks: &[ChunkRow]) -> Text {
    let seqs: Vec<f64> = chunks.iter().map(|c| c.seq as f64).collect();
    let total = body.map_or(0, Text::len) + chunks.iter().map(|c| c.text.as_ref().map_or(0, Text::len)).sum::<usize>();
    let mut out = Text::with_capacity(total);
    if let Some(body) = body {
        out.push_units(body.units());
    }
    for i in assembly_order(&seqs) {
        if let Some(text) = &chunks[i as usize].text {
            out.push_units(text.units());
        }
    }
    out
}

/// The deterministic chunk row id `"<streamId>:<seq>"`.
pub fn stream_chunk_id(stream_id: &str, seq: u64) -> String {
    format!("{stream_id}:{seq}")
}

/// [`stream_chunk_id`] for JavaScript callers: any UTF-16 id, and `seq` printed as `String(seq)`.
pub fn stream_chunk_id_units(stream_id: &[u16], seq: f64) -> Text {
    stream_chunk_id_text(stream_id, Text::from(jsnum::format(seq).as_str()).units())
}

/// The chunk id from a `seq` that JavaScript already turned into text: what the TypeScript original
/// produced for a `seq` that was not a number (`undefined` gives `"<id>:undefined"`, the string
/// `"05"` gives `"<id>:05"`). The join itself is the same rule as for numbers.
pub fn stream_chunk_id_text(stream_id: &[u16], seq_text: &[u16]) -> Text {
    let mut out = Text::from_slice(stream_id);
    out.push_str(":");
    out.push_units(seq_text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Text {
        Text::from(s)
    }

    #[test]
    fn splice_takes_the_longer_by_length() {
        assert_eq!(splice_stream_text(t("ab").units(), t("xyz").units()), t("abz"));
        assert_eq!(splice_stream_text(t("abc").units(), t("x").units()), t("abc"));
        assert_eq!(splice_stream_text(t("").units(), t("xy").units()), t("xy"));
        assert_eq!(splice_point(2, 3), Some(2));
        assert_eq!(splice_point(3, 3), None);
    }

    #[test]
    fn splice_can_join_surrogate_halves() {
        let durable = Text::from_units(vec![0xD83D]);
        let produced = t("😀");
        assert_eq!(splice_stream_text(durable.units(), produced.units()), produced);
    }

    #[test]
    fn assembly_orders_by_seq_stably() {
        let rows = vec![
            ChunkRow { seq: 5, text: Some(t("c")) },
            ChunkRow { seq: 2, text: Some(t("a")) },
            ChunkRow { seq: 5, text: Some(t("d")) },
            ChunkRow { seq: 3, text: None },
        ];
        assert_eq!(assemble_durable_text(Some(&t("B:")), &rows), t("B:acd"));
        assert_eq!(assemble_durable_text(None, &[]), t(""));
        assert_eq!(assembly_order(&[f64::NAN, 1.0, 0.0]), vec![2, 1, 0]);
        assert_eq!(assembly_order(&[0.0, -0.0]), vec![0, 1]);
    }

    #[test]
    fn chunk_ids() {
        assert_eq!(stream_chunk_id("m1", 42), "m1:42");
        assert_eq!(stream_chunk_id_units(t("m").units(), 1.5), t("m:1.5"));
    }
}
