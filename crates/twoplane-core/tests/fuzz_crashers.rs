//! Replays every input kept in `tests/fuzz-crashers/<target>/` through the contract check its
//! fuzz target runs, so a crash once found by cargo-fuzz stays fixed, on stable Rust.

use std::path::PathBuf;

use twoplane_core::contract;

fn replay(target: &str, check: fn(&[u8]) -> Result<(), String>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-crashers").join(target);
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        if let Err(broken) = check(&data) {
            panic!("{}: {broken}", path.display());
        }
        count += 1;
    }
    assert!(count > 0, "no inputs kept for {target}");
}

#[test]
fn frame_json_crashers() {
    replay("frame_json", contract::frame_json_scenario);
}

#[test]
fn sse_decode_crashers() {
    replay("sse_decode", contract::sse_scenario);
}

#[test]
fn relay_conform_crashers() {
    replay("relay_conform", contract::relay_scenario);
}
