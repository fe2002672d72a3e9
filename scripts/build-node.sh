#!/usr/bin/env bash
# Builds the Node addon (bindings/node, napi-rs 3) with @napi-rs/cli and puts it where the npm
# package loads it: npm/twoplane/native/twoplane.<platform>.node (generated, ignored by git; a
# copy also stays next to bindings/node/package.json). Idempotent: the CLI is installed from
# bindings/node/package-lock.json only when that changed, and cargo rebuilds only what changed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/h-node}

npm_ci "$ROOT/bindings/node"

say "node: napi build --platform --release (bindings/node)"
(cd bindings/node && npx --no-install napi build --platform --release --no-js --dts addon.d.ts)

mkdir -p npm/twoplane/native
built=0
for f in bindings/node/twoplane.*.node; do
  [ -e "$f" ] || continue
  cp "$f" npm/twoplane/native/
  echo "node: $f -> npm/twoplane/native/$(basename "$f") ($(wc -c < "$f") bytes)"
  built=1
done
[ "$built" -eq 1 ] || { echo "node: no .node file was produced" >&2; exit 1; }
