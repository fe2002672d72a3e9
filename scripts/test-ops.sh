#!/usr/bin/env bash
# `twoplane serve` as operators get and run it (docs/server.md, "Operating it"):
#
# - docs/openapi.yaml is a valid OpenAPI 3.1 description (openapi-spec-validator), and
#   schemathesis runs every operation of it against a live `twoplane serve`, once with the
#   producer token and once with none: no 5xx, no answer outside the description, and no refusal
#   without a JSON `kind` (tests/openapi/hooks.py);
# - the Debian package (cargo-deb, from the debug binary the server part builds: no second,
#   release build) installs with `dpkg -i`, its `twoplane serve --demo` streams an answer with an
#   empty environment in a scratch directory, its systemd unit passes `systemd-analyze verify`
#   (offline; the unit is never started), and it removes cleanly;
# - `cargo package` passes for every crate `cargo install twoplane-server` needs, and the binary
#   builds from the packaged crates alone (unpacked, sibling crates found through a local
#   registry), nothing outside each crate's folder.
#
# Runs with what scripts/setup.sh installs for it: Debian's python3-venv, curl, systemd and
# dpkg-dev; schemathesis and openapi-spec-validator, pinned, in a venv under .tools/; cargo-deb,
# pinned, under .tools/.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if dpkg-query -W -f='${Status}' twoplane 2>/dev/null | grep -q "install ok installed"; then
    dpkg --purge twoplane >/dev/null || true
  fi
  rm -rf "$tmp" "$ROOT/crates/twoplane-server/browser"
}
trap cleanup EXIT

# The Python tools scripts/setup.sh put in a venv of their own.
venv="$ROOT/.tools/openapi-venv"

say "ops: docs/openapi.yaml is a valid OpenAPI description"
"$venv/bin/openapi-spec-validator" docs/openapi.yaml

say "ops: cargo build --bin twoplane"
cargo build -q -p twoplane-server --bin twoplane
bin="$CARGO_TARGET_DIR/debug/twoplane"

# start_serve LOG ARGS...: start `twoplane serve` on a free loopback port, wait until it listens;
# prints its address, and writes its pid to LOG.pid (it runs in a command substitution, so the
# caller adds that to `pids` itself).
start_serve() {
  local log=$1; shift
  "$@" > "$log" 2>&1 &
  local pid=$! addr=""
  echo "$pid" > "$log.pid"
  for _ in $(seq 1 100); do
    addr=$(sed -n 's/.*listening addr=\([0-9.:]*\).*/\1/p' "$log" | head -1)
    [ -n "$addr" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "ops: twoplane serve exited" >&2; return 1; }
    sleep 0.1
  done
  [ -n "$addr" ] || { cat "$log" >&2; echo "ops: twoplane serve did not listen within 10 s" >&2; return 1; }
  echo "$addr"
}

say "ops: schemathesis over every operation of docs/openapi.yaml, with the producer token and with none"
head -c 32 /dev/urandom | base64 > "$tmp/producer-token"
# A silent producer's stream is sealed after 2 s, so a reader of a stream the run opened ends.
addr=$(start_serve "$tmp/serve.log" "$bin" serve --listen 127.0.0.1:0 --db "$tmp/openapi.db" \
  --producer-token-file "$tmp/producer-token" --producer-idle-ms 2000)
pids+=("$(cat "$tmp/serve.log.pid")")
# positive_data_acceptance is left out: a schema-valid event can still be refused for what it
# means (a part number not started, `unknown_part`, is a 400 by design, docs/server.md).
# One worker: the coverage phase of schemathesis on several threads trips a CPython AST bug
# (SystemError "AST constructor recursion depth mismatch") on some Python 3.11 builds.
schemathesis() {
  SCHEMATHESIS_HOOKS=tests.openapi.hooks PYTHONPATH="$ROOT" "$venv/bin/st" run "$ROOT/docs/openapi.yaml" \
    --url "http://$addr" --checks all --exclude-checks positive_data_acceptance --max-examples 30 \
    --request-timeout 10 --workers 1 --seed 1 --no-color "$@"
}
(cd "$tmp" && schemathesis -H "Authorization: Bearer $(cat "$tmp/producer-token")")
(cd "$tmp" && schemathesis)
if grep -q "panicked" "$tmp/serve.log"; then
  grep -n "panicked" "$tmp/serve.log" >&2
  echo "ops: twoplane serve panicked under schemathesis" >&2
  exit 1
fi

