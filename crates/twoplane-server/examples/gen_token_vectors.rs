//! Writes `tests/vectors/token.json`: read tokens minted by the server's one signing rule
//! (`twoplane_server::token`, the secret trimmed as `twoplane_server::access` loads it), which
//! the JavaScript signer (`twoplane/token`) and the Python example (examples/python) must
//! reproduce byte for byte.
//!
//! Usage: `cargo run -p twoplane-server --example gen_token_vectors -- <out-dir>`. Deterministic;
//! scripts/test-server.sh regenerates it and diffs it with the checked-in copy.

use std::fs;
use std::path::Path;

use serde_json::json;
use twoplane_server::access::Secret;
use twoplane_server::token::{mint, verify, Claims};

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| "tests/vectors".to_owned());
    let out = Path::new(&out);
    fs::create_dir_all(out).expect("create output dir");
    let secrets = [
        "0123456789abcdef0123456789abcdef",
        // A file's final newline (and a CR before it) are not part of the secret.
        "a secret with spaces, long enough to be one\r\n",
        "clé secrète assez longue pour être acceptée ✓",
    ];
    let ids: &[(&str, Option<&str>)] = &[
        ("m-1", None),
        ("m-1", Some("alice")),
        ("a-18f2c9d3e41-0000abcd-7", Some("user 42")),
        ("quote\"back\\slash/solidus", None),
        ("control\n\t\u{1}\u{7f}", Some("\u{8}\u{c}\r")),
        ("é€😀\u{2028}\u{10FFFF}", Some("Zoë")),
        ("", None),
    ];
    let expiries = [0u64, 1_700_000_000, (1 << 53) - 1];
    let mut cases = Vec::new();
    for (i, secret) in secrets.iter().enumerate() {
        let key = Secret::new(secret.as_bytes(), "a vector's secret").expect("vector secrets are long enough");
        for (j, (id, user)) in ids.iter().enumerate() {
            let expires_at = expiries[(i + j) % expiries.len()];
            let claims = Claims { stream_id: (*id).to_owned(), expires_at, user_id: user.map(str::to_owned) };
            let token = mint(key.bytes(), &claims);
            // The generator checks its own output: valid just before the expiry, for that id only.
            if expires_at > 0 {
                assert_eq!(verify(key.bytes(), &token, id, expires_at - 1), Ok(claims.clone()));
            }
            assert!(verify(key.bytes(), &token, id, expires_at).is_err());
            assert!(verify(key.bytes(), &token, &format!("{id}x"), 0).is_err());
            cases.push(json!({
                "secret": secret,
                "streamId": id,
                "expiresAt": expires_at,
                "userId": user,
                "token": token,
            }));
        }
    }
    let mut text = String::from("{\n\"sign\": [\n");
    for (i, case) in cases.iter().enumerate() {
        text.push_str("  ");
        text.push_str(&serde_json::to_string(case).expect("json"));
        text.push_str(if i + 1 < cases.len() { ",\n" } else { "\n" });
    }
    text.push_str("]\n}\n");
    fs::write(out.join("token.json"), text).expect("write token.json");
}
