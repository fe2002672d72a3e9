#!/usr/bin/env bash
# A throwaway PostgreSQL on loopback for twoplane's tests.
#
#   scripts/pg.sh [start]   start (or reuse) the cluster; prints `export TWOPLANE_PG_URL=...`
#                           on stdout; logs go to stderr. Set it with
#                             pg_env=$(scripts/pg.sh start) && eval "$pg_env"
#                           (under `set -e` the assignment fails the script when pg.sh fails;
#                           `eval "$(scripts/pg.sh)"` would not: eval of nothing succeeds)
#   scripts/pg.sh url       print the URL of the running cluster
#   scripts/pg.sh status    exit 0 when the cluster runs (never installs or starts anything)
#   scripts/pg.sh stop      stop the cluster (the data directory is kept for the next start)
#
# Idempotent: a running cluster is reused. PostgreSQL is installed with apt only when no
# pg_ctl/initdb is found under /usr/lib/postgresql/*/bin. The server refuses to run as root,
# so as root it runs as the `postgres` user. Connections over TCP need the password (SCRAM): a
# random one made at initdb, kept in <dir>/password and carried by the printed URL, so the tests
# exercise credentials in URLs (and check that none reaches a log). This script itself talks
# to the server over its Unix socket, where the cluster trusts local users.
#
# TLS mode (TWOPLANE_PG_TLS=1): a second cluster (default dir /tmp/twoplane-pg-tls, first port
# 55532) with ssl=on and a certificate from scripts/test-certs.sh: a throwaway CA
# (<dir>/tls/ca.pem) signs a server certificate for 127.0.0.1 and localhost; an unrelated CA
# (<dir>/tls/wrong-ca.pem) is made too, for tests that must see verification fail. Plain
# connections are still accepted. `start` prints TWOPLANE_PG_TLS_URL, TWOPLANE_PG_TLS_CA and
# TWOPLANE_PG_TLS_WRONG_CA instead of TWOPLANE_PG_URL.
#
# Settings: TWOPLANE_PG_DIR (default /tmp/twoplane-pg), TWOPLANE_PG_PORT (first port tried,
# default 55432). When
# TWOPLANE_STARTED_SERVICES names a file, a start that launched a server (not one that reused a
# running server) appends `pg <dir>` to it: scripts/test.sh stops exactly what its run started.
set -euo pipefail

TLS="${TWOPLANE_PG_TLS:-}"
if [[ -n "$TLS" ]]; then
    BASE="${TWOPLANE_PG_DIR:-/tmp/twoplane-pg-tls}"
    FIRST_PORT="${TWOPLANE_PG_PORT:-55532}"
else
    BASE="${TWOPLANE_PG_DIR:-/tmp/twoplane-pg}"
    FIRST_PORT="${TWOPLANE_PG_PORT:-55432}"
fi
# "cluster", not "data": a cluster made before passwords were required (trust over TCP) is left
# alone in "data" rather than changed under a test that may be using it.
DATA="$BASE/cluster"
DB=twoplane_test
SUPERUSER=postgres

log() { echo "pg.sh: $*" >&2; }

find_bin() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$d/pg_ctl" && -x "$d/initdb" ]]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

ensure_installed() {
    if BIN="$(find_bin)"; then
        return
    fi
    log "PostgreSQL not found; installing it with apt"
    # stdout carries the variables a caller evals: the install's own lines go to stderr.
    apt_install postgresql >&2
    BIN="$(find_bin)" || { log "PostgreSQL is still missing after apt-get install"; exit 1; }
}

# Run a server binary as the cluster owner (root is refused by PostgreSQL).
as_owner() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# port_busy PORT: whether a loopback port cannot be listened on.
source "$(dirname "$0")/ports.sh"
# apt_install: the one way these scripts install a Debian package.
source "$(dirname "$0")/lib.sh"

running() { [[ -f "$DATA/PG_VERSION" ]] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

current_port() { cat "$BASE/port"; }

url() { echo "postgresql://$SUPERUSER:$(cat "$BASE/password")@127.0.0.1:$(current_port)/$DB"; }

# Over the Unix socket in $BASE (trusted), so no password is needed or shown.
psql_as_super() {
    as_owner env PGCONNECT_TIMEOUT=5 "$BIN/psql" -h "$BASE" -p "$(current_port)" -U "$SUPERUSER" -d postgres \
        -v ON_ERROR_STOP=1 -tA "$@"
}

# The server's certificate and key, made by scripts/test-certs.sh, readable by the server.
make_certificates() {
    bash "$(dirname "$0")/test-certs.sh" "$BASE/tls"
    if [[ "$(id -u)" == 0 ]]; then chown postgres: "$BASE/tls/server.key" "$BASE/tls/server.pem"; fi
}

start() {
    ensure_installed
    mkdir -p "$BASE"
    if [[ "$(id -u)" == 0 ]]; then chown postgres: "$BASE"; fi
    if running && [[ -f "$BASE/port" ]]; then
        log "reusing the cluster in $DATA on port $(current_port)"
    else
        if [[ ! -f "$DATA/PG_VERSION" ]]; then
            log "initdb in $DATA"
            # A fresh random password per cluster (hex: nothing to escape in a URL).
            od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$BASE/password"
            chmod 600 "$BASE/password"
            if [[ "$(id -u)" == 0 ]]; then chown postgres: "$BASE/password"; fi
            as_owner "$BIN/initdb" -D "$DATA" -U "$SUPERUSER" --auth-local=trust --auth-host=scram-sha-256 \
                --pwfile="$BASE/password" -E UTF8 --no-locale >"$BASE/initdb.log" 2>&1 \
                || { cat "$BASE/initdb.log" >&2; exit 1; }
        fi
        local tls_opts=""
        if [[ -n "$TLS" ]]; then
            make_certificates
            tls_opts="-c ssl=on -c ssl_cert_file=$BASE/tls/server.pem -c ssl_key_file=$BASE/tls/server.key"
        fi
        local port
        port="$(free_port_from "$FIRST_PORT")"
        echo "$port" >"$BASE/port"
        log "starting PostgreSQL ($BIN) on 127.0.0.1:$port"
        as_owner "$BIN/pg_ctl" -D "$DATA" -l "$BASE/server.log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $port -k $BASE -c fsync=off -c wal_level=logical $tls_opts" start >&2 \
            || { tail -20 "$BASE/server.log" >&2; exit 1; }
        if [[ -n "${TWOPLANE_STARTED_SERVICES:-}" ]]; then echo "pg $BASE" >>"$TWOPLANE_STARTED_SERVICES"; fi
    fi
    if [[ "$(psql_as_super -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]]; then
        psql_as_super -c "CREATE DATABASE $DB" >/dev/null
    fi
    if [[ -n "$TLS" ]]; then
        echo "export TWOPLANE_PG_TLS_URL=$(url) TWOPLANE_PG_TLS_CA=$BASE/tls/ca.pem TWOPLANE_PG_TLS_WRONG_CA=$BASE/tls/wrong-ca.pem"
    else
        echo "export TWOPLANE_PG_URL=$(url)"
    fi
}

stop() {
    if ! BIN="$(find_bin)"; then return 0; fi
    if running; then
        as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >&2
    else
        log "not running"
    fi
}

case "${1:-start}" in
    start) start ;;
    url) ensure_installed; running || { log "not running"; exit 1; }; url ;;
    status) BIN="$(find_bin)" && running ;;
    stop) stop ;;
    *) echo "usage: $0 [start|url|status|stop]" >&2; exit 2 ;;
esac
