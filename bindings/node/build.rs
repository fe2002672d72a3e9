//! Link settings a Node-API addon needs (undefined `napi_*` symbols resolved by the host process).
fn main() {
    napi_build::setup();
}
