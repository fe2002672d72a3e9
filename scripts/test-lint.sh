#!/usr/bin/env bash
# Lints the whole workspace: rustfmt's formatting, no import cycle among the modules of any crate,
# clippy with warnings as errors on every target, ESLint over the JavaScript, and links that stay
# inside the repository.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
check_format
check_imports
check_clippy
check_js

# The repository stands alone: its Markdown links resolve inside it, and no tracked file points
# at the folder the project was started from (a user's clone has nothing beside it).
say "lint: links in the docs resolve inside the repository"
python3 scripts/check-links.py
if git grep -n -e '\.\./shared' -- ':!scripts/test-lint.sh'; then
  echo "the files above point outside the repository" >&2
  exit 1
fi
echo "no path leaves the repository"
