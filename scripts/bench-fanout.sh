#!/usr/bin/env bash
# The SSE fan-out benchmark against the peers (bench/fanout/run.mjs; prints numbers, not a test):
# `twoplane serve` (its default display-rate writes, and --write-interval-ms 0), the Rust Durable
# Streams server and the Durable Streams Node reference server, side by side in one run: server
# CPU per delta per reader, writes per delta per reader, push-to-receipt p50/p99, RSS per idle
# reader. Installs bench/fanout's pinned packages, builds the release binary, and installs the
# Rust peer from crates.io once into a cache outside the checkout.
#   BENCH_ROUNDS / BENCH_QUICK=1 / BENCH_SERVERS / BENCH_WAIT_S: see bench/fanout/run.mjs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

DS_VERSION=0.3.0
DS_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/twoplane/peers/ds-$DS_VERSION"
npm_ci "$ROOT/bench/fanout"
say "cargo build --release -p twoplane-server --bin twoplane"
flock /tmp/twoplane-build.lock cargo build --release -p twoplane-server --bin twoplane
if [ ! -x "$DS_ROOT/bin/durable-streams-server" ]; then
  say "cargo install durable-streams-server $DS_VERSION (once, into $DS_ROOT)"
  cargo install durable-streams-server --version "$DS_VERSION" --locked --root "$DS_ROOT"
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
say "bench: node bench/fanout/run.mjs"
TWOPLANE_BIN="$ROOT/target/release/twoplane" DS_BIN="$DS_ROOT/bin/durable-streams-server" node bench/fanout/run.mjs
