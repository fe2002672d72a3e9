#!/usr/bin/env bash
# Lints the whole workspace: clippy with warnings as errors, on every target.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
say "lint: cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
echo "clippy: clean"
