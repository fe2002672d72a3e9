//! The demo's simulated model: a deterministic answer for a prompt, cut into token-sized deltas.
//!
//! The text mixes English, emoji and CJK on purpose: emoji are surrogate pairs in UTF-16, and CJK
//! characters are one code unit but three UTF-8 bytes, so the demo exercises every way the byte,
//! character and code-unit counts of a response can disagree. Now and then an emoji is split
//! between two deltas, leaving a lone surrogate at the end of one chunk: the contract allows
//! offsets between the halves of a pair, and a reader that mishandles that shows it on screen.

use twoplane_core::Text;

/// A small, fast, seedable generator (SplitMix64): the demo needs variety, not cryptography, and
/// a fixed seed makes a prompt's answer reproducible in tests.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant at these sizes.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// FNV-1a, to seed the generator from the prompt (stable across runs and platforms).
pub fn seed_of(prompt: &str) -> u64 {
    prompt.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The generator behind the answer to `prompt` with `seed`. The answer's text is drawn from it
/// first ([`compose`]); the token cuts and the pacing continue from the same generator, so they
/// never change the text.
pub fn rng_for(prompt: &str, seed: u64) -> Rng {
    Rng::new(seed_of(prompt.trim()) ^ seed)
}

/// The text the demo's model produces for `prompt` with `seed`: a pure function, and the one
/// place the rule lives. `POST /api/chat {"prompt", "seed"}` streams exactly this text, `twoplane
/// demo-answer` prints it, and the multi-instance test compares every reader against it, so a
/// test knows what was produced without asking the producing process (which it may have killed).
pub fn answer_text(prompt: &str, seed: u64) -> String {
    compose(prompt, &mut rng_for(prompt, seed))
}

const OPENERS: &[&str] = &[
    "Good question.",
    "Here is how I would think about it.",
    "Short answer: it depends, but mostly yes.",
    "Let me walk through it step by step.",
];

const SENTENCES: &[&str] = &[
    "A response travels on two planes that share one coordinate, counted in UTF-16 code units.",
    "The live plane hands every delta to the screen at once; the durable plane writes at checkpoints.",
    "If the page reloads, it reads the stored prefix and joins the live stream exactly where that prefix ends.",
    "Nothing is sent twice and nothing is skipped, because both planes agree on the offsets.",
    "Losing the live plane costs latency, never correctness: the store is always a prefix of the answer.",
    "A slow reader is told to read the store instead of holding the server's memory hostage.",
    "Checkpoints are coarse on purpose: one row every few hundred characters is cheap for any database.",
    "Merging is easy because both planes hold the start of the same text: keep whichever is longer.",
    "Emoji are two code units each, which is exactly where careless offset arithmetic breaks.",
    "Chinese and Japanese characters are one code unit but three bytes, another place where counts disagree.",
    "Every frame carries its own offsets, so a reader can tell a replay from a gap without guessing.",
    "When the answer ends, the chunk rows are folded into the message body in one transaction.",
    "A reader that reconnects names the offset it reached, and the server replays from exactly there.",
    "Nothing here needs a message broker: the database is the slow plane and memory is the fast one.",
];

const CJK: &[&str] = &[
    "流式响应",
    "断点续传",
    "数据库只写检查点",
    "東京の天気は晴れです",
    "ありがとうございます",
    "한국어도 잘 됩니다",
    "一致性比速度更重要",
    "长文本也没问题",
];

const EMOJI: &[&str] = &["🚀", "✨", "🧵", "📦", "🔁", "✅", "🌏", "🐢", "⚡", "🎯", "👩‍💻", "🇯🇵"];

/// The whole answer to `prompt`: a few hundred tokens' worth of mixed-script prose.
pub fn compose(prompt: &str, rng: &mut Rng) -> String {
    let mut out = String::new();
    out.push_str(OPENERS[rng.below(OPENERS.len())]);
    let topic: String = prompt.trim().chars().take(80).collect();
    if !topic.is_empty() {
        out.push_str(" You asked: \u{201c}");
        out.push_str(&topic);
        out.push_str("\u{201d}.");
    }
    // Sentences are dealt from a shuffled deck, so an answer repeats none until it used them all.
    let mut deck: Vec<&str> = Vec::new();
    let paragraphs = rng.between(3, 5);
    for _ in 0..paragraphs {
        out.push_str("\n\n");
        let sentences = rng.between(2, 3);
        for s in 0..sentences {
            if s > 0 {
                out.push(' ');
            }
            if deck.is_empty() {
                deck = SENTENCES.to_vec();
                for i in (1..deck.len()).rev() {
                    deck.swap(i, rng.below(i + 1));
                }
            }
            out.push_str(deck.pop().unwrap_or_default());
            if rng.below(3) == 0 {
                out.push(' ');
                out.push_str(EMOJI[rng.below(EMOJI.len())]);
            }
        }
        out.push(' ');
        out.push_str(CJK[rng.below(CJK.len())]);
        out.push_str(EMOJI[rng.below(EMOJI.len())]);
    }
    out.push_str("\n\nThat's the gist. 以上です 🙏");
    out
}

/// Cut `answer` into deltas of one or two words (or one or two CJK characters), as a model's
/// tokenizer roughly would. Concatenating the deltas gives back exactly `answer`'s code units.
///
/// About one emoji in eight is split between its surrogates, so one delta ends with a lone high
/// surrogate and the next starts with its low half.
pub fn tokenize(answer: &str, rng: &mut Rng) -> Vec<Text> {
    let units: Vec<u16> = answer.encode_utf16().collect();
    let mut tokens = Vec::new();
    let mut start = 0;
    while start < units.len() {
        let mut end = start;
        let words = rng.between(1, 2);
        let mut seen = 0;
        while end < units.len() && seen < words {
            let u = units[end];
            if (0xD800..=0xDBFF).contains(&u) && end + 1 < units.len() {
                if end > start && rng.below(8) == 0 {
                    // Stop after the high half: the pair straddles two deltas.
                    end += 1;
                    break;
                }
                end += 2;
                seen += 1;
                continue;
            }
            end += 1;
            if u == u16::from(b' ') || u == u16::from(b'\n') || u >= 0x2E80 {
                seen += 1;
            }
        }
        tokens.push(Text::from_slice(&units[start..end]));
        start = end;
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_concatenate_to_the_answer() {
        for prompt in ["", "hello", "what is a surrogate pair? 😀", "日本語で"] {
            let mut rng = Rng::new(seed_of(prompt));
            let answer = compose(prompt, &mut rng);
            let tokens = tokenize(&answer, &mut rng);
            assert!(tokens.len() > 100, "{} tokens", tokens.len());
            let mut all = Text::new();
            for t in &tokens {
                assert!(!t.is_empty());
                all.push_units(t.units());
            }
            assert_eq!(all, Text::from(answer.as_str()));
        }
    }

    #[test]
    fn some_emoji_straddle_two_deltas() {
        let mut split = 0;
        for i in 0..50 {
            let mut rng = Rng::new(i);
            let answer = compose("x", &mut rng);
            split += tokenize(&answer, &mut rng).iter().filter(|t| !t.is_well_formed()).count();
        }
        assert!(split > 0);
    }

    #[test]
    fn the_answer_is_a_function_of_prompt_and_seed() {
        assert_eq!(answer_text("q", 7), answer_text(" q ", 7), "the prompt is trimmed first");
        assert_ne!(answer_text("q", 7), answer_text("q", 8));
        let mut rng = rng_for("q", 7);
        assert_eq!(compose("q", &mut rng), answer_text("q", 7));
    }

    #[test]
    fn answers_are_deterministic() {
        let a = compose("same", &mut Rng::new(seed_of("same")));
        let b = compose("same", &mut Rng::new(seed_of("same")));
        assert_eq!(a, b);
    }
}
