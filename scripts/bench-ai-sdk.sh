#!/usr/bin/env bash
# The AI SDK benchmark (bench/ai-sdk/run.mjs; prints numbers, not a test): the same UI message
# stream of 2,000 chunks to 100 resuming readers through `twoplane serve` (the release binary on
# a temporary SQLite file) and through `resumable-stream` 2.x with Redis, side by side: server
# CPU per delivered chunk, bytes per resume (and how many of them repeat what the reader had),
# time from a resume request to its first chunk. Installs bench/ai-sdk's pinned packages, builds
# the binary, starts a Redis of its own (scripts/redis.sh in its own directory and port, so no
# test shares it and its CPU is the benchmark's) and stops it again if it started it. It waits
# for a quiet machine before each run (see run.mjs).
#   BENCH_ROUNDS / BENCH_READERS / BENCH_RESUMERS / BENCH_RATE_MS / BENCH_MAX_OTHERS /
#   BENCH_WAIT_S / BENCH_QUICK=1: see bench/ai-sdk/run.mjs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

npm_ci "$ROOT/bench/ai-sdk"
say "cargo build --release -p twoplane-server --bin twoplane"
flock /tmp/twoplane-build.lock cargo build --release -p twoplane-server --bin twoplane

export TWOPLANE_REDIS_DIR="${BENCH_REDIS_DIR:-/tmp/twoplane-bench-ai-sdk-redis}"
export TWOPLANE_REDIS_PORT="${BENCH_REDIS_PORT:-56579}"
started=""
bash scripts/redis.sh status 2>/dev/null || started=1
redis_env=$(bash scripts/redis.sh start)
eval "$redis_env"
if [[ -n "$started" ]]; then
  trap 'bash "$ROOT/scripts/redis.sh" stop' EXIT
fi

say "bench: node bench/ai-sdk/run.mjs"
REDIS_URL="$TWOPLANE_REDIS_URL" BENCH_REDIS_PIDFILE="$TWOPLANE_REDIS_DIR/redis.pid" \
  TWOPLANE_BIN="$ROOT/target/release/twoplane" node bench/ai-sdk/run.mjs
