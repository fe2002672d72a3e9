//! pgoutput decoding: never panics on any bytes, and every message it accepts encodes back to
//! exactly the bytes it came from (nothing is silently dropped, nothing is invented).
#![no_main]

use libfuzzer_sys::fuzz_target;
use twoplane_relay::pgoutput::{decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = decode(data) {
        assert_eq!(encode::message(&message), data, "{message:?}");
    }
});
