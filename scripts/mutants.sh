#!/usr/bin/env bash
# Mutation testing of the core's rule modules with cargo-mutants (not part of scripts/test.sh:
# a full run builds and tests some 360 mutants one by one, about 45 minutes on two busy cores).
#
#   bash scripts/mutants.sh                     # every rule module
#   bash scripts/mutants.sh reader.rs sse.rs    # only these files (names under crates/twoplane-core/src)
#   bash scripts/mutants.sh -- --re 'Conform::feed_numbers'   # extra cargo-mutants arguments
#   bash scripts/mutants.sh -- --iterate       # only what the previous run here did not catch
#
# Each mutant runs the core's own tests (`cargo test -p twoplane-core --tests`) with a small
# PROPTEST_CASES so one mutant stays cheap; the survivors and why each is harmless are listed in
# crates/twoplane-core/mutants.md. Results land in $MUTANTS_OUT/mutants.out (default
# $CARGO_TARGET_DIR/mutants, or target/mutants), the survivors in missed.txt. The exit code is
# cargo-mutants': 0 all caught, 2 some survived, 3 some timed out (a hang: caught).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

MUTANTS_VERSION=27
[ -n "${CARGO_INSTALL_ROOT:-}" ] && PATH="$CARGO_INSTALL_ROOT/bin:$PATH"
if ! command -v cargo-mutants >/dev/null 2>&1 || ! cargo mutants --version | grep -q "^cargo-mutants $MUTANTS_VERSION\."; then
  say "cargo install cargo-mutants $MUTANTS_VERSION"
  # Into cargo's own install root (~/.cargo/bin, or $CARGO_INSTALL_ROOT when set).
  cargo install --locked cargo-mutants --version "^$MUTANTS_VERSION" ||
    cargo install cargo-mutants --version "^$MUTANTS_VERSION"
fi

files=()
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; extra=("$@"); break ;;
    *) files+=("$1"); shift ;;
  esac
done
[ ${#files[@]} -eq 0 ] && files=(conform.rs splice.rs reader.rs text.rs frame.rs sse.rs request.rs jsnum.rs)
filters=()
for f in "${files[@]}"; do
  filters+=(--file "crates/twoplane-core/src/$f")
done

# Few proptest cases per mutant: the hand-written cases in the modules and tests/mutants.rs are
# what pin each rule; proptest only adds breadth. No debug info: every mutant is a fresh build.
export PROPTEST_CASES=${PROPTEST_CASES:-32}
# A mutant that breaks a property fails at once instead of shrinking into the timeout.
export PROPTEST_MAX_SHRINK_ITERS=${PROPTEST_MAX_SHRINK_ITERS:-64}
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0
out=${MUTANTS_OUT:-${CARGO_TARGET_DIR:-$ROOT/target}/mutants}
mkdir -p "$out"

say "cargo mutants on ${files[*]} (results in $out/mutants.out)"
status=0
# `--tests` leaves out the example and the doctests (there are none): less to link per mutant.
nice -n 15 cargo mutants \
  --package twoplane-core --test-package twoplane-core --cargo-arg=--tests --cap-lints=true \
  "${filters[@]}" -j 1 --output "$out" "${extra[@]}" || status=$?
echo "missed: $(wc -l < "$out/mutants.out/missed.txt"), caught: $(wc -l < "$out/mutants.out/caught.txt"), unviable: $(wc -l < "$out/mutants.out/unviable.txt"), timeout: $(wc -l < "$out/mutants.out/timeout.txt")"
exit $status
