#!/usr/bin/env bash
# Run twoplane-stream's tests: unit tests, behaviour tests, the schedule property test, and the
# integration tests against real SQLite and a real PostgreSQL (started on loopback by pg.sh and
# left running for the next run, unless scripts/test.sh runs this: it stops what its run started;
# `scripts/pg.sh stop` stops it). Extra arguments go to `cargo test`. PROPTEST_CASES sets the number of generated schedules (default 256).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source "$ROOT/scripts/lib.sh" # redact_urls

# Assigned first: under `set -e` a failing pg.sh stops the script here, which
# `eval "$(pg.sh start)"` would not (eval of an empty string succeeds).
pg_env=$("$ROOT/scripts/pg.sh" start)
eval "$pg_env"
: "${TWOPLANE_PG_URL:?scripts/pg.sh printed no URL}"
export TWOPLANE_PG_URL
echo "test-plane.sh: TWOPLANE_PG_URL=$TWOPLANE_PG_URL" | redact_urls >&2


cargo test -p twoplane-stream "$@"
