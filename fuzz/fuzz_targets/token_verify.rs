//! Read-token verification (twoplane-token): any presented string is refused without a panic,
//! and any payload signed with the secret gets exactly the documented verdict
//! (`twoplane_token::scenarios::verify_scenario` says how).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = twoplane_token::scenarios::verify_scenario(data) {
        panic!("{broken}");
    }
});
