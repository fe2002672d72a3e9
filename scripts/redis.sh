#!/usr/bin/env bash
# A throwaway Redis on loopback for twoplane's tests (the relay adapters in crates/twoplane-redis
# and the multi-instance test).
#
#   scripts/redis.sh [start]  start (or reuse) the server; prints `export TWOPLANE_REDIS_URL=...`
#                             on stdout; logs go to stderr. Set it with
#                               redis_env=$(scripts/redis.sh start) && eval "$redis_env"
#                             (`eval "$(scripts/redis.sh)"` would hide a failure: eval of nothing
#                             succeeds)
#   scripts/redis.sh url      print the URL of the running server
#   scripts/redis.sh status   exit 0 when the server runs (never installs or starts anything)
#   scripts/redis.sh stop     stop the server
#   scripts/redis.sh restart  kill the server and start a fresh one on the same port (what a
#                             mid-stream outage test needs: clients see their connections drop,
#                             then the same URL works again, with every key gone)
#
# Clients must authenticate: the server runs with `requirepass`, a random password made once per
# directory (<dir>/password) and carried by the printed URL, so the tests exercise credentials in
# URLs (and check that none reaches a log).
#
# TLS mode (TWOPLANE_REDIS_TLS=1): another server (default dir /tmp/twoplane-redis-tls, first
# port 56479) that also listens with TLS on the next free port, with a certificate from
# scripts/test-certs.sh (<dir>/tls/ca.pem is its CA). `start` then prints TWOPLANE_REDIS_TLS_URL
# (rediss://) and TWOPLANE_REDIS_TLS_CA instead of TWOPLANE_REDIS_URL.
#
# Idempotent: a running server is reused. Redis is installed with apt (Debian's redis-server)
# only when no redis-server binary is found. It runs without persistence (no RDB snapshots, no
# AOF): a restart starts empty, which is the harshest outage a relay must survive. Settings:
# TWOPLANE_REDIS_DIR (default /tmp/twoplane-redis), TWOPLANE_REDIS_PORT (first port tried,
# default 56379). When TWOPLANE_STARTED_SERVICES names a file, a `start` that launched a server
# (not one that reused a running server, nor a `restart`) appends `redis <dir>` to it:
# scripts/test.sh stops exactly what its run started.
set -euo pipefail

TLS="${TWOPLANE_REDIS_TLS:-}"
if [[ -n "$TLS" ]]; then
    BASE="${TWOPLANE_REDIS_DIR:-/tmp/twoplane-redis-tls}"
    FIRST_PORT="${TWOPLANE_REDIS_PORT:-56479}"
else
    BASE="${TWOPLANE_REDIS_DIR:-/tmp/twoplane-redis}"
    FIRST_PORT="${TWOPLANE_REDIS_PORT:-56379}"
fi
PASSFILE="$BASE/password"
TLSPORTFILE="$BASE/tls-port"
PIDFILE="$BASE/redis.pid"
PORTFILE="$BASE/port"

log() { echo "redis.sh: $*" >&2; }

find_bin() {
    local b
    for b in "$(command -v redis-server 2>/dev/null || true)" /usr/bin/redis-server /usr/local/bin/redis-server; do
        if [[ -n "$b" && -x "$b" ]]; then
            echo "$b"
            return 0
        fi
    done
    return 1
}

ensure_installed() {
    if BIN="$(find_bin)"; then
        return
    fi
    log "redis-server not found; installing it with apt"
    # The package's maintainer script would start a system-wide server on port 6379; nothing here
    # wants one, so service starts are refused for the duration of the install (the standard
    # policy-rc.d mechanism), unless the machine already has its own policy.
    local policy=/usr/sbin/policy-rc.d own_policy=""
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod +x "$policy"
        own_policy=1
    fi
    local ok=""
    # stdout carries the variables a caller evals: the install's own lines go to stderr.
    apt_install redis-server >&2 && ok=1
    if [[ -n "$own_policy" ]]; then rm -f "$policy"; fi
    [[ -n "$ok" ]] || { log "apt-get install redis-server failed"; exit 1; }
    BIN="$(find_bin)" || { log "redis-server is still missing after apt-get install"; exit 1; }
}

# port_busy PORT: whether a loopback port cannot be listened on.
source "$(dirname "$0")/ports.sh"
# apt_install: the one way these scripts install a Debian package.
source "$(dirname "$0")/lib.sh"

# AUTH and PING over bash's /dev/tcp (the plain port), so no redis-cli is needed.
pong() {
    local auth="" reply=""
    [[ -f "$PASSFILE" ]] || return 1
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf 'AUTH %s\r\nPING\r\n' "$(cat "$PASSFILE")" >&3
    read -r -t 2 auth <&3 || true
    read -r -t 2 reply <&3 || true
    exec 3<&- 3>&-
    [[ "$auth" == "+OK"* && "$reply" == "+PONG"* ]]
}

