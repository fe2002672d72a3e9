#!/usr/bin/env bash
# The demo: builds the browser package (wasm) and serves the chat at http://127.0.0.1:8787/ with a
# simulated model, the plane checkpointing into SQLite. Extra arguments go to `twoplane serve`
# (for example --listen 127.0.0.1:9000). Without --db the database lives in target/demo/, out of
# the way of git. Ctrl-C drains the plane (live answers end `interrupted`) and exits.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

bash scripts/build-wasm.sh

args=("$@")
case " ${args[*]-} " in
  *" --db "* | *" --db="*) ;;
  *)
    mkdir -p "$ROOT/target/demo"
    args+=(--db "$ROOT/target/demo/twoplane.db")
    ;;
esac

say "twoplane serve --demo ${args[*]}"
exec cargo run --release -p twoplane-server -- serve --demo "${args[@]}"
