#!/usr/bin/env bash
# Beyond one machine: the Redis relay adapters (crates/twoplane-redis) against a real Redis, and
# the host lease and sweeper (crates/twoplane-stream, tests/sweeper.rs) against a real PostgreSQL
# and SQLite. Redis and PostgreSQL run on loopback, started by scripts/redis.sh and scripts/pg.sh
# (Debian packages, installed by scripts/setup.sh) and left running for the next run (scripts/test.sh
# stops what its run started); stop them with `scripts/redis.sh stop` and `scripts/pg.sh stop`. Extra arguments go to both `cargo test` runs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source "$ROOT/scripts/lib.sh" # start_pg_and_redis, redact_urls

start_pg_and_redis test-redis.sh

echo "==> relay adapters: cargo test -p twoplane-redis" >&2
cargo test -p twoplane-redis "$@"

echo "==> host lease and sweeper: cargo test -p twoplane-stream --test sweeper" >&2
cargo test -p twoplane-stream --test sweeper "$@"
