#!/usr/bin/env bash
# The HTTP/SSE layer and the `twoplane` binary: the Rust end-to-end test over real HTTP (headers,
# ids, keep-alive, Last-Event-ID resumes after disconnects, 400/403, a non-reading client cut off
# with `stale` while memory stays flat, release on disconnect), then the demo page in headless
# Chromium (a reload mid-answer ends with the full answer, once), then the read-token vectors in
# Rust, Node and Python, cross-origin readers (tests/demo/cors.test.mjs) and the producer API end
# to end (tests/demo/producer.test.mjs, on SQLite and on PostgreSQL). Needs what
# scripts/setup.sh installs for it (Debian's chromium, curl and python3, the npm tools of
# tests/demo) and builds the wasm build of the package. A plain PostgreSQL on loopback serves tests/store_migration.rs and the producer API
# on PostgreSQL; the TLS part adds PostgreSQL and Redis with TLS (scripts/pg.sh, scripts/redis.sh)
# and checks sslmode, rediss:// and that no password reaches a message.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

# The wasm build first: the binary compiles the browser package in, and tests/installed.rs
# checks that an installed binary serves exactly those bytes.
say "server: the browser package (wasm build)"
bash scripts/build-wasm.sh

# A plain PostgreSQL first: tests/store_migration.rs upgrades old tables there, and under the
# test command (TWOPLANE_REQUIRE_SERVICES=1) a missing TWOPLANE_PG_URL fails it rather than
# skipping it. Assigned first so that a failing start stops here.
pg_env=$(scripts/pg.sh start)
eval "$pg_env"
export TWOPLANE_PG_URL

say "server: cargo test -p twoplane-server"
cargo test -p twoplane-server
say "server: the end-to-end HTTP tests again with the direct SSE path off (every request through hyper)"
TWOPLANE_TEST_DIRECT_SSE=off cargo test -q -p twoplane-server --test http_e2e --test producer_api

say "server: PostgreSQL and Redis over TLS, with passwords (tests/tls.rs)"
# Beside the plain PostgreSQL above, one with TLS and a Redis with TLS, each with a throwaway CA
# and a random password (scripts/pg.sh, scripts/redis.sh); assigned first so that a failing
# start stops here.
pg_tls_env=$(TWOPLANE_PG_TLS=1 scripts/pg.sh start)
redis_tls_env=$(TWOPLANE_REDIS_TLS=1 scripts/redis.sh start)
eval "$pg_tls_env"
eval "$redis_tls_env"
export TWOPLANE_PG_URL TWOPLANE_PG_TLS_URL TWOPLANE_PG_TLS_CA TWOPLANE_PG_TLS_WRONG_CA TWOPLANE_REDIS_TLS_URL \
  TWOPLANE_REDIS_TLS_CA
cargo test -q -p twoplane-server --test tls -- --ignored --test-threads=1

say "server: cargo build --bin twoplane"
cargo build -q -p twoplane-server --bin twoplane

say "server: demo page in headless Chromium"
(cd tests/demo && TWOPLANE_BIN="$CARGO_TARGET_DIR/debug/twoplane" CHROMIUM=/usr/bin/chromium node --test demo.test.mjs)

say "server: read-token vectors (Rust writes them; the checked-in copy must match; Python and Node replay them)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo run -q -p twoplane-server --example gen_token_vectors -- "$tmp"
diff -u tests/vectors/token.json "$tmp/token.json"
python3 tests/python/token_vectors.py
node --test tests/js/token.test.mjs

say "server: producer API end to end (Node and curl producers, Chromium and Python readers, tokens)"
(cd tests/demo && TWOPLANE_BIN="$CARGO_TARGET_DIR/debug/twoplane" CHROMIUM=/usr/bin/chromium node --test producer.test.mjs)

say "server: cross-origin readers in Chromium (--allow-origin; tests/demo/cors.test.mjs)"
(cd tests/demo && TWOPLANE_BIN="$CARGO_TARGET_DIR/debug/twoplane" CHROMIUM=/usr/bin/chromium node --test cors.test.mjs)

say "server: web pages against the loopback default in Chromium (no-cors posts, a rebound Host; tests/demo/cross-origin.test.mjs)"
(cd tests/demo && TWOPLANE_BIN="$CARGO_TARGET_DIR/debug/twoplane" CHROMIUM=/usr/bin/chromium node --test cross-origin.test.mjs)

# A message with parts (issue #23): its Node readers use the addon (twoplane/node) beside the wasm
# build, and its React page the React of tests/browser (installed by build-wasm.sh above).
say "server: a message with parts end to end (Node readers over the addon and wasm, Chromium pages, a React page; tests/demo/parts.test.mjs)"
bash scripts/build-node.sh
(cd tests/demo && TWOPLANE_BIN="$CARGO_TARGET_DIR/debug/twoplane" CHROMIUM=/usr/bin/chromium node --test parts.test.mjs)

say "server: producer API end to end again, on PostgreSQL (the row statements and the cancel column there)"
(cd tests/demo && TWOPLANE_PRODUCER_PG_URL="$TWOPLANE_PG_URL" TWOPLANE_BIN="$CARGO_TARGET_DIR/debug/twoplane" \
  CHROMIUM=/usr/bin/chromium node --test producer.test.mjs)