pid() { [[ -f "$PIDFILE" ]] && cat "$PIDFILE"; }

# Whether process $1 is alive. A zombie is not: the daemonized server's parent may be an init
# that reaps late (or never, in some containers), and `kill -0` succeeds on a zombie, which made
# a restart wait seconds for a server that was already gone.
alive() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    state=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null)
    [[ "$state" != Z ]]
}

running() {
    local p
    p="$(pid 2>/dev/null)" || return 1
    [[ -n "$p" ]] && alive "$p" && [[ -f "$PORTFILE" ]] && pong "$(cat "$PORTFILE")" 2>/dev/null
}

url() {
    if [[ -n "$TLS" ]]; then
        echo "rediss://:$(cat "$PASSFILE")@127.0.0.1:$(cat "$TLSPORTFILE")/"
    else
        echo "redis://:$(cat "$PASSFILE")@127.0.0.1:$(cat "$PORTFILE")/"
    fi
}

exports() {
    if [[ -n "$TLS" ]]; then
        echo "export TWOPLANE_REDIS_TLS_URL=$(url) TWOPLANE_REDIS_TLS_CA=$BASE/tls/ca.pem"
    else
        echo "export TWOPLANE_REDIS_URL=$(url)"
    fi
}

start() {
    ensure_installed
    mkdir -p "$BASE"
    if running; then
        log "reusing the server on port $(cat "$PORTFILE") (pid $(pid))"
        exports
        return
    fi
    local port
    if [[ -n "${KEEP_PORT:-}" && -f "$PORTFILE" ]]; then
        port="$(cat "$PORTFILE")"
    else
        port="$(free_port_from "$FIRST_PORT")"
    fi
    echo "$port" >"$PORTFILE"
    if [[ ! -s "$PASSFILE" ]]; then
        # Hex: nothing to escape in a URL or on the command line.
        od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$PASSFILE"
        chmod 600 "$PASSFILE"
    fi
    local tls_args=()
    if [[ -n "$TLS" ]]; then
        bash "$(dirname "$0")/test-certs.sh" "$BASE/tls"
        local tls_port
        if [[ -n "${KEEP_PORT:-}" && -f "$TLSPORTFILE" ]]; then
            tls_port="$(cat "$TLSPORTFILE")"
        else
            tls_port="$(free_port_from $((port + 1)))"
        fi
        echo "$tls_port" >"$TLSPORTFILE"
        tls_args=(--tls-port "$tls_port" --tls-cert-file "$BASE/tls/server.pem" --tls-key-file "$BASE/tls/server.key"
            --tls-ca-cert-file "$BASE/tls/ca.pem" --tls-auth-clients no)
    fi
    rm -f "$PIDFILE"
    log "starting $BIN on 127.0.0.1:$port"
    # No persistence (save "" and no AOF); daemonized with a pidfile so stop/restart find it.
    # The password goes in through stdin (a config file read from "-"), not argv, so `ps` does
    # not show it.
    printf 'requirepass %s\n' "$(cat "$PASSFILE")" | "$BIN" - --bind 127.0.0.1 --port "$port" --save "" \
        --appendonly no --daemonize yes --pidfile "$PIDFILE" --logfile "$BASE/server.log" --dir "$BASE" \
        "${tls_args[@]}" >&2
    local i
    for i in $(seq 1 100); do
        if pong "$port" 2>/dev/null; then
            if [[ -n "${TWOPLANE_STARTED_SERVICES:-}" && -z "${RESTARTING:-}" ]]; then
                echo "redis $BASE" >>"$TWOPLANE_STARTED_SERVICES"
            fi
            exports
            return
        fi
        sleep 0.05
    done
    log "the server did not answer PING on port $port"
    tail -20 "$BASE/server.log" >&2 || true
    exit 1
}

stop() {
    local p
    p="$(pid 2>/dev/null)" || { log "not running"; return 0; }
    if [[ -z "$p" ]] || ! alive "$p"; then
        log "not running"
        rm -f "$PIDFILE"
        return 0
    fi
    # SIGKILL, not a shutdown: the point of a restart is an abrupt outage, and with persistence
    # off there is nothing to save anyway.
    kill -9 "$p" 2>/dev/null || true
    local i
    for i in $(seq 1 100); do
        alive "$p" || break
        sleep 0.05
    done
    rm -f "$PIDFILE"
}

case "${1:-start}" in
    start) start ;;
    url) running || { log "not running"; exit 1; }; url ;;
    status) running ;;
    stop) stop ;;
    # A restart replaces whichever server ran (the test command's, or one started by hand), so it
    # is not recorded as started: the test command leaves it as it found it.
    restart) stop; KEEP_PORT=1 RESTARTING=1 start ;;
    *) echo "usage: $0 [start|url|status|stop|restart]" >&2; exit 2 ;;
esac
