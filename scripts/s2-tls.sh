#!/usr/bin/env bash
# HTTPS in front of the test s2-lite: stunnel (Debian's stunnel4) on loopback terminates TLS with
# a certificate from a throwaway CA (scripts/test-certs.sh) and forwards to the plain s2-lite
# that scripts/s2.sh runs, so the relay's HTTPS client is tested against a real TLS server.
#
#   scripts/s2-tls.sh [start]   start s2-lite if needed, then the terminator (or reuse both);
#                               prints `export TWOPLANE_S2_URL=... TWOPLANE_S2_TLS_URL=https://...
#                               TWOPLANE_S2_TLS_CA=... TWOPLANE_S2_TLS_WRONG_CA=...`
#   scripts/s2-tls.sh stop      stop the terminator (s2-lite is scripts/s2.sh's to stop)
#
# Settings: TWOPLANE_S2_TLS_DIR (config, pid, port, certificates; default /tmp/twoplane-s2-tls),
# TWOPLANE_S2_TLS_PORT (first port tried, default 57443).
set -euo pipefail

BASE="${TWOPLANE_S2_TLS_DIR:-/tmp/twoplane-s2-tls}"
FIRST_PORT="${TWOPLANE_S2_TLS_PORT:-57443}"
PIDFILE="$BASE/stunnel.pid"
PORTFILE="$BASE/port"
HERE="$(cd "$(dirname "$0")" && pwd)"

log() { echo "s2-tls.sh: $*" >&2; }
source "$HERE/ports.sh" # port_busy

pid() { [[ -f "$PIDFILE" ]] && tr -d ' \n' <"$PIDFILE"; }

# Whether the terminator runs and forwards to the s2-lite on `$1`.
running() {
    local p
    p="$(pid 2>/dev/null)" || return 1
    [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null && [[ -f "$PORTFILE" ]] && grep -qx "connect = 127.0.0.1:$1" "$BASE/stunnel.conf"
}

exports() {
    echo "export TWOPLANE_S2_URL=http://127.0.0.1:$1 TWOPLANE_S2_TLS_URL=https://127.0.0.1:$(cat "$PORTFILE")" \
        "TWOPLANE_S2_TLS_CA=$BASE/tls/ca.pem TWOPLANE_S2_TLS_WRONG_CA=$BASE/tls/wrong-ca.pem"
}

start() {
    local s2_env s2_port
    s2_env="$(bash "$HERE/s2.sh" start)"
    eval "$s2_env"
    s2_port="${TWOPLANE_S2_URL##*:}"
    if ! command -v stunnel4 >/dev/null && ! command -v stunnel >/dev/null; then
        source "$HERE/lib.sh"
        apt_install stunnel4 >&2
    fi
    mkdir -p "$BASE"
    bash "$HERE/test-certs.sh" "$BASE/tls"
    if running "$s2_port"; then
        log "reusing the terminator on port $(cat "$PORTFILE") (pid $(pid))"
        exports "$s2_port"
        return
    fi
    stop_quietly
    local port
    port="$(free_port_from "$FIRST_PORT")"
    echo "$port" >"$PORTFILE"
    cat >"$BASE/stunnel.conf" <<EOF
pid = $PIDFILE
output = $BASE/stunnel.log
foreground = no
[s2]
accept = 127.0.0.1:$port
connect = 127.0.0.1:$s2_port
cert = $BASE/tls/server.pem
key = $BASE/tls/server.key
; The same server at an address its certificate does not name, for the tests that must see
; the name check fail (127.0.0.2 is loopback too).
[s2-unnamed]
accept = 127.0.0.2:$port
connect = 127.0.0.1:$s2_port
cert = $BASE/tls/server.pem
key = $BASE/tls/server.key
EOF
    log "starting stunnel on port $port, in front of s2-lite on $s2_port"
    local bin
    bin="$(command -v stunnel4 || command -v stunnel)"
    "$bin" "$BASE/stunnel.conf" >&2
    # scripts/test.sh stops, when it ends, the servers its run started.
    if [[ -n "${TWOPLANE_STARTED_SERVICES:-}" ]]; then echo "s2tls $BASE" >>"$TWOPLANE_STARTED_SERVICES"; fi
    local i
    for i in $(seq 1 100); do
        if [[ -n "$(pid 2>/dev/null)" ]] && port_busy "$port"; then
            exports "$s2_port"
            return
        fi
        sleep 0.05
    done
    log "stunnel did not start"
    tail -20 "$BASE/stunnel.log" >&2 || true
    exit 1
}

stop_quietly() {
    local p
    p="$(pid 2>/dev/null)" || return 0
    [[ -n "$p" ]] && kill "$p" 2>/dev/null || true
    local i
    for i in $(seq 1 100); do
        [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null || break
        sleep 0.05
    done
    rm -f "$PIDFILE"
}

case "${1:-start}" in
    start) start ;;
    stop) stop_quietly ;;
    *) echo "usage: $0 [start|stop]" >&2; exit 2 ;;
esac
