#!/usr/bin/env bash
# container-env.sh COMMAND [ARGS...]
#
# Runs COMMAND in a world like a CI job's container: a private network
# namespace (only its own loopback) in which any user may bind any port
# (net.ipv4.ip_unprivileged_port_start=0, which is per namespace, as Docker
# sets it), so no port below 1024 guarantees anything; no registry port
# service. Exits with COMMAND's status; 77 (skipped) without root or
# unshare.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: container-env.sh needs root (a network namespace, other users)"; exit 77; }
for tool in unshare ip sysctl; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
if [[ ${HK_CONTAINER_NETNS:-} != 1 ]]; then
    if ! unshare --net true 2>/dev/null; then
        echo "SKIP: cannot make a network namespace (unshare --net)"
        exit 77
    fi
    exec env HK_CONTAINER_NETNS=1 unshare --net "$0" "$@"
fi
ip link set lo up
sysctl -qw net.ipv4.ip_unprivileged_port_start=0
# No registry port service here, whatever the caller's environment named.
export HOSTKEEPER_PORT_SOCKET=/nonexistent/hostkeeper-port.sock
exec "$@"
