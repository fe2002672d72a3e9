//! The batch SSE splitter (`twoplane_core::sse::encode_json_array_events`): arbitrary code units
//! and resume points never panic, and the count of elements is exact: of two calls whose resume
//! point counts differ by one, at most one succeeds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use twoplane_core::sse::encode_json_array_events;

fuzz_target!(|data: &[u8]| {
    // First byte: how many resume points; the rest: the code units (little-endian pairs), so
    // surrogates and every structural character are reachable.
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let units: Vec<u16> = rest.chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect();
    let ids: Vec<f64> = (0..=usize::from(n % 16)).map(|i| if i % 3 == 0 { f64::NAN } else { i as f64 }).collect();
    let (fewer, all) = (&ids[..ids.len() - 1], &ids[..]);
    let a = encode_json_array_events(&units, fewer);
    let b = encode_json_array_events(&units, all);
    assert!(a.is_err() || b.is_err(), "one array text split into two different element counts");
    if let Ok(out) = b {
        // Every element becomes at least its `data: ` line and the blank line after it.
        assert!(out.len() >= units.len().saturating_sub(2) + all.len() * 8);
    }
});
