#!/usr/bin/env bash
# Builds the WebAssembly backend of the npm package into npm/twoplane/wasm/ (generated, ignored
# by git): bindings/wasm compiled for wasm32-unknown-unknown with the size profile, wasm-bindgen
# `--target web` glue (one build for browsers, bundlers and Node), then wasm-opt -Oz. Installs
# what it needs first, idempotently: the rustup target, wasm-bindgen-cli at exactly the version
# of the wasm-bindgen crate in Cargo.lock (into .tools/), and the npm tools of tests/browser
# (binaryen's wasm-opt). Prints the .wasm's size, raw and gzipped.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/h-wasm}

rust_target wasm32-unknown-unknown
# The glue and the module must come from the same wasm-bindgen: read the version cargo resolved.
wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$wb_version" ]; then
  cargo generate-lockfile >/dev/null 2>&1 || true
  wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
fi
cargo_tool wasm-bindgen wasm-bindgen-cli "$wb_version"
npm_ci "$ROOT/tests/browser"

say "wasm: cargo build -p twoplane-wasm (profile wasm-release)"
cargo build -q -p twoplane-wasm --lib --target wasm32-unknown-unknown --profile wasm-release
raw="$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release/twoplane_wasm.wasm"

out="$ROOT/npm/twoplane/wasm"
tmp="$out.tmp"
rm -rf "$tmp"
wasm-bindgen --target web --no-typescript --out-dir "$tmp" --out-name twoplane_wasm "$raw"
# The features rustc enables by default for wasm32-unknown-unknown; wasm-opt must accept them and
# must not introduce any other.
"$ROOT/tests/browser/node_modules/.bin/wasm-opt" -Oz --strip-debug --strip-producers \
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  -o "$tmp/twoplane_wasm_bg.opt.wasm" "$tmp/twoplane_wasm_bg.wasm"
mv "$tmp/twoplane_wasm_bg.opt.wasm" "$tmp/twoplane_wasm_bg.wasm"
rm -rf "$out"
mv "$tmp" "$out"

bytes=$(wc -c < "$out/twoplane_wasm_bg.wasm")
gz=$(gzip -9 -c "$out/twoplane_wasm_bg.wasm" | wc -c)
echo "wasm: npm/twoplane/wasm/twoplane_wasm_bg.wasm is $bytes bytes, $gz bytes gzipped (-9)"
