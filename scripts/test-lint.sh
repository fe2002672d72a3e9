#!/usr/bin/env bash
# Lints the whole workspace: no import cycle among the modules of any crate, clippy
# with warnings as errors on every target, and links that stay inside the repository.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
# No import circle among the modules of any crate (every crate under crates/ and bindings/,
# found rather than listed, so a new crate is covered from its first commit): each layer uses
# only those below it, so a reader can follow the tree one way.
crate_srcs=()
for manifest in crates/*/Cargo.toml bindings/*/Cargo.toml; do
  [ -d "$(dirname "$manifest")/src" ] && crate_srcs+=("$(dirname "$manifest")/src")
done
say "lint: no import cycle among the modules of ${#crate_srcs[@]} crates"
python3 scripts/check-module-cycles.py "${crate_srcs[@]}"

say "lint: cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
# The wasm binding's opt-in features (the full build's modules) are compiled only with them on.
say "lint: cargo clippy -p twoplane-wasm --features message-text,ui --all-targets -- -D warnings"
cargo clippy -p twoplane-wasm --features message-text,ui --all-targets -- -D warnings
echo "clippy: clean"

# The repository stands alone: its Markdown links resolve inside it, and no tracked file points
# at the folder the project was started from (a user's clone has nothing beside it).
say "lint: links in the docs resolve inside the repository"
python3 scripts/check-links.py
if git grep -n -e '\.\./shared' -- ':!scripts/test-lint.sh'; then
  echo "the files above point outside the repository" >&2
  exit 1
fi
echo "no path leaves the repository"
