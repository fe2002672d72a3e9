#!/usr/bin/env bash
# A throwaway S2 server (s2-lite, the open-source single-process S2) on loopback for the relay's
# tests and benchmark.
#
#   scripts/s2.sh install   build s2-lite into the cache unless it is already there
#   scripts/s2.sh [start]   install if needed, start (or reuse) a server; prints
#                           `export TWOPLANE_S2_URL=...` on stdout, so `eval "$(scripts/s2.sh)"`
#                           sets it; logs go to stderr
#   scripts/s2.sh url       print the URL of the running server
#   scripts/s2.sh stop      stop the server
#
# s2-lite takes 11 minutes to build on 2 idle cores (about 21 on a busy machine), so the binary
# is cached OUTSIDE the checkout (a fresh clone or a `git clean` keeps it) in TWOPLANE_S2_CACHE
# (default ${XDG_CACHE_HOME:-$HOME/.cache}/twoplane/s2-lite), keyed by the pinned version: a cache whose
# binary reports another version is rebuilt. Concurrent installs wait on one lock.
#
# The server keeps everything in memory (no --bucket, no --local-root): a restart starts empty.
# It listens on every interface (s2-lite has no bind-address flag); clients use 127.0.0.1.
# Settings: TWOPLANE_S2_DIR (pid, port and log files; default /tmp/twoplane-s2),
# TWOPLANE_S2_PORT (first port tried, default 57080).
set -euo pipefail

S2_LITE_VERSION=0.43.4
CACHE="${TWOPLANE_S2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/twoplane/s2-lite}"
BIN="$CACHE/bin/server"
BASE="${TWOPLANE_S2_DIR:-/tmp/twoplane-s2}"
FIRST_PORT="${TWOPLANE_S2_PORT:-57080}"
PIDFILE="$BASE/server.pid"
PORTFILE="$BASE/port"

log() { echo "s2.sh: $*" >&2; }

installed() { [[ -x "$BIN" ]] && "$BIN" --version 2>/dev/null | grep -qF "$S2_LITE_VERSION"; }

install() {
    installed && return 0
    mkdir -p "$CACHE"
    # One build at a time: a second caller waits for the first and then finds the binary.
    exec 9>"$CACHE/.install.lock"
    flock 9
    if ! installed; then
        log "building s2-lite $S2_LITE_VERSION into $CACHE (11 minutes on 2 idle cores, more on a busy machine)"
        # Its own temporary target dir: the workspace's CARGO_TARGET_DIR must not mix with it.
        env -u CARGO_TARGET_DIR nice -n 5 cargo install s2-lite --version "$S2_LITE_VERSION" \
            --locked --bin server --root "$CACHE" >&2
        installed || { log "s2-lite is still missing after cargo install"; exit 1; }
    fi
    exec 9>&-
}

# port_busy PORT: whether a loopback port cannot be listened on.
source "$(dirname "$0")/ports.sh"

# GET /health over bash's /dev/tcp (no curl needed); s2-lite answers "OK" when its store is up.
healthy() {
    local reply
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    reply="$(timeout 2 cat <&3 || true)"
    exec 3<&- 3>&-
    [[ "$reply" == "HTTP/1.1 200"* ]]
}

pid() { [[ -f "$PIDFILE" ]] && cat "$PIDFILE"; }

running() {
    local p
    p="$(pid 2>/dev/null)" || return 1
    [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null && [[ -f "$PORTFILE" ]] && healthy "$(cat "$PORTFILE")" 2>/dev/null
}

url() { echo "http://127.0.0.1:$(cat "$PORTFILE")"; }

start() {
    install
    mkdir -p "$BASE"
    if running; then
        log "reusing the server on port $(cat "$PORTFILE") (pid $(pid))"
        echo "export TWOPLANE_S2_URL=$(url)"
        return
    fi
    local port
    port="$(free_port_from "$FIRST_PORT")"
    echo "$port" >"$PORTFILE"
    log "starting s2-lite on port $port (in-memory)"
    # setsid: the server outlives this script and is not hit by the caller's Ctrl-C.
    RUST_LOG="${RUST_LOG:-warn}" setsid "$BIN" --port "$port" >"$BASE/server.log" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    # scripts/test.sh stops, when it ends, the servers its run started.
    if [[ -n "${TWOPLANE_STARTED_SERVICES:-}" ]]; then echo "s2 $BASE" >>"$TWOPLANE_STARTED_SERVICES"; fi
    local i
    for i in $(seq 1 200); do
        if healthy "$port" 2>/dev/null; then
            echo "export TWOPLANE_S2_URL=$(url)"
            return
        fi
        kill -0 "$(pid)" 2>/dev/null || break
        sleep 0.05
    done
    log "s2-lite did not become healthy on port $port"
    tail -20 "$BASE/server.log" >&2 || true
    exit 1
}

stop() {
    local p
    p="$(pid 2>/dev/null)" || { log "not running"; return 0; }
    if [[ -z "$p" ]] || ! kill -0 "$p" 2>/dev/null; then
        log "not running"
        rm -f "$PIDFILE"
        return 0
    fi
    kill "$p" 2>/dev/null || true
    local i
    for i in $(seq 1 100); do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$p" 2>/dev/null || true
    rm -f "$PIDFILE"
}

case "${1:-start}" in
    install) install ;;
    start) start ;;
    url) running || { log "not running"; exit 1; }; url ;;
    stop) stop ;;
    *) echo "usage: $0 [install|start|url|stop]" >&2; exit 2 ;;
esac
