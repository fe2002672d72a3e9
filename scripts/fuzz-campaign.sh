#!/usr/bin/env bash
# A fuzzing campaign: every cargo-fuzz target in fuzz/, one after the other, for a fixed time
# each, under `nice`. Not part of the test command (that runs only a short smoke pass); run it by
# hand or on a schedule:
#
#   SECONDS_PER_TARGET=600 bash scripts/fuzz-campaign.sh [TARGET...]   # default: every target
#
# Each target starts from its committed seeds (fuzz/seeds/<target>/) plus the corpus grown by
# earlier runs (fuzz/corpus/<target>/, git-ignored: it can grow large). A crash stops libFuzzer,
# so the script keeps the input, minimizes it into tests/fuzz-crashers/<target>/ (a regression
# input replayed by crates/twoplane-core/tests/fuzz_inputs.rs) and resumes the target for the
# time left. At the end it prints, per target: the seconds spent fuzzing, executions (summed from
# libFuzzer's final stats, -print_final_stats=1), corpus size, and crashes found. It exits 1 when
# any target crashed.
#
# The targets are built once, first; the fuzzer binary is then run directly, so nothing rebuilds
# inside the timed part. FUZZ_TARGET_DIR, when set, is cargo-fuzz's target dir (default:
# fuzz/target).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

SECONDS_PER_TARGET=${SECONDS_PER_TARGET:-600}
# A crash that keeps coming back would otherwise restart libFuzzer in a tight loop.
MAX_RESTARTS=${MAX_RESTARTS:-5}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi

fuzz_tools
target_dir=${FUZZ_TARGET_DIR:-$ROOT/fuzz/target}
host=$(rustc +nightly -vV | sed -n 's/^host: //p')

say "fuzz campaign: building ${targets[*]}"
for target in "${targets[@]}"; do
  nice -n 10 cargo +nightly fuzz build --target-dir "$target_dir" "$target"
done

logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
summary=()
any_crash=0

for target in "${targets[@]}"; do
  say "fuzz campaign: $target (${SECONDS_PER_TARGET}s)"
  bin="$target_dir/$host/release/$target"
  corpus="fuzz/corpus/$target"
  artifacts="fuzz/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
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
    nice -n 10 "$bin" -max_total_time="$left" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$artifacts/" "$corpus" "fuzz/seeds/$target" >"$log" 2>&1 || status=$?
    runs=$((runs + 1))
    ran=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    execs=$((execs + ${ran:-0}))
    new=$(comm -13 <(echo "$before") <(find "$artifacts" -type f | sort) || true)
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
      mkdir -p "tests/fuzz-crashers/$target"
      kept="tests/fuzz-crashers/$target/$(basename "$input")"
      if ! nice -n 10 "$bin" -minimize_crash=1 -runs=20000 -exact_artifact_path="$kept" "$input" >"$log.tmin" 2>&1 ||
        [ ! -s "$kept" ]; then
        cp "$input" "$kept"
      fi
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
