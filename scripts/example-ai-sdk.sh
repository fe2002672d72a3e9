#!/usr/bin/env bash
# The AI SDK example (examples/ai-sdk-chat, issue #24) in one command: installs the example's
# pinned packages, builds the `twoplane` binary and the page, then starts `twoplane serve` (on a
# SQLite file in a temporary directory, with a fresh producer secret and read-token secret, and
# the example's origin allowed to read) and the example's Node server, and prints the address to
# open. Ctrl-C (or SIGTERM) stops both and removes the directory.
#
#   bash scripts/example-ai-sdk.sh          # the built page
#   bash scripts/example-ai-sdk.sh --dev    # the page from Vite (edits in src/ show at once)
#
# Env: EXAMPLE_PORT (the page; the first free port from 3000), EXAMPLE_TWOPLANE_PORT (the first
# free from 8790), EXAMPLE_PACE (scales the model's delays; 1 by default). The example's test
# (examples/ai-sdk-chat/test/) starts the example through this script.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# free_port_from; it also closes descriptors this script inherited, so that the servers it starts
# do not hold a caller's lock (`flock ... bash scripts/test.sh`) for as long as they run.
source "$ROOT/scripts/ports.sh"
cd "$ROOT"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
EX="$ROOT/examples/ai-sdk-chat"
dev=""
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    *) echo "example-ai-sdk.sh: unknown argument $arg (only --dev)" >&2; exit 2 ;;
  esac
done

command -v python3 >/dev/null || apt_install python3 # ports.sh's check of a free port
npm_ci "$EX"
# `twoplane/ai-sdk` is plain JavaScript over `ai`: neither the wasm build nor the Node addon is
# needed, and the binary serves the UI message stream without them.
say "cargo build -p twoplane-server --bin twoplane"
cargo build -q -p twoplane-server --bin twoplane
if [ -z "$dev" ]; then
  say "vite build (examples/ai-sdk-chat)"
  (cd "$EX" && node_modules/.bin/vite build --logLevel warn)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/twoplane-example-ai-sdk.XXXXXX")
pids=()
stop_all() {
  local pid
  # The page's server first (an answer it is still producing ends `interrupted`), then twoplane,
  # whose SIGTERM drain seals what is still open.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for_port PORT PID WHAT: until something listens on PORT, or PID exited (fails).
wait_for_port() {
  local deadline=$((SECONDS + 30))
  until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
    if ! kill -0 "$2" 2>/dev/null; then echo "example-ai-sdk.sh: $3 exited" >&2; return 1; fi
    if ((SECONDS > deadline)); then echo "example-ai-sdk.sh: $3 is not listening on $1 after 30 s" >&2; return 1; fi
    sleep 0.1
  done
}

app_port=${EXAMPLE_PORT:-$(free_port_from 3000)}
tp_port=${EXAMPLE_TWOPLANE_PORT:-$(free_port_from 8790)}
(umask 077 && head -c 32 /dev/urandom | base64 > "$work/producer-token" && head -c 32 /dev/urandom | base64 > "$work/read-secret")

say "twoplane serve on 127.0.0.1:$tp_port (SQLite in $work, log in $work/twoplane.log)"
"$CARGO_TARGET_DIR/debug/twoplane" serve --listen "127.0.0.1:$tp_port" --db "$work/twoplane.db" \
  --producer-token-file "$work/producer-token" --read-token-secret-file "$work/read-secret" \
  --allow-origin "http://127.0.0.1:$app_port" --allow-origin "http://localhost:$app_port" \
  2> "$work/twoplane.log" &
pids+=($!)
wait_for_port "$tp_port" "${pids[-1]}" "twoplane serve" || { cat "$work/twoplane.log" >&2; exit 1; }

say "the example's server on 127.0.0.1:$app_port${dev:+ (page from Vite)}"
(
  cd "$EX"
  PORT=$app_port TWOPLANE_URL="http://127.0.0.1:$tp_port" \
    TWOPLANE_PRODUCER_TOKEN="$(cat "$work/producer-token")" TWOPLANE_READ_TOKEN_SECRET="$(cat "$work/read-secret")" \
    exec node --preserve-symlinks server.mjs ${dev:+--dev}
) &
pids+=($!)
wait_for_port "$app_port" "${pids[-1]}" "the example's server"

echo
echo "Open http://127.0.0.1:$app_port/ and ask something; reload while the answer streams. Ctrl-C stops it."
# Until Ctrl-C, or until either server exits on its own (then the other is stopped too).
set +e
wait -n "${pids[@]}"
status=$?
echo "example-ai-sdk.sh: a server exited ($status); stopping" >&2
tail -n 20 "$work/twoplane.log" >&2
exit 1
