#!/usr/bin/env bash
# The WebAssembly package's benchmark (not a test): builds the .wasm, installs the packed package
# into tests/browser, then runs bench/js/core.mjs in Node (bench/js/wasm.mjs) and in headless
# Chromium (bench/js/browser.mjs). Prints ns per frame for conform and the reader against plain
# JavaScript, and the reader at 1,000, 10,000 and 100,000 deltas; in Chromium also the reader of
# a message made of parts (bench/js/message.mjs) at those deltas over 1, 10 and 100 parts.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
[ -x /usr/bin/chromium ] || apt_install chromium
bash scripts/build-wasm.sh
pack=$(mktemp -d)
trap 'rm -rf "$pack"' EXIT
(cd npm/twoplane && npm pack --pack-destination "$pack" --silent >/dev/null)
(cd tests/browser && rm -rf node_modules/twoplane && npm install --no-save --no-audit --no-fund --loglevel=error "$pack"/twoplane-*.tgz >/dev/null)
say "bench: Node"
node bench/js/wasm.mjs
say "bench: Chromium"
node bench/js/browser.mjs
