#!/usr/bin/env bash
# Throwaway TLS material for the test services (scripts/pg.sh and scripts/redis.sh in their TLS
# modes): `scripts/test-certs.sh DIR` makes, unless DIR already holds them,
#   ca.pem / ca.key              a CA made for this one directory
#   server.pem / server.key      a server certificate it signs, for 127.0.0.1 and localhost
#   wrong-ca.pem / wrong-ca.key  an unrelated CA (what a test that must see verification fail
#                                trusts instead)
# with openssl (installed with apt when missing). Nothing here is secret beyond the test run:
# the keys never leave DIR, and a fresh DIR gets fresh keys.
set -euo pipefail

dir="${1:?usage: $0 DIR}"
if [[ -f "$dir/server.pem" && -f "$dir/server.key" && -f "$dir/wrong-ca.pem" ]]; then exit 0; fi
if ! command -v openssl >/dev/null; then
    source "$(dirname "$0")/lib.sh"
    apt_install openssl >&2
fi
mkdir -p "$dir"
days=3650
quiet() { "$@" >/dev/null 2>&1 || { echo "test-certs.sh: failed: $*" >&2; exit 1; }; }
quiet openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" -days "$days" \
    -subj "/CN=twoplane test CA"
quiet openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/wrong-ca.key" -out "$dir/wrong-ca.pem" -days "$days" \
    -subj "/CN=twoplane unrelated CA"
quiet openssl req -newkey rsa:2048 -nodes -keyout "$dir/server.key" -out "$dir/server.csr" -subj "/CN=localhost"
printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' 'basicConstraints=CA:FALSE' \
    'keyUsage=digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth' >"$dir/server.ext"
quiet openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/server.pem" -days "$days" -extfile "$dir/server.ext"
chmod 600 "$dir/server.key" "$dir/ca.key" "$dir/wrong-ca.key"
