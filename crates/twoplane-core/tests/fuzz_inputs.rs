//! Replays, on stable Rust, every input kept for a cargo-fuzz target through the contract check
//! that target runs: the hand-written seeds of its corpus (`fuzz/seeds/<target>/`) and the
//! regression inputs a fuzzer actually found (`tests/fuzz-crashers/<target>/`, kept with the fix
//! that made them pass). Seeds must exist for every target; a target may have no regressions yet.

use std::path::{Path, PathBuf};

use twoplane_core::scenarios;

/// Runs `check` on every file in `dir` (a missing folder holds nothing) and returns how many.
fn replay_dir(dir: &Path, check: fn(&[u8]) -> Result<(), String>) -> usize {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return 0,
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    let mut count = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        if let Err(broken) = check(&data) {
            panic!("{}: {broken}", path.display());
        }
        count += 1;
    }
    count
}

fn replay(target: &str, check: fn(&[u8]) -> Result<(), String>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let seeds = replay_dir(&root.join("fuzz/seeds").join(target), check);
    assert!(seeds > 0, "no seeds kept for {target} in fuzz/seeds/{target}/");
    replay_dir(&root.join("tests/fuzz-crashers").join(target), check);
}

#[test]
fn frame_json_seeds_and_regressions() {
    replay("frame_json", scenarios::frame_json_scenario);
}

#[test]
fn sse_decode_seeds_and_regressions() {
    replay("sse_decode", scenarios::sse_scenario);
}

#[test]
fn sse_json_array_seeds_and_regressions() {
    replay("sse_json_array", scenarios::sse_json_array_scenario);
}

#[test]
fn relay_conform_seeds_and_regressions() {
    replay("relay_conform", scenarios::relay_scenario);
}

#[test]
fn producer_event_seeds_and_regressions() {
    replay("producer_event", scenarios::producer_event_scenario);
}

#[test]
fn token_verify_seeds_and_regressions() {
    replay("token_verify", twoplane_token::scenarios::verify_scenario);
}