say "ops: the Debian package (cargo-deb, from the debug binary)"
# The debug binary the server part built: a release build would cost minutes more on a small
# machine. A release package is `cargo deb -p twoplane-server` (docs/server.md).
cargo-deb -p twoplane-server --no-build --profile dev --no-strip --fast -o "$tmp/" 2>&1 | grep -v "^warning: dev profile\|^ *To enable debug symbols" || true
deb=$(ls "$tmp"/twoplane_*.deb)
dpkg -i "$deb" >/dev/null
for f in /usr/bin/twoplane /usr/lib/systemd/system/twoplane.service /etc/default/twoplane; do
  [ -e "$f" ] || { echo "ops: the package did not install $f" >&2; exit 1; }
done

say "ops: systemd-analyze verify of the unit (offline; not started)"
verify=$(systemd-analyze verify /usr/lib/systemd/system/twoplane.service 2>&1) || {
  echo "$verify" >&2
  echo "ops: systemd-analyze verify failed" >&2
  exit 1
}
# verify reports some problems as lines but succeeds: any line about the unit fails here.
if echo "$verify" | grep -i "twoplane"; then
  echo "ops: systemd-analyze verify found problems in the unit" >&2
  exit 1
fi

say "ops: the installed twoplane serve --demo, with an empty environment, streams an answer"
scratch="$tmp/scratch"
mkdir -p "$scratch"
addr=$(cd "$scratch" && start_serve "$scratch/serve.log" env -i /usr/bin/twoplane serve --demo \
  --listen 127.0.0.1:0 --db "$scratch/demo.db" --demo-tokens-per-second 200)
pids+=("$(cat "$scratch/serve.log.pid")")
chat=$(curl -sS --max-time 10 -H 'content-type: application/json' -d '{"prompt":"hello from the package","seed":7}' "http://$addr/api/chat")
id=$(printf '%s' "$chat" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["assistant"]["id"])')
curl -sS -N --max-time 60 "http://$addr/api/stream?streamId=$id" > "$scratch/answer.sse"
expected=$(/usr/bin/twoplane demo-answer --prompt "hello from the package" --seed 7)
/usr/bin/python3 - "$scratch/answer.sse" "$expected" <<'PY'
import json, sys
text, end = "", None
for line in open(sys.argv[1], encoding="utf-8"):
    if line.startswith("data: "):
        frame = json.loads(line[6:])
        if frame.get("type") == "chunk":
            text += frame["text"]
        elif frame.get("type") == "end":
            end = frame
assert end is not None, "the stream did not end"
assert end.get("status") == "complete", end
assert text.rstrip("\n") == sys.argv[2].rstrip("\n"), (text, sys.argv[2])
print(f"ops: streamed {len(text)} characters, then end ({end['status']})")
PY
kill "${pids[-1]}"
wait "${pids[-1]}" 2>/dev/null || true
dpkg --purge twoplane >/dev/null
if [ -e /usr/bin/twoplane ] || [ -e /usr/lib/systemd/system/twoplane.service ]; then
  echo "ops: removing the package left files behind" >&2
  exit 1
fi

say "ops: cargo package of the crates twoplane-server installs from, and a build from them alone"
# The browser package the binary compiles in, staged inside the crate (crates/twoplane-server/build.rs).
stage="$ROOT/crates/twoplane-server/browser"
rm -rf "$stage"
mkdir -p "$stage"
cp -r npm/twoplane/package.json npm/twoplane/src "$stage/"
[ -d npm/twoplane/wasm ] && cp -r npm/twoplane/wasm "$stage/"
crates=(twoplane-core twoplane-pg twoplane-runtime twoplane-token twoplane-stream twoplane-redis twoplane-relay twoplane-server)
package_args=()
for c in "${crates[@]}"; do package_args+=(-p "$c"); done
# --no-verify: the build from the packaged crates below is the verification, once, in one
# target directory (cargo's own would build each crate's dependencies again per crate).
cargo package --quiet --allow-dirty --no-verify "${package_args[@]}"
# Each crate unpacked on its own, as a registry would hand it out; the siblings are found by
# `[patch]` (the packaged crates depend on each other by version, as they would from a
# registry), everything else comes from the registry. The profile is the workspace's (line tables,
# no debug info for dependencies) and so is the target directory, so that the dependencies
# already built are reused and only the eight crates are built again.
unpacked="$tmp/unpacked"
mkdir -p "$unpacked"
patch=()
for c in "${crates[@]}"; do
  tar -xzf "$CARGO_TARGET_DIR/package/$c-0.1.0.crate" -C "$unpacked"
  patch+=(--config "patch.crates-io.$c.path=\"$unpacked/$c-0.1.0\"")
done
cargo install --quiet --debug --locked --path "$unpacked/twoplane-server-0.1.0" --root "$tmp/installed" \
  --target-dir "$CARGO_TARGET_DIR" "${patch[@]}" \
  --config 'profile.dev.debug="line-tables-only"' --config 'profile.dev.package."*".debug=false'
"$tmp/installed/bin/twoplane" --version
echo "ops: twoplane-server installs from its packaged crates"
