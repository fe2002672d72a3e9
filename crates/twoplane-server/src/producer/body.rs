//! UTF-8 arriving in pieces: a streaming request body whose chunks may split a character, and
//! the reading of a producer's streaming body ([`TextBody`]), which `body`, `events` and
//! `ui-message-stream` share.
//!
//! Guarantees:
//! - [`Utf8Pieces::feed`] returns exactly the complete characters that the bytes so far make,
//!   in order, each once; an incomplete character at the end of a piece (at most 3 bytes) is
//!   carried into the next one.
//! - At the first byte that cannot be part of valid UTF-8 it returns the text before that byte
//!   and the error; everything from that byte on is never returned. [`Utf8Pieces::finish`]
//!   reports an incomplete character left at the end of the body the same way.
//! - So the text handed out is always the longest valid UTF-8 prefix of the body read so far,
//!   whatever the chunking.

use axum::body::Body;
use futures::StreamExt;

use super::errors::ApiError;
use super::registry::Producing;

/// The body stopped being valid UTF-8.
#[derive(Debug, PartialEq, Eq)]
pub struct NotUtf8;

/// An incremental UTF-8 decoder (see the module guarantees).
#[derive(Default)]
pub struct Utf8Pieces {
    /// The start of a character whose remaining bytes have not arrived yet.
    carry: Vec<u8>,
}

impl Utf8Pieces {
    /// The text `piece` completes: `Ok` with all of it, or `Err` with the valid text before the
    /// first bad byte.
    pub fn feed(&mut self, piece: &[u8]) -> Result<String, (String, NotUtf8)> {
        let joined;
        let bytes = if self.carry.is_empty() {
            piece
        } else {
            let mut v = std::mem::take(&mut self.carry);
            v.extend_from_slice(piece);
            joined = v;
            &joined[..]
        };
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text.to_owned()),
            Err(e) => {
                // `valid_up_to` ends the prefix the check just validated.
                let text = std::str::from_utf8(&bytes[..e.valid_up_to()]).map(str::to_owned).unwrap_or_default();
                match e.error_len() {
                    // An incomplete character at the end: keep its bytes for the next piece.
                    None => {
                        self.carry = bytes[e.valid_up_to()..].to_vec();
                        Ok(text)
                    }
                    Some(_) => Err((text, NotUtf8)),
                }
            }
        }
    }

    /// The body ended: an incomplete character still carried is an error.
    pub fn finish(&mut self) -> Result<(), NotUtf8> {
        if self.carry.is_empty() {
            Ok(())
        } else {
            self.carry.clear();
            Err(NotUtf8)
        }
    }
}

/// A streaming request body read as UTF-8 text as it arrives: bounded by `max_body_bytes`,
/// ending at once on a reader's cancel (`409 cancelled`) or a client that went away
/// (`400 body_aborted`; what arrived stays, and the stream stays open for a retry from `seq`).
pub(super) struct TextBody {
    data: axum::body::BodyDataStream,
    pieces: Utf8Pieces,
    read: u64,
    limit: u64,
}

/// One piece of a [`TextBody`]: its complete characters, and whether an invalid byte followed
/// them (the body is then over: nothing after that byte is ever read).
pub(super) struct TextPiece {
    pub text: String,
    pub bad: bool,
}

impl TextBody {
    pub fn new(request: Body, limit: u64) -> TextBody {
        TextBody { data: request.into_data_stream(), pieces: Utf8Pieces::default(), read: 0, limit }
    }

    /// The next piece, or `None` at the end of a body that was valid UTF-8 throughout.
    pub async fn next(&mut self, p: &Producing) -> Result<Option<TextPiece>, ApiError> {
        let next = tokio::select! {
            biased;
            () = p.cancel.cancelled() => return Err(ApiError::cancelled(&p.id, p.handle.seq())),
            next = self.data.next() => next,
        };
        let bytes = match next {
            None => {
                if self.pieces.finish().is_err() {
                    return Err(ApiError::invalid_utf8(
                        p.handle.seq(),
                        "the body ended inside a character; what came before it was appended",
                    ));
                }
                return Ok(None);
            }
            Some(Ok(bytes)) => bytes,
            Some(Err(e)) => {
                tracing::debug!(stream_id = ?p.id, error = %e, "streaming body ended early");
                return Err(ApiError::bad_request("body_aborted", "the request body ended with an error")
                    .with_seq(p.handle.seq()));
            }
        };
        self.read += bytes.len() as u64;
        if self.read > self.limit {
            return Err(ApiError::too_large(self.limit as usize, "a streaming body").with_seq(p.handle.seq()));
        }
        Ok(Some(match self.pieces.feed(&bytes) {
            Ok(text) => TextPiece { text, bad: false },
            Err((text, NotUtf8)) => TextPiece { text, bad: true },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode `body` cut at `cuts`; the text handed out and whether it stayed valid.
    fn run(body: &[u8], cuts: &[usize]) -> (String, bool) {
        let mut d = Utf8Pieces::default();
        let mut out = String::new();
        let mut at = 0;
        for &cut in cuts.iter().chain(std::iter::once(&body.len())) {
            match d.feed(&body[at..cut]) {
                Ok(t) => out.push_str(&t),
                Err((t, NotUtf8)) => {
                    out.push_str(&t);
                    return (out, false);
                }
            }
            at = cut;
        }
        let ok = d.finish().is_ok();
        (out, ok)
    }

    proptest::proptest! {
        /// Any bytes, any chunking: the text handed out is the longest valid UTF-8 prefix, and
        /// the body is reported bad exactly when the bytes are not UTF-8.
        #[test]
        fn any_chunking_of_any_bytes_gives_the_longest_valid_prefix(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            // Mostly valid UTF-8, so that the valid paths are exercised as much as the bad ones.
            text in "\\PC{0,24}",
            mut cuts in proptest::collection::vec(0usize..200, 0..8),
            use_text in proptest::prelude::any::<bool>(),
        ) {
            let bytes = if use_text { text.into_bytes() } else { body };
            cuts.iter_mut().for_each(|c| *c %= bytes.len() + 1);
            cuts.sort_unstable();
            let expected_len = match std::str::from_utf8(&bytes) {
                Ok(_) => bytes.len(),
                Err(e) => e.valid_up_to(),
            };
            let (out, ok) = run(&bytes, &cuts);
            proptest::prop_assert_eq!(out.as_bytes(), &bytes[..expected_len]);
            proptest::prop_assert_eq!(ok, std::str::from_utf8(&bytes).is_ok());
        }
    }

    #[test]
    fn every_split_of_valid_text_gives_the_text() {
        let text = "aé€😀\u{10FFFF}z";
        let b = text.as_bytes();
        for i in 0..=b.len() {
            for j in i..=b.len() {
                assert_eq!(run(b, &[i, j]), (text.to_owned(), true), "cuts {i} {j}");
            }
        }
    }

    #[test]
    fn the_longest_valid_prefix_is_kept_whatever_the_chunking() {
        // A lone continuation byte, an overlong form, a surrogate, a truncated character.
        for bad in [&b"ab\x80cd"[..], b"ab\xC0\xAFcd", b"ab\xED\xA0\x80cd", b"ab\xF0\x9F\x98"] {
            let expected = std::str::from_utf8(&bad[..std::str::from_utf8(bad).unwrap_err().valid_up_to()]).unwrap();
            for i in 0..=bad.len() {
                let (text, ok) = run(bad, &[i]);
                assert!(!ok, "{bad:?} split at {i} was accepted");
                assert_eq!(text, expected, "{bad:?} split at {i}");
            }
        }
    }
}
