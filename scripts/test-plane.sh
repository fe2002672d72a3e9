#!/usr/bin/env bash
# Run twoplane-stream's tests: unit tests, behaviour tests, the schedule property test, and the
# integration tests against real SQLite and a real PostgreSQL (started on loopback by pg.sh and
# left running for the next run; `scripts/pg.sh stop` stops it). Extra arguments go to
# `cargo test`. PROPTEST_CASES sets the number of generated schedules (default 256).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

eval "$("$ROOT/scripts/pg.sh" start)"
export TWOPLANE_PG_URL
echo "test-plane.sh: TWOPLANE_PG_URL=$TWOPLANE_PG_URL" >&2


cargo test -p twoplane-stream "$@"
