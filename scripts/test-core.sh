#!/usr/bin/env bash
# The core's checks: unit, property, vector and crash-replay tests (with the read-token crate's,
# which is pure and fuzzed beside the core); the vectors regenerated and diffed with the
# checked-in copy; the wasm32 build; and a short smoke run of every fuzz target but the relay's.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

core_tests

say "core: builds for wasm32-unknown-unknown"
cargo check -q -p twoplane-core --target wasm32-unknown-unknown
echo "wasm32 check: ok"

say "core: fuzz smoke (${FUZZ_SECONDS:=20}s per target)"
found=0
for target in frame_json sse_decode relay_conform message_conform producer_event sse_json_array token_verify; do
  # From the committed seeds plus whatever corpus earlier runs grew (new inputs go to the first).
  mkdir -p "fuzz/corpus/$target"
  if ! (cargo +nightly fuzz run "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
    -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 2>&1 | tail -n 3); then
    found=1
  fi
  # Keep whatever crashed as a regression input for tests/fuzz_inputs.rs.
  for crash in fuzz/artifacts/"$target"/crash-* fuzz/artifacts/"$target"/oom-* fuzz/artifacts/"$target"/timeout-*; do
    [ -e "$crash" ] || continue
    mkdir -p "tests/fuzz-crashers/$target"
    cp "$crash" "tests/fuzz-crashers/$target/"
    echo "kept $crash in tests/fuzz-crashers/$target/"
    found=1
  done
done
if [ "$found" -ne 0 ]; then
  echo "fuzzing found a crash; the input is kept under tests/fuzz-crashers/" >&2
  exit 1
fi
echo "fuzz smoke: no crash"
