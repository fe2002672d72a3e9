#!/usr/bin/env bash
# Several instances end to end (crates/twoplane-server/tests/multi_instance.rs): three
# `twoplane serve --demo` processes sharing one PostgreSQL database and one Redis, producers on
# one, SSE readers on the others joining at random offsets and moments (some resuming with
# Last-Event-ID), Redis restarted mid-stream, the producing instance killed with SIGKILL
# mid-stream and its rows released by the others' sweepers; then the broadcast topology, whose
# late joiners fall back to the store. Every reader must end with the produced text, or after
# the kill with a prefix the store completes; the store's chunk rows must tile the text exactly.
# Then the stall (crates/twoplane-server/tests/stall.rs): the producing instance is stopped with
# SIGSTOP past its lease, swept by another, continued with SIGCONT; the row must stay as the sweep
# left it, and every reader on every instance must end with the store's text. Then a message made
# of parts (crates/twoplane-server/tests/multi_parts.rs) produced on one instance through the
# producer API's event stream and read on another at every checkpoint boundary, with reloads
# mid-part; and the same with its host killed mid-message.
#
# PostgreSQL and Redis run on 127.0.0.1, started by scripts/pg.sh and scripts/redis.sh (Debian
# packages, installed by scripts/setup.sh) and left running (scripts/test.sh stops what its run
# started); each run creates a fresh database. The
# plan is random from one seed, printed first: TWOPLANE_MULTI_SEED=N replays it. The test run is
# bounded (a few tens of seconds; killed after 300 s). Extra arguments go to the test binary.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

start_pg_and_redis test-multi.sh

say "multi: cargo build (the twoplane binary and the test)"
cargo build -q -p twoplane-server --bin twoplane --test multi_instance --test stall --test multi_parts

say "multi: several instances on one PostgreSQL and one Redis"
# --ignored: plain `cargo test` skips this file, since it needs the two servers started above.
timeout 360 cargo test -q -p twoplane-server --test multi_instance --test stall --test multi_parts -- --ignored --nocapture --test-threads=1 "$@"
