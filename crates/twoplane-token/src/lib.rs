//! Read tokens: what an application mints so that one browser may read one stream.
//!
//! The format (docs/server.md, "Read tokens", says the same for people writing a signer):
//!
//! ```text
//! token   = B64(payload) "." B64(mac)
//! payload = UTF-8 JSON {"sid": <stream id>, "exp": <unix seconds>} with "uid": <user id> last
//!           when there is one
//! mac     = HMAC-SHA256(secret, the ASCII bytes of B64(payload))
//! B64     = base64url without padding (RFC 4648 §5)
//! ```
//!
//! Guarantees:
//! - [`verify`] checks the MAC before it reads anything inside the payload, in constant time
//!   (`Mac::verify_slice`), and only then the stream id and the expiry; every refusal is a
//!   [`Denied`] that callers answer identically, so neither the answer nor the work done reveals
//!   whether the stream exists (the stream is never looked up here).
//! - A token is valid while `now < exp` (whole seconds), for exactly the stream id it names.
//! - [`mint`] writes the keys in the order above with no whitespace, so signers in other
//!   languages that follow the format produce the same bytes (tests/vectors/token.json pins it).
//!
//! This crate is the one place the rule lives (the token format, and which bytes of a secret are
//! the key: [`secret_key`]): `twoplane token`, the server's authorizer (the
//! server re-exports it as `twoplane_server::token`), the reader's cancel route and the vector
//! generator all call it. It is pure (no I/O, no clock but [`unix_now`]), so the `token_verify`
//! fuzz target (fuzz/) runs it alone; [`scenarios`] holds what that target checks.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Secrets shorter than this are refused when they are loaded (a guessable key makes every
/// token forgeable).
pub const MIN_SECRET_BYTES: usize = 32;

/// Longer tokens are refused before any decoding (they cannot be ours: ids are bounded too).
pub const MAX_TOKEN_CHARS: usize = 4096;

/// What a token grants, as signed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The one stream this token reads.
    #[serde(rename = "sid")]
    pub stream_id: String,
    /// Unix time in seconds from which the token is refused.
    #[serde(rename = "exp")]
    pub expires_at: u64,
    /// The application's user, carried for its logs; the server does not interpret it.
    #[serde(rename = "uid", default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// Why a token was refused. Callers log it at debug level at most and answer every variant the
/// same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// No token was presented.
    Missing,
    /// Not `B64 "." B64`, or too long, or a MAC of the wrong length.
    Malformed,
    /// The MAC does not match (tampered, or signed with another secret).
    BadSignature,
    /// Signed by us but not JSON of the documented shape.
    BadPayload,
    /// Valid for another stream.
    WrongStream,
    /// Past its expiry.
    Expired,
}

impl Denied {
    pub fn as_str(self) -> &'static str {
        match self {
            Denied::Missing => "missing",
            Denied::Malformed => "malformed",
            Denied::BadSignature => "bad_signature",
            Denied::BadPayload => "bad_payload",
            Denied::WrongStream => "wrong_stream",
            Denied::Expired => "expired",
        }
    }
}

/// The key a secret's bytes stand for: without trailing spaces, tabs, CRs and LFs (a file's final
/// newline, or an editor's). Every loader of a secret applies this before [`mint`] or [`verify`];
/// signers in other languages do the same (tests/vectors/token.json has secrets that end so).
pub fn secret_key(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n')).map_or(0, |i| i + 1);
    &bytes[..end]
}

fn mac_for(secret: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length (longer ones are hashed first), so this cannot fail.
    <HmacSha256 as Mac>::new_from_slice(secret).expect("HMAC accepts keys of every length")
}

/// The token for `claims`, signed with `secret`.
pub fn mint(secret: &[u8], claims: &Claims) -> String {
    seal(secret, &serde_json::to_vec(claims).expect("claims serialize"))
}

/// Any `payload` bytes as a token signed with `secret` (`mint` gives it the claims' JSON; tests
/// give it payloads a correct signer would never write).
fn seal(secret: &[u8], payload: &[u8]) -> String {
    let payload = URL_SAFE_NO_PAD.encode(payload);
    let mut mac = mac_for(secret);
    mac.update(payload.as_bytes());
    let sig = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{payload}.{sig}")
}

