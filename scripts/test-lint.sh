#!/usr/bin/env bash
# Lints the whole workspace: no import cycle among the plane's modules, clippy with warnings as
# errors on every target, and links that stay inside the repository.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
# No import circle among the plane's modules: each layer uses only those below it (issue 21).
# The server's modules are listed but not yet held to it, until its own redraw lands.
say "lint: no import cycle among twoplane-stream's modules"
python3 scripts/check-module-cycles.py crates/twoplane-stream/src
say "lint: import cycles among twoplane-server's modules (reported, not enforced yet)"
python3 scripts/check-module-cycles.py --report-only crates/twoplane-server/src

say "lint: cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
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
