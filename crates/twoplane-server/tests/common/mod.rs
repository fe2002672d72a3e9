//! Support shared by the server's integration tests (each test binary includes what it needs).

pub mod cluster;
pub mod secrets;
pub mod served;
pub mod store;
