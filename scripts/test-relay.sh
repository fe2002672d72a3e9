#!/usr/bin/env bash
# The commit-log relay (crates/twoplane-relay). Services run on loopback, started by the
# scripts next to this one and left running for the next run (scripts/test.sh stops what its run
# started). A service that cannot be started fails this script: nothing here skips for want of
# one (TWOPLANE_REQUIRE_SERVICES=1). Extra arguments go to every `cargo test` run.
#
# Each part of the crate keeps its own clearly delimited section below.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export TWOPLANE_REQUIRE_SERVICES=1

# ---- relay core: contracts, core, in-memory parts, Redis Streams log store -------------------
# Unit tests, the core's scenarios, the deterministic fault-injection simulation (PROPTEST_CASES
# raises its case count) and the Redis log store against a real Redis.
# Assigned first: under `set -e` a failing start stops the script here, which
# `eval "$(redis.sh start)"` would not (eval of an empty string succeeds).
redis_env=$("$ROOT/scripts/redis.sh" start)
eval "$redis_env"
: "${TWOPLANE_REDIS_URL:?scripts/redis.sh printed no URL}"
export TWOPLANE_REDIS_URL
echo "test-relay.sh: TWOPLANE_REDIS_URL=$TWOPLANE_REDIS_URL" >&2
echo "==> relay core: cargo test -p twoplane-relay --lib --test relay --test simulation --test redis_log" >&2
cargo test -p twoplane-relay --lib --test relay --test simulation --test redis_log "$@"
# ---- end of relay core -------------------------------------------------------------------------
