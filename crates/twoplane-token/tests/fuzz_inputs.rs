//! Replays, on stable Rust, every input kept for the `token_verify` fuzz target through the
//! scenario that target runs: the hand-written seeds (`fuzz/seeds/token_verify/`, which must
//! exist) and the inputs a fuzzer found (`tests/fuzz-crashers/token_verify/`, kept with their fix).

use std::path::{Path, PathBuf};

use twoplane_token::scenarios::verify_scenario;

/// Runs the scenario on every file in `dir` (a missing folder holds nothing); returns how many.
fn replay_dir(dir: &Path) -> usize {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return 0,
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    let mut count = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        if let Err(broken) = verify_scenario(&data) {
            panic!("{}: {broken}", path.display());
        }
        count += 1;
    }
    count
}

#[test]
fn token_verify_seeds_and_regressions() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let seeds = replay_dir(&root.join("fuzz/seeds/token_verify"));
    assert!(seeds > 0, "no seeds kept in fuzz/seeds/token_verify/");
    replay_dir(&root.join("tests/fuzz-crashers/token_verify"));
}
