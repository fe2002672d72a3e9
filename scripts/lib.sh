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
