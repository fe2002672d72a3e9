# Shared helpers for the scripts in this folder. Sourced, never run. Every install here is
# idempotent: it checks first, so a second run on the same machine does nothing.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
# Tools installed by the scripts (wasm-bindgen-cli, ...) live here, inside the checkout.
export PATH="$ROOT/.tools/bin:$HOME/.cargo/bin:$PATH"

say() { printf '\n==> %s\n' "$*"; }

# The addon and the wasm build of the npm package, one after the other (never two cargo builds at
# once on a 2-core machine); each script is idempotent.
build_js_backends() {
  bash "$ROOT/scripts/build-node.sh"
  bash "$ROOT/scripts/build-wasm.sh"
}

APT_UPDATED=${APT_UPDATED:-}
# apt_install PKG... : install Debian packages that are missing (apt-get update once first; a
# fresh machine's package lists are stale).
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ -z "$APT_UPDATED" ]; then
    say "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    APT_UPDATED=1
    export APT_UPDATED
  fi
  say "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# rust_target TRIPLE [TOOLCHAIN]
rust_target() {
  local tc=${2:-stable}
  rustup target list --installed --toolchain "$tc" 2>/dev/null | grep -qx "$1" || rustup target add --toolchain "$tc" "$1"
}

# cargo_tool BIN CRATE VERSION : cargo install CRATE@VERSION into .tools unless BIN is there.
cargo_tool() {
  local bin=$1 crate=$2 version=$3
  if command -v "$bin" >/dev/null 2>&1 && "$bin" --version 2>/dev/null | grep -qF "$version"; then
    return 0
  fi
  say "cargo install $crate $version"
  cargo install --quiet --root "$ROOT/.tools" "$crate" --version "$version"
}

# wasm_bindgen_version: the wasm-bindgen crate's version in Cargo.lock (the glue and the module
# must come from the same wasm-bindgen).
wasm_bindgen_version() {
  local v
  v=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock")
  if [ -z "$v" ]; then
    (cd "$ROOT" && cargo generate-lockfile >/dev/null 2>&1) || true
    v=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock")
  fi
  echo "$v"
}

# wasm_tools: what scripts/build-wasm.sh builds with: the rustup target, wasm-bindgen-cli at the
# crate's version (into .tools/), and the npm tools of tests/browser (binaryen's wasm-opt, tsc).
wasm_tools() {
  rust_target wasm32-unknown-unknown
  cargo_tool wasm-bindgen wasm-bindgen-cli "$(wasm_bindgen_version)"
  npm_ci "$ROOT/tests/browser"
}

# fuzz_tools: cargo-fuzz, pinned, and the nightly toolchain it runs on.
fuzz_tools() {
  cargo_tool cargo-fuzz cargo-fuzz 0.13.2
  rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
}

