#!/usr/bin/env bash
# The WebAssembly package's tests (the lead's scripts/test.sh runs this as part "wasm"):
#   1. bindings/wasm's own unit tests (native), with the features of the full build, so the
#      modules only that build has (message_text, ui) are tested too;
#   2. both .wasm modules built (scripts/build-wasm.sh: the shipped one and the full one), the npm
#      package packed and installed into tests/browser exactly as a user would get it;
#   3. node --test over tests/browser: the shared vectors and the message scenario in Node and in
#      headless Chromium, the same vectors and ui.json over the full build (`twoplane/wasm-full`)
#      in both, the facade and reader in Node (fixture SSE server), the React hooks in Node, the
#      browser end-to-end reconnect test, the Vite app, the size budget (printed) and the type
#      check.
# Needs what scripts/setup.sh installs for it (Debian's Chromium, the wasm tools).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/h-wasm}

say "wasm: cargo test -p twoplane-wasm --features message-text,ui"
cargo test -q -p twoplane-wasm --features message-text,ui

bash scripts/build-wasm.sh

say "wasm: pack the npm package and install it into tests/browser"
pack=$(mktemp -d)
trap 'rm -rf "$pack"' EXIT
(cd npm/twoplane && npm pack --pack-destination "$pack" --silent >/dev/null)
tgz=$(ls "$pack"/twoplane-*.tgz)
(cd tests/browser && rm -rf node_modules/twoplane && npm install --no-save --no-audit --no-fund --loglevel=error "$tgz" >/dev/null)

say "wasm: node --test (Node, Chromium, Vite, size, types)"
cd tests/browser
node --test --test-concurrency=1 \
  node-vectors.test.mjs node-vectors-full.test.mjs node-reader.test.mjs node-react.test.mjs \
  node-react-message.test.mjs browser-vectors.test.mjs browser-vectors-full.test.mjs \
  browser-e2e.test.mjs vite.test.mjs size.test.mjs types.test.mjs
