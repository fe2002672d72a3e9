#!/usr/bin/env bash
# The Node benchmark (bench/node.mjs): StreamRelayConform.feed per frame through the addon, the
# wasm build and a plain-JavaScript model; the other operations per build; and the SSE encoder's
# MB/s, one frame per call and batches, against JSON.stringify + a template string. Builds both
# first (idempotent). Prints a table and the routing each number supports (see
# npm/twoplane/src/index.node.js, where the chosen routes and their numbers are recorded). Then
# StreamReader reading a message made of parts over each build (bench/js/message-node.mjs): ns per
# delta at 1,000 to 100,000 deltas over 1, 10 and 100 parts, beside the single-text reader.
#   BENCH_ROUNDS / BENCH_RUNS / BENCH_QUICK=1: see bench/node.mjs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

build_js_backends
say "bench: node bench/node.mjs"
node bench/node.mjs
say "bench: node bench/js/message-node.mjs (the message reader over each build)"
node bench/js/message-node.mjs
