#!/usr/bin/env bash
# make_ca.sh OUTDIR [NAME...]
#
# Makes a throw-away certificate authority (OUTDIR/ca.pem, OUTDIR/ca.key) and
# a TLS server certificate signed by it (OUTDIR/server.pem, OUTDIR/server.key)
# whose subjectAltName lists the NAMEs: IPv4/IPv6 addresses become IP entries,
# anything else a DNS entry. Default names: localhost and 127.0.0.1.
#
# For tests only: the keys are unencrypted and the CA lives for a day. Point a
# client at OUTDIR/ca.pem (e.g. SSL_CERT_FILE for Go programs such as
# terraform) to make it trust the server. Quiet on success; on failure prints
# openssl's output and exits non-zero.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: $0 OUTDIR [NAME...]" >&2
    exit 2
fi
out=$1
shift
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(localhost 127.0.0.1)

command -v openssl >/dev/null || { echo "make_ca: openssl is missing (apt-get install openssl)" >&2; exit 2; }
mkdir -p "$out"

# subjectAltName: IP:... for addresses, DNS:... for everything else.
san=""
for name in "${names[@]}"; do
    if [[ $name =~ ^[0-9]+(\.[0-9]+){3}$ || $name == *:* ]]; then
        san+="${san:+,}IP:$name"
    else
        san+="${san:+,}DNS:$name"
    fi
done

work=$(mktemp -d "$out/.make_ca.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Runs openssl quietly, showing its output only when it fails.
ossl() {
    if ! openssl "$@" >"$work/openssl.log" 2>&1; then
        echo "make_ca: openssl $1 failed:" >&2
        cat "$work/openssl.log" >&2
        exit 1
    fi
}

ossl req -x509 -newkey rsa:2048 -nodes -days 1 \
    -subj "/CN=hostkeeper throw-away test CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$out/ca.key" -out "$out/ca.pem"

ossl req -new -newkey rsa:2048 -nodes \
    -subj "/CN=${names[0]}" \
    -keyout "$out/server.key" -out "$work/server.csr"

cat >"$work/server.ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$san
EXT
ossl x509 -req -in "$work/server.csr" -days 1 -sha256 \
    -CA "$out/ca.pem" -CAkey "$out/ca.key" -CAcreateserial -CAserial "$work/ca.srl" \
    -extfile "$work/server.ext" -out "$out/server.pem"

chmod 600 "$out/ca.key" "$out/server.key"
# Catch a broken chain here rather than as an obscure TLS error later.
ossl verify -CAfile "$out/ca.pem" "$out/server.pem"
