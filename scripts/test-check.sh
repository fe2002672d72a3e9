#!/usr/bin/env bash
# The fast loop, for between edits: formatting, the import rules, clippy, the core's (and the read
# token's) unit, property and vector tests with the vectors and the JavaScript code tables diffed
# against the checked-in copies, the JavaScript linter, and the JavaScript tests that need no
# build. No services, no nightly, no wasm or addon build: a few minutes warm. It is a subset of
# the core and lint parts, which the full run (`bash scripts/test.sh`) runs instead.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

check_format
check_imports
check_clippy
core_tests
check_js

say "check: the JavaScript tests that need no build (tests/js: backoff, token)"
node --test tests/js/backoff.test.mjs tests/js/token.test.mjs
