#!/usr/bin/env bash
# Beyond one machine: the Redis relay adapters (crates/twoplane-redis) against a real Redis, and
# the host lease and sweeper (crates/twoplane-stream, tests/sweeper.rs) against a real PostgreSQL
# and SQLite. Redis and PostgreSQL run on loopback, started by scripts/redis.sh and scripts/pg.sh
# (installed from Debian packages when missing) and left running for the next run (scripts/test.sh
# stops what its run started); stop them with `scripts/redis.sh stop` and `scripts/pg.sh stop`. Extra arguments go to both `cargo test` runs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source "$ROOT/scripts/lib.sh" # redact_urls

# Assigned first: under `set -e` a failing start stops the script here, which
# `eval "$(pg.sh start)"` would not (eval of an empty string succeeds).
pg_env=$("$ROOT/scripts/pg.sh" start)
redis_env=$("$ROOT/scripts/redis.sh" start)
eval "$pg_env"
eval "$redis_env"
: "${TWOPLANE_PG_URL:?scripts/pg.sh printed no URL}" "${TWOPLANE_REDIS_URL:?scripts/redis.sh printed no URL}"
export TWOPLANE_PG_URL TWOPLANE_REDIS_URL
echo "test-redis.sh: TWOPLANE_PG_URL=$TWOPLANE_PG_URL TWOPLANE_REDIS_URL=$TWOPLANE_REDIS_URL" | redact_urls >&2

echo "==> relay adapters: cargo test -p twoplane-redis" >&2
cargo test -p twoplane-redis "$@"

echo "==> host lease and sweeper: cargo test -p twoplane-stream --test sweeper" >&2
cargo test -p twoplane-stream --test sweeper "$@"
