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
source "$ROOT/scripts/lib.sh" # redact_urls
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
echo "test-relay.sh: TWOPLANE_REDIS_URL=$TWOPLANE_REDIS_URL" | redact_urls >&2
echo "==> relay core: cargo test -p twoplane-relay --lib --test relay --test simulation --test redis_log" >&2
cargo test -p twoplane-relay --lib --test relay --test simulation --test redis_log "$@"
# ---- end of relay core -------------------------------------------------------------------------

# ---- relay I/O: pgoutput decoder, PostgreSQL source and record, S2 log store, `twoplane relay` --
# PostgreSQL (wal_level=logical) and s2-lite on loopback (s2-lite is built once into a cache
# outside the checkout by scripts/s2.sh: 11 to 21 minutes the first time), then the real-process
# end-to-end tests of `twoplane relay` into S2 and into Redis (SIGKILLs and a slot drop while
# 10,000 rows are committed; once more with PostgreSQL and S2 over TLS, and the refusals of
# certificates that must not verify), the replay of the pgoutput fuzz inputs, and a short fuzz
# smoke run.
pg_env=$("$ROOT/scripts/pg.sh" start)
eval "$pg_env"
: "${TWOPLANE_PG_URL:?scripts/pg.sh printed no URL}"
export TWOPLANE_PG_URL
level=$(psql "$TWOPLANE_PG_URL" -tAc 'SHOW wal_level' 2>/dev/null || true)
if [ "$level" != logical ]; then
  # A cluster started before scripts/pg.sh set wal_level=logical: the setting needs a restart.
  echo "test-relay.sh: PostgreSQL runs with wal_level=${level:-unknown}; restarting it with wal_level=logical" >&2
  "$ROOT/scripts/pg.sh" stop
  pg_env=$("$ROOT/scripts/pg.sh" start)
  eval "$pg_env"
  export TWOPLANE_PG_URL
fi
s2_env=$("$ROOT/scripts/s2.sh" start)
eval "$s2_env"
: "${TWOPLANE_S2_URL:?scripts/s2.sh printed no URL}"
export TWOPLANE_S2_URL
# The same over TLS: the TLS cluster of scripts/pg.sh (a throwaway CA's certificate, and
# wal_level=logical like the plain one) and s2-lite behind stunnel (scripts/s2-tls.sh).
pg_tls_env=$(TWOPLANE_PG_TLS=1 "$ROOT/scripts/pg.sh" start)
eval "$pg_tls_env"
: "${TWOPLANE_PG_TLS_URL:?scripts/pg.sh printed no TLS URL}"
s2_tls_env=$(bash "$ROOT/scripts/s2-tls.sh" start)
eval "$s2_tls_env"
: "${TWOPLANE_S2_TLS_URL:?scripts/s2-tls.sh printed no URL}"
export TWOPLANE_PG_TLS_URL TWOPLANE_PG_TLS_CA TWOPLANE_S2_TLS_URL TWOPLANE_S2_TLS_CA TWOPLANE_S2_TLS_WRONG_CA
echo "test-relay.sh: TWOPLANE_PG_URL=$TWOPLANE_PG_URL TWOPLANE_S2_URL=$TWOPLANE_S2_URL" | redact_urls >&2
echo "test-relay.sh: TWOPLANE_PG_TLS_URL=$TWOPLANE_PG_TLS_URL TWOPLANE_S2_TLS_URL=$TWOPLANE_S2_TLS_URL" | redact_urls >&2
echo "==> relay I/O: cargo test -p twoplane-relay --test pgoutput_inputs --test pg_s2" >&2
cargo test -p twoplane-relay --test pgoutput_inputs --test pg_s2 "$@"
echo "==> relay I/O: cargo test -p twoplane-server --test relay_e2e (one at a time: they share the machine)" >&2
# --ignored: plain `cargo test` skips these, since they need the services started above.
cargo test -p twoplane-server --test relay_e2e "$@" -- --ignored --test-threads=1 --nocapture

echo "==> relay I/O: fuzz smoke of pgoutput (${FUZZ_SECONDS:=20}s)" >&2
mkdir -p fuzz/corpus/pgoutput
fuzz_failed=0
cargo +nightly fuzz run pgoutput fuzz/corpus/pgoutput fuzz/seeds/pgoutput -- \
  -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 2>&1 | tail -n 3 || fuzz_failed=1
for crash in fuzz/artifacts/pgoutput/crash-* fuzz/artifacts/pgoutput/oom-* fuzz/artifacts/pgoutput/timeout-*; do
  [ -e "$crash" ] || continue
  mkdir -p tests/fuzz-crashers/pgoutput
  cp "$crash" tests/fuzz-crashers/pgoutput/
  echo "kept $crash in tests/fuzz-crashers/pgoutput/ (replayed by crates/twoplane-relay/tests/pgoutput_inputs.rs)" >&2
  fuzz_failed=1
done
[ "$fuzz_failed" -eq 0 ] || { echo "the pgoutput fuzz smoke found a crash" >&2; exit 1; }
echo "pgoutput fuzz smoke: no crash"
# ---- end of relay I/O ----------------------------------------------------------------------------
