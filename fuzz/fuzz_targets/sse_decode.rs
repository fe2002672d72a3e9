//! SSE decoding: never panics, and splitting the input anywhere changes nothing.
//! The check itself lives in `twoplane_core::scenarios`, so crash inputs replay on stable Rust.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = twoplane_core::scenarios::sse_scenario(data) {
        panic!("{broken}");
    }
});