/// Check `token` for reading `stream_id` at unix time `now` (seconds); the claims when it holds.
pub fn verify(secret: &[u8], token: &str, stream_id: &str, now: u64) -> Result<Claims, Denied> {
    if token.is_empty() {
        return Err(Denied::Missing);
    }
    if token.len() > MAX_TOKEN_CHARS {
        return Err(Denied::Malformed);
    }
    let (payload, sig) = token.split_once('.').ok_or(Denied::Malformed)?;
    let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| Denied::Malformed)?;
    let mut mac = mac_for(secret);
    mac.update(payload.as_bytes());
    // Constant time in the MAC's bytes; a MAC of another length is refused without comparing.
    mac.verify_slice(&sig).map_err(|_| Denied::BadSignature)?;
    let json = URL_SAFE_NO_PAD.decode(payload).map_err(|_| Denied::BadPayload)?;
    let claims: Claims = serde_json::from_slice(&json).map_err(|_| Denied::BadPayload)?;
    if claims.stream_id != stream_id {
        return Err(Denied::WrongStream);
    }
    if now >= claims.expires_at {
        return Err(Denied::Expired);
    }
    Ok(claims)
}

/// Seconds since the Unix epoch, as [`verify`] expects `now`.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Test support, not library API: what the `token_verify` fuzz target checks (fuzz/), replayed
/// on stable Rust over its seeds and regressions by crates/twoplane-core/tests/fuzz_inputs.rs
/// (with every other target's).
#[cfg(feature = "testing")]
pub mod scenarios {
    use super::{seal, verify, Claims, Denied, MAX_TOKEN_CHARS};

    const SECRET: &[u8] = b"the fuzz target's secret, 32 bytes or more";
    const OTHER_SECRET: &[u8] = b"another secret, also 32 bytes or more";
    const STREAM: &str = "s-1";
    /// 2023-11-14: seeds carry expiries on both sides of it.
    const NOW: u64 = 1_700_000_000;

    /// `data` three ways, each verified for `STREAM` at `NOW`:
    /// - presented as it is (lossy UTF-8), it is refused without a panic (accepting it would mean
    ///   a forged MAC), and called missing only when empty;
    /// - signed as a payload with another secret, it is refused as badly signed (or as malformed
    ///   when too long to be a token);
    /// - signed as a payload with the secret, the verdict is exactly the documented rule applied
    ///   to the JSON claims it holds (too long, not the claims' JSON, another stream, expired,
    ///   or accepted, in that order), and accepted claims mint a token that verifies to them.
    pub fn verify_scenario(data: &[u8]) -> Result<(), String> {
        check(data, verify)
    }

    /// The signature of [`verify`], so the scenario's own tests can hand it broken verifiers.
    type Verify = fn(&[u8], &str, &str, u64) -> Result<Claims, Denied>;

