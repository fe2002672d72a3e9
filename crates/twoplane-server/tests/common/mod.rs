//! Support shared by the server's integration tests (each test binary includes what it needs).

pub mod cluster;
pub mod parts;
pub mod process;
pub mod producer;
pub mod secrets;
pub mod served;
pub mod store;

/// Whether the servers a test starts answer subscriptions on the direct SSE path (the default)
/// or through hyper only: `TWOPLANE_TEST_DIRECT_SSE=off` turns it off, so scripts/test-server.sh
/// runs the end-to-end tests both ways.
#[allow(dead_code)] // not every test binary starts a server
pub fn direct_sse() -> bool {
    std::env::var("TWOPLANE_TEST_DIRECT_SSE").map_or(true, |v| v != "off")
}
