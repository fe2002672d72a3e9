#!/usr/bin/env bash
# Installs what the test parts need, in one step before any part runs (scripts/test.sh calls it
# first), so a part only builds and tests: the Debian packages, the Rust toolchains and tools, the
# npm folders, the Python venv and s2-lite. Every step checks first, so on a machine that has
# everything this prints nothing and takes a few seconds.
#
#   bash scripts/setup.sh             # what every part needs
#   bash scripts/setup.sh check node  # what those parts need
#
# A part run on its own (`bash scripts/test-node.sh`) expects this to have run for it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# The pins this step installs at (the parts use what is installed; scripts/test-ops.sh reads the
# venv's stamp and cargo-deb's version from here).
SCHEMATHESIS_VERSION=4.32.5
SPEC_VALIDATOR_VERSION=0.9.0
CARGO_DEB_VERSION=3.8.0

# What a part needs, one step per line: an `apt:` word is a Debian package, the rest are functions
# below or in lib.sh.
needs() {
  case "$1" in
    check) echo "js_lint" ;;
    core) echo "wasm32 fuzz_tools" ;;
    lint) echo "js_lint" ;;
    wasm) echo "apt:chromium wasm_tools" ;;
    node) echo "wasm_tools node_tools" ;;
    plane) echo "apt:postgresql apt:openssl" ;;
    redis) echo "apt:postgresql apt:redis-server apt:openssl" ;;
    server) echo "apt:chromium apt:curl apt:python3 apt:postgresql apt:redis-server apt:openssl wasm_tools node_tools demo_tools" ;;
    multi) echo "apt:postgresql apt:redis-server apt:openssl" ;;
    relay) echo "apt:postgresql apt:redis-server apt:openssl apt:stunnel4 s2_lite fuzz_tools" ;;
    aisdk) echo "apt:chromium aisdk_tools wasm_tools" ;;
    ops) echo "apt:python3-venv apt:curl apt:systemd apt:dpkg-dev openapi_venv cargo_deb" ;;
    *) echo "setup.sh: no part named $1" >&2; return 1 ;;
  esac
}

wasm32() { rust_target wasm32-unknown-unknown; }
js_lint() { npm_ci "$ROOT/tests/lint"; }
node_tools() { npm_ci "$ROOT/bindings/node"; }
demo_tools() { npm_ci "$ROOT/tests/demo"; }
aisdk_tools() { npm_ci "$ROOT/tests/ai-sdk"; }
# s2-lite, built once into a cache outside the checkout (11 to 21 minutes the first time).
s2_lite() { bash "$ROOT/scripts/s2.sh" install; }
cargo_deb() { cargo_tool cargo-deb cargo-deb "$CARGO_DEB_VERSION"; }
# The OpenAPI tools, pinned, in a venv of their own (Debian's python3, not whatever is first on
# PATH); reinstalled only when the pins change.
openapi_venv() {
  local venv="$ROOT/.tools/openapi-venv"
  local want="schemathesis==$SCHEMATHESIS_VERSION openapi-spec-validator==$SPEC_VALIDATOR_VERSION"
  [ "$(cat "$venv/.twoplane-stamp" 2>/dev/null)" = "$want" ] && return 0
  say "setup: pip install $want (into .tools/openapi-venv)"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  # shellcheck disable=SC2086 # two requirement words
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
  echo "$want" > "$venv/.twoplane-stamp"
}

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(check core lint wasm node plane redis server multi relay aisdk ops)

# Every step once, in the order first asked for; the Debian packages in one apt-get call.
steps=()
packages=()
for part in "${parts[@]}"; do
  for step in $(needs "$part"); do
    case "$step" in
      apt:*) [[ " ${packages[*]} " == *" ${step#apt:} "* ]] || packages+=("${step#apt:}") ;;
      *) [[ " ${steps[*]} " == *" $step "* ]] || steps+=("$step") ;;
    esac
  done
done
[ ${#packages[@]} -eq 0 ] || apt_install "${packages[@]}"
for step in "${steps[@]}"; do "$step"; done
echo "setup: ready for ${parts[*]}"
