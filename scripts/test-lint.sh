#!/usr/bin/env bash
# Lints the whole workspace: clippy with warnings as errors, on every target.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
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
