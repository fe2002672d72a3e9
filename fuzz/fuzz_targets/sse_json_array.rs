//! The batch SSE splitter: arbitrary code units and resume point counts never panic, and the count
//! of elements is exact. The check itself lives in `twoplane_core::scenarios`, so crash inputs
//! replay on stable Rust.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = twoplane_core::scenarios::sse_json_array_scenario(data) {
        panic!("{broken}");
    }
});
