# tests/e2e/podman_lib.sh — sourced by the end-to-end scripts that run
# Debian's podman (podman_login.sh, podman_setup.sh) with BIN_DIR as $1:
# sources docker_lib.sh (the world and its keyring backend), starts a real
# registry on loopback (Debian's docker-registry, htpasswd auth, TLS from the
# suite's throw-away CA) and keeps everything podman keeps (storage, run
# state, configuration) under the test's throw-away directory. Set e2e_name
# before sourcing. Exits 77 (skipped) when podman, docker-registry, htpasswd
# or curl is missing.
# Sets: registry (localhost:PORT), user, password, p (podman's directory,
# $p/certs its CA), podman() (podman with its state in $p), podman_search
# AUTHFILE... (podman search of the registry, trusting only the CA),
# expect_authorized_search WHAT (the registry logged the last search as
# authorized), expect_nothing_written_outside (checks podman wrote nothing in
# the system's containers directories).
# shellcheck shell=bash

for tool in podman docker-registry htpasswd curl; do
    command -v "$tool" >/dev/null ||
        { echo "SKIP: $tool is not installed (packaging/deps.sh test: podman, docker-registry, apache2-utils, curl)"; exit 77; }
done

# shellcheck source-path=SCRIPTDIR
# shellcheck source=docker_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/docker_lib.sh"

# --- The registry: htpasswd auth, TLS from a throw-away CA, loopback only -----------
"$support/make_ca.sh" "$root/tls" localhost 127.0.0.1
user=hk-user
password=hk-pw-$(openssl rand -hex 12)
htpasswd -Bbn "$user" "$password" >"$root/htpasswd"
port=$(free_port)
registry=localhost:$port
# shellcheck source-path=SCRIPTDIR source=../support/docker_registry.sh
source "$support/docker_registry.sh"
docker_registry_config "$root/registry.yml" "$root/registry-data" "127.0.0.1:$port" \
    "$root/tls/server.pem" "$root/tls/server.key" "$root/htpasswd"
: >"$root/registry.log"
docker_registry_start "$root/registry.yml" "$root/registry.log" "https://$registry" "$root/tls/ca.pem"
on_exit "kill $docker_registry_pid 2>/dev/null; wait $docker_registry_pid 2>/dev/null"
pass "docker-registry at https://$registry/ wants credentials (401)"

# --- Podman, kept inside $root ---------------------------------------------------
touch "$root/start-marker"
p=$root/podman
mkdir -p "$p/root" "$p/runroot" "$p/tmp" "$p/certs" "$p/networks"
cp "$root/tls/ca.pem" "$p/certs/ca.crt"
# The CNI backend with its configuration here: netavark, as root, would keep
# its state in /run/containers/networks whatever podman is told.
printf '[engine]\nevents_logger = "none"\ncgroup_manager = "cgroupfs"\n[network]\nnetwork_backend = "cni"\nnetwork_config_dir = "%s"\n' \
    "$p/networks" >"$p/containers.conf"
printf '[storage]\ndriver = "vfs"\nrunroot = "%s"\ngraphroot = "%s"\n' "$p/runroot" "$p/root" >"$p/storage.conf"
printf '{"default":[{"type":"insecureAcceptAnything"}]}\n' >"$p/policy.json"
export CONTAINERS_CONF=$p/containers.conf CONTAINERS_STORAGE_CONF=$p/storage.conf
# The clients find docker-credential-hostkeeper on PATH.
export PATH=$bin:$PATH
podman_bin=$(type -P podman)
podman() {
    timeout 180 "$podman_bin" --root "$p/root" --runroot "$p/runroot" --tmpdir "$p/tmp" \
        --storage-driver vfs --events-backend none --cgroup-manager cgroupfs --network-config-dir "$p/networks" "$@"
}

# podman_search [OPTIONS...]: podman search of the registry's catalog (GET
# /v2/_catalog, which wants credentials). search has no --cert-dir: Go's TLS
# trusts SSL_CERT_FILE's CA, and only it. (Not push or pull: as root,
# containers/image keeps a blob-info cache in /var/lib/containers whatever
# podman is told.)
mkdir -p "$p/no-system-certs"
podman_search() {
    registry_lines=$(wc -l <"$root/registry.log")
    SSL_CERT_FILE=$root/tls/ca.pem SSL_CERT_DIR=$p/no-system-certs podman search "$@" "$registry/"
}

# expect_authorized_search WHAT: the registry logged the last podman_search's
# /v2/_catalog request as authorized.
expect_authorized_search() {
    tail -n +"$((registry_lines + 1))" "$root/registry.log" | grep 'msg="authorized request"' |
        grep -q 'http.request.uri=/v2/_catalog' ||
        { show "$root/registry.log"; fail "$1: the registry did not log an authorized /v2/_catalog request"; }
    pass "$1"
}

# Nothing of podman's outside $root (the system's own files there are older).
expect_nothing_written_outside() {
    local written
    written=$(find /etc/containers /etc/cni /run/containers /run/libpod /var/lib/containers /var/lib/cni \
        -newer "$root/start-marker" 2>/dev/null || true)
    [[ -z $written ]] || fail "podman wrote outside the test's directory: $written"
    pass "podman wrote nothing in /etc/containers, /etc/cni, /run/containers or /var/lib/containers"
}
