#!/usr/bin/env bash
# Every test of twoplane, on a fresh machine or an old one: installs what it needs (idempotently)
# and runs each part in turn. A failing part does not stop the others; the exit code is non-zero
# when any part failed, and the last line counts the parts.
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh core node  # only the named parts
set -uo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

all=(core lint)
for part in wasm node plane redis server multi; do
  [ -x "scripts/test-$part.sh" ] && all+=("$part")
done
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=("${all[@]}")

passed=0
failed=0
failures=()
start=$(date +%s)
for part in "${parts[@]}"; do
  say "part: $part"
  t0=$(date +%s)
  if bash "scripts/test-$part.sh"; then
    passed=$((passed + 1))
    echo "part $part: passed in $(( $(date +%s) - t0 ))s"
  else
    failed=$((failed + 1))
    failures+=("$part")
    echo "part $part: FAILED after $(( $(date +%s) - t0 ))s"
  fi
done
echo
echo "twoplane test parts: ${parts[*]} ($(( $(date +%s) - start ))s)"
[ $failed -gt 0 ] && echo "failed parts: ${failures[*]}"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
