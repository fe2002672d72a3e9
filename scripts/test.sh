#!/usr/bin/env bash
# Every test of twoplane, on a fresh machine or an old one: installs what the chosen parts need
# in one step first (scripts/setup.sh, idempotent), then runs each part in turn. A failing part
# does not stop the others; the exit code is non-zero when any part failed (or the setup did), and
# the last line counts the parts.
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh core node  # only the named parts
#   bash scripts/test.sh check      # the fast loop: fmt, clippy, the core's tests, JS lint and
#                                   # unit tests; no services, no nightly (scripts/test-check.sh)
#
# The parts are listed here, not discovered: a part whose script went missing (or is not a
# part's name) fails the run instead of quietly dropping out of it. Each script runs with `bash`,
# so a lost exec bit changes nothing.
#
# Under this command nothing skips for want of a service: TWOPLANE_REQUIRE_SERVICES=1 turns
# every test's "skipped: no PostgreSQL/Redis" into a failure. The services this run starts
# (scripts/pg.sh, scripts/redis.sh, scripts/s2.sh and scripts/s2-tls.sh note each server they
# launch in TWOPLANE_STARTED_SERVICES)
# are stopped when it ends, however it ends; a server that was already running when the run
# began (say, one a developer started by hand) is reused and left running.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

all=(core lint wasm node plane redis server multi relay aisdk ops)
# Parts that can be named but are not in the full run (what they check, it checks too).
extra=(check)
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=("${all[@]}")

export TWOPLANE_REQUIRE_SERVICES=1
TWOPLANE_STARTED_SERVICES=$(mktemp "${TMPDIR:-/tmp}/twoplane-started.XXXXXX")
export TWOPLANE_STARTED_SERVICES

# Stop what this run started, each once, in reverse order of starting.
stop_started() {
  local kind dir
  tac "$TWOPLANE_STARTED_SERVICES" 2>/dev/null | awk '!seen[$0]++' | while read -r kind dir; do
    case "$kind" in
      pg) echo "test.sh: stopping the PostgreSQL this run started ($dir)" >&2
          TWOPLANE_PG_DIR="$dir" bash "$ROOT/scripts/pg.sh" stop || true ;;
      redis) echo "test.sh: stopping the Redis this run started ($dir)" >&2
          TWOPLANE_REDIS_DIR="$dir" bash "$ROOT/scripts/redis.sh" stop || true ;;
      s2) echo "test.sh: stopping the s2-lite this run started ($dir)" >&2
          TWOPLANE_S2_DIR="$dir" bash "$ROOT/scripts/s2.sh" stop || true ;;
      s2tls) echo "test.sh: stopping the TLS terminator this run started ($dir)" >&2
          TWOPLANE_S2_TLS_DIR="$dir" bash "$ROOT/scripts/s2-tls.sh" stop || true ;;
    esac
  done
  rm -f "$TWOPLANE_STARTED_SERVICES"
}
trap stop_started EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Free space where the build goes, printed after each part: a full clean run takes several
# gigabytes (most of it test binaries), and a machine that runs out fails in the linker with
# messages that do not say why.
free_space() { df -h --output=avail "${CARGO_TARGET_DIR:-$ROOT/target}" 2>/dev/null | tail -1 | tr -d ' ' || echo "?"; }
mkdir -p "${CARGO_TARGET_DIR:-$ROOT/target}"
echo "test.sh: $(free_space) free for the build at the start"

passed=0
failed=0
failures=()
start=$(date +%s)

say "setup: what ${parts[*]} need"
if ! bash scripts/setup.sh "${parts[@]}"; then
  echo "setup: FAILED after $(( $(date +%s) - start ))s: no part ran"
  exit 1
fi
echo "setup: done in $(( $(date +%s) - start ))s"

for part in "${parts[@]}"; do
  say "part: $part"
  t0=$(date +%s)
  script="scripts/test-$part.sh"
  if [[ " ${all[*]} ${extra[*]} " != *" $part "* ]]; then
    echo "part $part: FAILED: not a part (the parts: ${all[*]} ${extra[*]})"
    ok=""
  elif [ ! -f "$script" ]; then
    echo "part $part: FAILED: $script is missing"
    ok=""
  elif bash "$script"; then
    ok=1
  else
    ok=""
  fi
  if [ -n "$ok" ]; then
    passed=$((passed + 1))
    echo "part $part: passed in $(( $(date +%s) - t0 ))s ($(free_space) free)"
  else
    failed=$((failed + 1))
    failures+=("$part")
    echo "part $part: FAILED after $(( $(date +%s) - t0 ))s ($(free_space) free)"
  fi
done
echo
echo "twoplane test parts: ${parts[*]} ($(( $(date +%s) - start ))s)"
[ $failed -gt 0 ] && echo "failed parts: ${failures[*]}"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
