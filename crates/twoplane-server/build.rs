//! Rebuild when the browser package changes: `src/assets.rs` compiles `npm/twoplane/src/` and
//! `npm/twoplane/wasm/` into the binary, and the wasm build may appear after a first build.
//! Cargo scans a watched directory recursively, so files added later count too.

fn main() {
    println!("cargo:rerun-if-changed=../../npm/twoplane");
    println!("cargo:rerun-if-changed=build.rs");
}