    /// [`verify_scenario`] against `verify`.
    fn check(data: &[u8], verify: Verify) -> Result<(), String> {
        let presented = String::from_utf8_lossy(data);
        match verify(SECRET, &presented, STREAM, NOW) {
            Ok(claims) => return Err(format!("an unsigned token was accepted: {claims:?}")),
            Err(Denied::Missing) if !presented.is_empty() => return Err("a token was called missing".into()),
            Err(_) => {}
        }
        // A MAC has the same length whatever the secret: both tokens below are this long.
        let forged = seal(OTHER_SECRET, data);
        let too_long = forged.len() > MAX_TOKEN_CHARS;
        let want = if too_long { Denied::Malformed } else { Denied::BadSignature };
        let got = verify(SECRET, &forged, STREAM, NOW);
        if got != Err(want) {
            return Err(format!("a payload signed with another secret gave {got:?}, not {want:?}"));
        }
        let sealed = seal(SECRET, data);
        let expected = if too_long {
            Err(Denied::Malformed)
        } else {
            match serde_json::from_slice::<Claims>(data) {
                Err(_) => Err(Denied::BadPayload),
                Ok(c) if c.stream_id != STREAM => Err(Denied::WrongStream),
                Ok(c) if NOW >= c.expires_at => Err(Denied::Expired),
                Ok(c) => Ok(c),
            }
        };
        let got = verify(SECRET, &sealed, STREAM, NOW);
        if got != expected {
            return Err(format!("a signed payload gave {got:?}, the rule says {expected:?}"));
        }
        if let Ok(claims) = got {
            let again = verify(SECRET, &super::mint(SECRET, &claims), STREAM, NOW);
            if again.as_ref() != Ok(&claims) {
                return Err(format!("{claims:?} minted again verified as {again:?}"));
            }
        }
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// A payload of `len` bytes of valid claims for `STREAM` that expire after `NOW`.
        fn claims_of_len(len: usize) -> Vec<u8> {
            let bare = br#"{"sid":"s-1","exp":1800000000,"uid":""}"#.len();
            format!(r#"{{"sid":"s-1","exp":1800000000,"uid":"{}"}}"#, "u".repeat(len - bare)).into_bytes()
        }

        /// The scenario catches verifiers that break the rule, each on some input: it is a check
        /// that can fail, not one that passes whatever `verify` does.
        #[test]
        fn the_scenario_catches_broken_verifiers() {
            // 3,039 bytes of payload make a token of exactly MAX_TOKEN_CHARS; 3,040 one past it.
            let inputs: Vec<Vec<u8>> = vec![
                br#"{"sid":"s-1","exp":1800000000}"#.to_vec(),
                br#"{"sid":"s-1","exp":1700000000}"#.to_vec(),
                br#"{"sid":"s-2","exp":1800000000}"#.to_vec(),
                br#"{"sid":1}"#.to_vec(),
                b"a token-shaped string.c2ln".to_vec(),
                b"no dot at all".to_vec(),
                claims_of_len(3_039),
                claims_of_len(3_040),
            ];
            assert_eq!(seal(SECRET, &inputs[6]).len(), MAX_TOKEN_CHARS);
            for input in &inputs {
                check(input, verify).unwrap();
            }
            let broken: [(&str, Verify); 7] = [
                ("accepts what expires now", |k, t, s, now| verify(k, t, s, now.saturating_sub(1))),
                ("accepts another stream's token", |k, t, s, now| match verify(k, t, s, now) {
                    Err(Denied::WrongStream) => verify(k, t, "s-2", now),
                    other => other,
                }),
                ("calls every refusal missing", |k, t, s, now| verify(k, t, s, now).map_err(|_| Denied::Missing)),
                ("allows one character more", |k, t, s, now| {
                    verify(k, t.get(..t.len().saturating_sub(1)).unwrap_or(t), s, now)
                }),
                ("accepts another secret", |_, t, s, now| {
                    verify(OTHER_SECRET, t, s, now).or_else(|_| verify(SECRET, t, s, now))
                }),
                ("refuses everything as malformed", |_, _, _, _| Err(Denied::Malformed)),
                ("calls a string without a dot missing", |k, t, s, now| match t.contains('.') {
                    true => verify(k, t, s, now),
                    false => Err(Denied::Missing),
                }),
            ];
            for (name, broken) in broken {
                let caught = inputs.iter().any(|input| check(input, broken).is_err());
                assert!(caught, "the scenario let a verifier that {name} pass");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_secret_key_leaves_trailing_blank_bytes_out() {
        assert_eq!(super::secret_key(b"k3y \t\r\n"), b"k3y");
        assert_eq!(super::secret_key(b" inner space\n\n"), b" inner space");
        assert_eq!(super::secret_key(b"\r\n"), b"");
        assert_eq!(super::secret_key(b"no\x0bvt"), b"no\x0bvt");
    }

    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn claims(sid: &str, exp: u64, uid: Option<&str>) -> Claims {
        Claims { stream_id: sid.into(), expires_at: exp, user_id: uid.map(Into::into) }
    }

    #[test]
    fn a_minted_token_verifies_for_its_stream_until_it_expires() {
        let t = mint(SECRET, &claims("m-1", 1000, Some("alice")));
        assert_eq!(verify(SECRET, &t, "m-1", 999), Ok(claims("m-1", 1000, Some("alice"))));
        assert_eq!(verify(SECRET, &t, "m-1", 1000), Err(Denied::Expired));
        assert_eq!(verify(SECRET, &t, "m-2", 999), Err(Denied::WrongStream));
        assert_eq!(verify(b"another secret, just as long as it", &t, "m-1", 999), Err(Denied::BadSignature));
    }

    #[test]
    fn the_payload_is_the_documented_json() {
        let t = mint(SECRET, &claims("a\"b/é", 7, None));
        let payload = URL_SAFE_NO_PAD.decode(t.split('.').next().unwrap()).unwrap();
        assert_eq!(String::from_utf8(payload).unwrap(), r#"{"sid":"a\"b/é","exp":7}"#);
        let t = mint(SECRET, &claims("s", 7, Some("u")));
        let payload = URL_SAFE_NO_PAD.decode(t.split('.').next().unwrap()).unwrap();
        assert_eq!(String::from_utf8(payload).unwrap(), r#"{"sid":"s","exp":7,"uid":"u"}"#);
    }

    #[test]
    fn any_changed_byte_is_refused() {
        let t = mint(SECRET, &claims("m-1", u64::MAX, None));
        for i in 0..t.len() {
            for replacement in [b'A', b'_', b'.', b'='] {
                let mut bytes = t.clone().into_bytes();
                if bytes[i] == replacement {
                    continue;
                }
                bytes[i] = replacement;
                let changed = String::from_utf8(bytes).unwrap();
                assert!(verify(SECRET, &changed, "m-1", 0).is_err(), "{changed} was accepted");
            }
        }
        assert!(verify(SECRET, &format!("{t}A"), "m-1", 0).is_err());
        assert!(verify(SECRET, &t[..t.len() - 1], "m-1", 0).is_err());
    }

    proptest::proptest! {
        /// Minted tokens verify for their claims; an arbitrary string never panics and is never
        /// accepted unless it is exactly a token minted with the secret.
        #[test]
        fn only_minted_tokens_verify(
            sid in "\\PC{0,12}",
            uid in proptest::option::of("\\PC{0,8}"),
            exp in 1u64..u64::MAX,
            junk in "[A-Za-z0-9_.=-]{0,80}",
        ) {
            let claims = claims(&sid, exp, uid.as_deref());
            let token = mint(SECRET, &claims);
            proptest::prop_assert_eq!(verify(SECRET, &token, &sid, exp - 1), Ok(claims.clone()));
            proptest::prop_assert_eq!(verify(SECRET, &token, &sid, exp), Err(Denied::Expired));
            // Junk appended to the payload or the MAC, or junk alone.
            for candidate in [format!("{junk}{token}"), format!("{token}{junk}"), junk.clone()] {
                if candidate != token {
                    proptest::prop_assert!(verify(SECRET, &candidate, &sid, 0).is_err(), "{} accepted", candidate);
                }
            }
        }
    }

    #[test]
    fn unix_now_is_the_system_clock_in_seconds() {
        let secs = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let before = secs();
        let now = unix_now();
        assert!(before <= now && now <= secs() && now > 1_700_000_000, "{now}");
    }

    #[test]
    fn refusals_keep_their_names_in_logs() {
        let all = [
            Denied::Missing,
            Denied::Malformed,
            Denied::BadSignature,
            Denied::BadPayload,
            Denied::WrongStream,
            Denied::Expired,
        ];
        let names: Vec<&str> = all.iter().map(|d| d.as_str()).collect();
        assert_eq!(names, ["missing", "malformed", "bad_signature", "bad_payload", "wrong_stream", "expired"]);
    }

    #[test]
    fn shapes_that_are_not_tokens_are_refused() {
        assert_eq!(verify(SECRET, "", "m", 0), Err(Denied::Missing));
        assert_eq!(verify(SECRET, "abc", "m", 0), Err(Denied::Malformed));
        assert_eq!(verify(SECRET, "abc.!!", "m", 0), Err(Denied::Malformed));
        assert_eq!(verify(SECRET, &"a".repeat(MAX_TOKEN_CHARS + 1), "m", 0), Err(Denied::Malformed));
        // A correctly signed payload that is not the claims' shape.
        assert_eq!(verify(SECRET, &seal(SECRET, br#"{"sid":1}"#), "m", 0), Err(Denied::BadPayload));
    }
}
