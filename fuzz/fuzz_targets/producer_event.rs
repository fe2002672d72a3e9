//! The events a producer sends (`twoplane_core::message::input`): decoding never panics, a
//! decoded value names no reserved key, and what decodes, written back out, decodes to itself.
//! The check lives in `twoplane_core::scenarios`, so crash inputs replay on stable Rust.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = twoplane_core::scenarios::producer_event_scenario(data) {
        panic!("{broken}");
    }
});
