#!/usr/bin/env bash
# The Node side of the npm package: builds the addon (scripts/build-node.sh) and the wasm build
# (scripts/build-wasm.sh, one after the other: never two cargo builds at once), runs the addon
# crate's Rust tests, then the JavaScript suite in tests/js (`node --test`) once per backend:
# BACKEND=napi (twoplane/node, the addon), BACKEND=wasm (twoplane/wasm, the wasm build in Node)
# and BACKEND=default (the package's Node default entry, routed). Each run replays the shared
# vectors, the API behaviour and bad-input tests, the differential property tests (addon vs wasm
# vs plain JavaScript: conform against a model of docs/contract.md §3, the reader against a model
# of §4, and the core's SSE decoder against npm/twoplane/src/sse.js) and the entry-point tests. The Node entries'
# type declarations are compiled against a usage file (tsc from tests/browser, which
# scripts/setup.sh installs).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

build_js_backends

say "node: cargo test -p twoplane-node"
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/h-node} cargo test -q -p twoplane-node --release

say "node: tsc --noEmit tests/js/types (the Node entries' .d.ts)"
"$ROOT/tests/browser/node_modules/.bin/tsc" -p tests/js/types/tsconfig.json
echo "types: ok"

for backend in napi wasm default; do
  say "node: node --test tests/js (BACKEND=$backend)"
  BACKEND=$backend node --test tests/js/
done
