//! Replays the pgoutput fuzz target's committed inputs on stable Rust: the seeds
//! (fuzz/seeds/pgoutput) and every input that once crashed it (tests/fuzz-crashers/pgoutput).
//! Each must decode without panicking, and whatever decodes must encode back to the same bytes.

use std::path::Path;

use twoplane_relay::pgoutput::{decode, encode};

fn inputs(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut out: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != ".gitkeep"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn seeds_decode_and_encode_back() {
    let seeds = inputs("fuzz/seeds/pgoutput");
    assert!(seeds.len() >= 10, "the seeds are missing: {}", seeds.len());
    for (name, bytes) in seeds {
        let message = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(encode::message(&message), bytes, "{name}");
    }
    // The seeds cover the four messages the relay uses.
    let tags: Vec<u8> = inputs("fuzz/seeds/pgoutput").iter().map(|(_, b)| b[0]).collect();
    for tag in [b'B', b'R', b'I', b'C'] {
        assert!(tags.contains(&tag), "no seed with tag {}", char::from(tag));
    }
    assert!(decode(b"B\0").is_err());
}

#[test]
fn crashers_no_longer_crash() {
    for (name, bytes) in inputs("tests/fuzz-crashers/pgoutput") {
        if let Ok(message) = decode(&bytes) {
            assert_eq!(encode::message(&message), bytes, "{name}");
        }
    }
}
