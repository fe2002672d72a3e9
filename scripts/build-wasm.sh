#!/usr/bin/env bash
# Builds the WebAssembly backends of the npm package (generated, ignored by git): bindings/wasm
# compiled for wasm32-unknown-unknown with the size profile, wasm-bindgen `--target web` glue (one
# build for browsers, bundlers and Node), then wasm-opt -Oz. Two modules:
#   npm/twoplane/wasm/       the shipped one (`twoplane`, `twoplane/wasm`): default features,
#                            under the 45 KB gzipped budget of tests/browser/size.test.mjs;
#   npm/twoplane/wasm-full/  the opt-in full build (`twoplane/wasm-full`): features
#                            message-text and ui (the message codec and the AI SDK's UI message
#                            stream mapping).
# Installs what it needs first, idempotently: the rustup target, wasm-bindgen-cli at exactly the
# version of the wasm-bindgen crate in Cargo.lock (into .tools/), and the npm tools of
# tests/browser (binaryen's wasm-opt). Prints each .wasm's size, raw and gzipped.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/h-wasm}

# Idempotent: after scripts/setup.sh this finds everything in place (the demo's script calls
# this one without a setup step).
wasm_tools
wb_version=$(wasm_bindgen_version)

# One module: bindings/wasm with the features "$1" (empty: the defaults) into npm/twoplane/$2/ as
# $3_bg.wasm and $3.js. Both builds share the target directory and the core's compiled rlib (the
# features are the binding's own and change nothing in the core), so the second one recompiles
# and links only the binding crate; cargo notices that the other build overwrote the .wasm and
# links it again, and each module is copied out before the next build starts.
build_module() {
  local features=$1 dir=$2 name=$3
  say "wasm: cargo build -p twoplane-wasm (profile wasm-release${features:+, features $features})"
  cargo build -q -p twoplane-wasm --lib --target wasm32-unknown-unknown --profile wasm-release ${features:+--features "$features"}
  local raw="$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release/twoplane_wasm.wasm"
  local out="$ROOT/npm/twoplane/$dir"
  local tmp="$out.tmp"
  # Every part of the test command calls this script, and the two builds take turns relinking
  # the one .wasm cargo writes; wasm-opt is most of the time left (about 4 s and 7 s). The
  # linked module is the same bytes when nothing changed, so when it, the wasm-bindgen version,
  # wasm-opt's (tests/browser's lockfile) and this script are those that made the output there,
  # the output is kept.
  local key
  key="$(sha256sum < "$raw" | cut -d' ' -f1) $wb_version"
  key+=" $(cat "$ROOT/tests/browser/package-lock.json" "$ROOT/scripts/build-wasm.sh" | sha256sum | cut -d' ' -f1)"
  if [ -f "$out/${name}_bg.wasm" ] && [ -f "$out/$name.js" ] && [ "$(cat "$out/.build-key" 2>/dev/null)" = "$key" ]; then
    echo "wasm: npm/twoplane/$dir is up to date"
  else
    rm -rf "$tmp"
    wasm-bindgen --target web --no-typescript --out-dir "$tmp" --out-name "$name" "$raw"
    # The features rustc enables by default for wasm32-unknown-unknown; wasm-opt must accept them
    # and must not introduce any other.
    "$ROOT/tests/browser/node_modules/.bin/wasm-opt" -Oz --strip-debug --strip-producers \
      --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals --enable-reference-types --enable-multivalue \
      -o "$tmp/${name}_bg.opt.wasm" "$tmp/${name}_bg.wasm"
    mv "$tmp/${name}_bg.opt.wasm" "$tmp/${name}_bg.wasm"
    echo "$key" > "$tmp/.build-key"
    rm -rf "$out"
    mv "$tmp" "$out"
  fi
  local bytes gz
  bytes=$(wc -c < "$out/${name}_bg.wasm")
  gz=$(gzip -9 -c "$out/${name}_bg.wasm" | wc -c)
  echo "wasm: npm/twoplane/$dir/${name}_bg.wasm is $bytes bytes, $gz bytes gzipped (-9)"
}

build_module "" wasm twoplane_wasm
# The full build has no budget: it is for runtimes that cannot load the addon and need the
# core's JSON half (an edge function mapping a UI message stream), where one module loaded once
# per isolate matters less than in a page; its size is printed so a jump shows in the log.
build_module message-text,ui wasm-full twoplane_wasm_full
