//! Where the browser package that `src/assets.rs` compiles in comes from, and rebuilding when it
//! changes.
//!
//! In the workspace it is `npm/twoplane/` (`src/`, and `wasm/` once `scripts/build-wasm.sh` ran,
//! which may be after a first build; Cargo scans a watched directory recursively, so files added
//! later count too). A packaged crate cannot reach outside its own folder, so it carries a copy
//! in `browser/` (`scripts/test-ops.sh` stages it before `cargo package`), which wins when
//! present. The folder is handed to rust-embed as `TWOPLANE_BROWSER_PACKAGE`.

use std::path::PathBuf;

fn main() {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_default();
    let staged = manifest.join("browser");
    let package = if staged.join("package.json").is_file() {
        staged
    } else {
        manifest.join("..").join("..").join("npm").join("twoplane")
    };
    println!("cargo:rustc-env=TWOPLANE_BROWSER_PACKAGE={}", package.display());
    println!("cargo:rerun-if-changed={}", package.display());
    println!("cargo:rerun-if-changed=browser");
    println!("cargo:rerun-if-changed=build.rs");
}
