# Sourced by the service scripts (pg.sh, redis.sh, s2.sh) to pick a loopback port.
#
# A port is busy when binding it fails, which is what the server will do. Connecting to it, as
# these scripts did, finds listeners only: a port that another socket holds (the local end of an
# outgoing connection, from the kernel's ephemeral range, which covers these ports) accepted no
# connection and so looked free, and the server then died with "Address already in use".
# SO_REUSEADDR, as servers set it, so a port left only in TIME_WAIT counts as free.
port_busy() {
    python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(0)
sys.exit(1)
PY
}

# free_port_from FIRST: the first port from FIRST on (at most 50 further) that port_busy finds
# free; fails, saying so, when there is none.
free_port_from() {
    local port="$1"
    while port_busy "$port"; do
        port=$((port + 1))
        if (( port > $1 + 50 )); then echo "no free port near $1" >&2; return 1; fi
    done
    echo "$port"
}

# A server these scripts start outlives them, and would keep every descriptor it inherited: a
# lock a caller holds (`flock LOCKFILE scripts/test-plane.sh` holds it on a descriptor the
# script inherits) would then stay held by PostgreSQL or Redis until they stop, and the next
# `flock` would wait forever. So the scripts close every inherited descriptor above stderr as
# they start (bash's own, 255, reads the script and stays).
for _fd in /proc/$$/fd/*; do
    _fd=${_fd##*/}
    if [[ "$_fd" =~ ^[0-9]+$ ]] && (( _fd > 2 && _fd != 255 )); then eval "exec ${_fd}>&-" 2>/dev/null || true; fi
done
unset _fd
