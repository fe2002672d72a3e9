//! Conform plus reader against invariants S and P over relayed productions.
//! The check itself lives in `twoplane_core::scenarios`, so crash inputs replay on stable Rust.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = twoplane_core::scenarios::relay_scenario(data) {
        panic!("{broken}");
    }
});
