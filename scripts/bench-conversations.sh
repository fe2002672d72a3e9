#!/usr/bin/env bash
# Many conversations on one instance, against the peers (bench/conversations/run.mjs; prints
# numbers, not a test): S streams x R SSE readers (100 at 50 deltas/s, 1,000 and 10,000 at 5/s;
# R = 1 and 2), on `twoplane serve` (a request per delta, and a streaming body per stream),
# Electric's Rust Durable Streams server (`durable-streams` 0.1.5, --durability memory and wal)
# and the community Rust server (`durable-streams-server` 0.3.0, in memory): server CPU per
# appended and per delivered delta, writes per delivered delta, send-to-receipt p50/p99, RSS per
# stream and per idle reader, twoplane's seq - durableSeq and /readyz. Exits 1 when any reader did
# not get its exact text or a producer failed.
# Installs bench/conversations' pinned packages, builds the release binary, and installs both Rust
# peers from crates.io once into caches outside the checkout (every cargo step under
# /tmp/twoplane-build.lock: the machine is shared). Raises the open-file limit to the hard limit;
# a case that needs more descriptors than that is skipped and says so. Every server is started
# by run.mjs on 127.0.0.1; this script kills any that is still running when it exits.
#   BENCH_SIZES / BENCH_R / BENCH_SERVERS / BENCH_ROUNDS / BENCH_QUICK=1 / BENCH_DELTAS /
#   BENCH_PRODUCERS / BENCH_READER_PROCS / BENCH_DRAIN_S / BENCH_WAIT_S: see bench/conversations/run.mjs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

PEERS="${XDG_CACHE_HOME:-$HOME/.cache}/twoplane/peers"
DS_VERSION=0.3.0
DS_ROOT="$PEERS/ds-$DS_VERSION"
ELECTRIC_VERSION=0.1.5
ELECTRIC_ROOT="$PEERS/electric-ds-$ELECTRIC_VERSION"

npm_ci "$ROOT/bench/conversations"
say "cargo build --release -p twoplane-server --bin twoplane"
flock /tmp/twoplane-build.lock cargo build --release -p twoplane-server --bin twoplane
if [ ! -x "$DS_ROOT/bin/durable-streams-server" ]; then
  say "cargo install durable-streams-server $DS_VERSION (once, into $DS_ROOT)"
  flock /tmp/twoplane-build.lock cargo install durable-streams-server --version "$DS_VERSION" --locked --root "$DS_ROOT"
fi
if [ ! -x "$ELECTRIC_ROOT/bin/durable-streams-server" ]; then
  # The crate `durable-streams` installs a binary also named `durable-streams-server`: its own root.
  say "cargo install durable-streams $ELECTRIC_VERSION (once, into $ELECTRIC_ROOT)"
  flock /tmp/twoplane-build.lock cargo install durable-streams --version "$ELECTRIC_VERSION" --locked --root "$ELECTRIC_ROOT"
fi

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "open-file limit: $(ulimit -n) (10,000 streams with 2 readers each need more than 20,000 in the server)"

# run.mjs appends each server's pid and temporary directory here; on any exit, kill those still
# running (by pid, checked to be one of the binaries this script started) and remove the directories.
TMPDIR_BASE="${TMPDIR:-/tmp}"
TMPDIR_BASE="${TMPDIR_BASE%/}"
PIDFILE=$(mktemp /tmp/twoplane-bench-conversations-pids.XXXXXX)
BINS=("$(readlink -f "$ROOT/target/release/twoplane")" "$(readlink -f "$DS_ROOT/bin/durable-streams-server")" "$(readlink -f "$ELECTRIC_ROOT/bin/durable-streams-server")")
cleanup() {
  local pid exe bin
  while read -r pid; do
    [ -n "$pid" ] || continue
    case "$pid" in
      "dir $TMPDIR_BASE"/twoplane-bench-conversations-*) rm -rf "${pid#dir }"; continue ;;
      dir\ *) continue ;;
    esac
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
    for bin in "${BINS[@]}"; do
      if [ -n "$exe" ] && [ "$exe" = "$bin" ]; then kill -9 "$pid" 2>/dev/null || true; fi
    done
  done < "$PIDFILE"
  rm -f "$PIDFILE"
}
trap cleanup EXIT

say "bench: node bench/conversations/run.mjs"
# In the background, so that a signal to this script reaches it (it then kills its servers and
# workers itself); its exit status is this script's.
TWOPLANE_BIN="$ROOT/target/release/twoplane" \
  DS_BIN="$DS_ROOT/bin/durable-streams-server" \
  DS_ELECTRIC_BIN="$ELECTRIC_ROOT/bin/durable-streams-server" \
  BENCH_PIDFILE="$PIDFILE" \
  node bench/conversations/run.mjs &
NODE_PID=$!
trap 'kill -TERM "$NODE_PID" 2>/dev/null || true; wait "$NODE_PID" 2>/dev/null || true; exit 130' INT TERM HUP
wait "$NODE_PID"
