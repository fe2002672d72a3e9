#!/usr/bin/env bash
# A fuzzing campaign: every cargo-fuzz target in fuzz/, one after the other, for a fixed time
# each, under `nice`. Not part of the test command (that runs only a short smoke pass); run it by
# hand or on a schedule:
#
#   SECONDS_PER_TARGET=600 bash scripts/fuzz-campaign.sh [TARGET...]
#
# Each target starts from its committed seeds (fuzz/seeds/<target>/) plus the corpus grown by
# earlier runs (fuzz/corpus/<target>/, git-ignored: it can grow large). A crash stops libFuzzer,
# so the script keeps the input, minimizes it into tests/fuzz-crashers/<target>/ (a regression
# input replayed by crates/twoplane-core/tests/fuzz_inputs.rs) and resumes the target for the
# time left. At the end it prints, per target: wall time spent fuzzing, executions (summed from
# libFuzzer's final stats), corpus size, and crashes found. It exits 1 when any target crashed.
#
# FUZZ_TARGET_DIR, when set, is passed to cargo-fuzz as its target dir (default: fuzz/target).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

SECONDS_PER_TARGET=${SECONDS_PER_TARGET:-600}
# A crash that keeps coming back would otherwise restart libFuzzer in a tight loop.
MAX_RESTARTS=${MAX_RESTARTS:-5}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(frame_json sse_decode relay_conform)

cargo_tool cargo-fuzz cargo-fuzz 0.13.2
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
fuzz_args=()
[ -n "${FUZZ_TARGET_DIR:-}" ] && fuzz_args+=(--target-dir "$FUZZ_TARGET_DIR")

logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
summary=()
any_crash=0

for target in "${targets[@]}"; do
  say "fuzz campaign: $target (${SECONDS_PER_TARGET}s)"
  # Build outside the timed part, so the duration reported is fuzzing only.
  nice -n 10 cargo +nightly fuzz build "${fuzz_args[@]}" "$target"
  corpus="fuzz/corpus/$target"
  artifacts="fuzz/artifacts/$target"
  mkdir -p "$corpus" "$artifacts" "tests/fuzz-crashers/$target"
  execs=0
  crashes=0
  runs=0
  start=$(date +%s)
  while :; do
    left=$((SECONDS_PER_TARGET - ($(date +%s) - start)))
    [ "$left" -gt 0 ] || break
    log="$logdir/$target.$runs.log"
    before=$(find "$artifacts" -type f | sort)
    # The first corpus directory receives new inputs; the seeds are only read.
    status=0
    nice -n 10 cargo +nightly fuzz run "${fuzz_args[@]}" "$target" "$corpus" "fuzz/seeds/$target" -- \
      -max_total_time="$left" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
    runs=$((runs + 1))
    ran=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    execs=$((execs + ${ran:-0}))
    new=$(comm -13 <(echo "$before") <(find "$artifacts" -type f | sort) | grep -v '/minimized-from-' || true)
    if [ "$status" -eq 0 ] && [ -z "$new" ]; then
      break
    fi
    if [ -z "$new" ]; then
      tail -n 30 "$log" >&2
      echo "libFuzzer failed (status $status) without leaving an input" >&2
      exit 2
    fi
    for input in $new; do
      crashes=$((crashes + 1))
      any_crash=1
      grep -m1 -E 'panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer' "$log" >&2 || true
      # Minimize it for the regression folder; keep the raw input if minimizing fails.
      kept="tests/fuzz-crashers/$target/$(basename "$input")"
      if nice -n 10 cargo +nightly fuzz tmin "${fuzz_args[@]}" "$target" "$input" -- -runs=20000 >"$log.tmin" 2>&1; then
        minimized=$(sed -n 's/.*CRASH_MIN: failed to minimize beyond \(.*\) (.*/\1/p; s/.*written into \(.*\)$/\1/p' "$log.tmin" | tail -n 1)
        [ -n "$minimized" ] && [ -f "$minimized" ] && input=$minimized
      fi
      cp "$input" "$kept"
      echo "kept $kept" >&2
    done
    if [ "$runs" -gt "$MAX_RESTARTS" ]; then
      echo "$target: stopping after $runs crashes in a row" >&2
      break
    fi
  done
  duration=$(($(date +%s) - start))
  size=$(find "$corpus" -type f | wc -l)
  summary+=("$(printf '%-14s %8ss %14s %10s %8s' "$target" "$duration" "$execs" "$size" "$crashes")")
done

say "fuzz campaign summary"
printf '%-14s %9s %14s %10s %8s\n' target duration executions corpus crashes
printf '%s\n' "${summary[@]}"
if [ "$any_crash" -ne 0 ]; then
  echo "crash inputs were kept under tests/fuzz-crashers/; fix them and commit each with its fix" >&2
  exit 1
fi