# npm_ci DIR : install a folder's npm dependencies when package.json changed since the last run.
npm_ci() {
  local dir=$1 stamp
  stamp="$dir/node_modules/.twoplane-stamp"
  local sum
  sum=$(cat "$dir/package.json" "$dir/package-lock.json" 2>/dev/null | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
    return 0
  fi
  say "npm install in ${dir#"$ROOT"/}"
  if [ -f "$dir/package-lock.json" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  else
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
  fi
  echo "$sum" > "$stamp"
}

# redact_urls: copy stdin to stdout with the password of every `scheme://user:password@host` URL
# replaced by `***` (the test services' URLs carry passwords; logs must not).
redact_urls() { sed -E 's#(://[^:/@ ]*):[^@ ]*@#\1:***@#g'; }

# start_pg_and_redis WHO: start (or reuse) the loopback PostgreSQL and Redis and export
# TWOPLANE_PG_URL and TWOPLANE_REDIS_URL; WHO names the caller in the (redacted) line it prints.
# Assigned first: under `set -e` a failing start stops the caller here, which
# `eval "$(pg.sh start)"` would not (eval of an empty string succeeds).
start_pg_and_redis() {
  local pg_env redis_env
  pg_env=$("$ROOT/scripts/pg.sh" start)
  redis_env=$("$ROOT/scripts/redis.sh" start)
  eval "$pg_env"
  eval "$redis_env"
  : "${TWOPLANE_PG_URL:?scripts/pg.sh printed no URL}" "${TWOPLANE_REDIS_URL:?scripts/redis.sh printed no URL}"
  export TWOPLANE_PG_URL TWOPLANE_REDIS_URL
  echo "$1: TWOPLANE_PG_URL=$TWOPLANE_PG_URL TWOPLANE_REDIS_URL=$TWOPLANE_REDIS_URL" | redact_urls >&2
}

# ---- checks shared by the fast loop (test-check.sh) and the core and lint parts ----------------

# check_format: the Rust as rustfmt writes it (rustfmt.toml), so formatting never rides in a
# commit of its own.
check_format() {
  say "check: cargo fmt --all -- --check"
  cargo fmt --all -- --check
  echo "fmt: clean"
}

# check_imports: no import circle among the modules of any crate (every crate under crates/ and
# bindings/, found rather than listed, so a new crate is covered from its first commit), and no
# import from a lower named layer into a higher one where a crate declares its layers (the table
# in scripts/check-module-cycles.py): each layer uses only those below it, so a reader can follow
# the tree one way.
check_imports() {
  local crate_srcs=() manifest
  for manifest in "$ROOT"/crates/*/Cargo.toml "$ROOT"/bindings/*/Cargo.toml; do
    [ -d "$(dirname "$manifest")/src" ] && crate_srcs+=("$(dirname "$manifest")/src")
  done
  say "check: no import cycle among the modules of ${#crate_srcs[@]} crates, no upward import between named layers"
  python3 "$ROOT/scripts/check-module-cycles.py" "${crate_srcs[@]}"
}

# check_clippy: clippy with warnings as errors on every target, and once more on the wasm
# binding's opt-in features (the full build's modules compile only with them on).
check_clippy() {
  say "check: cargo clippy --workspace --all-targets -- -D warnings"
  cargo clippy -q --workspace --all-targets -- -D warnings
  say "check: cargo clippy -p twoplane-wasm --features message-text,ui --all-targets -- -D warnings"
  cargo clippy -q -p twoplane-wasm --features message-text,ui --all-targets -- -D warnings
  echo "clippy: clean"
}

# check_js: ESLint over the repository's JavaScript (tests/lint holds the pinned linter and its
# rules).
check_js() {
  say "check: eslint (tests/lint/eslint.config.mjs)"
  "$ROOT/tests/lint/node_modules/.bin/eslint" --config "$ROOT/tests/lint/eslint.config.mjs" "$ROOT"
  echo "eslint: clean"
}

# core_tests: the core's and the read-token crate's unit, property, vector and crash-replay tests,
# then the vectors and the JavaScript code tables regenerated and diffed with the checked-in copies.
core_tests() {
  say "check: cargo test -p twoplane-core -p twoplane-token"
  cargo test -q -p twoplane-core -p twoplane-token
  local tmp
  tmp=$(mktemp -d)
  say "check: the vectors are up to date"
  cargo run -q -p twoplane-core --example gen_vectors -- "$tmp"
  # token.json is the server's (examples/gen_token_vectors.rs); scripts/test-server.sh diffs it.
  diff -ru "$ROOT/tests/vectors" "$tmp" --exclude README.md --exclude token.json
  echo "vectors: identical"
  say "check: the JavaScript code tables are up to date (npm/twoplane/src/codes.js, codes.d.ts)"
  cargo run -q -p twoplane-core --example gen_js_codes -- "$tmp/codes"
  diff -u "$ROOT/npm/twoplane/src/codes.js" "$tmp/codes/codes.js"
  diff -u "$ROOT/npm/twoplane/src/codes.d.ts" "$tmp/codes/codes.d.ts"
  echo "codes: identical"
  rm -rf "$tmp"
}
