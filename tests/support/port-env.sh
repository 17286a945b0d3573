#!/usr/bin/env bash
# port-env.sh [--port N] COMMAND [ARGS...]
#
# Runs COMMAND next to a real hostkeeper-portd started as PID 1 would start it
# (support/port_launcher.py: the privileged port N, default 585, on 127.0.0.1
# and [::1], and a Unix socket, handed over; portd runs as nobody), in a
# private network namespace so that the port is the test's alone. COMMAND
# sees:
#   HOSTKEEPER_PORT_SOCKET  the service's Unix socket (in a root-owned 0755
#                           directory, as proto::port_socket_problem wants)
#   HK_REGISTRY_PORT        the port
#   HK_PORTD_PID            portd's pid (to stop and start it)
#   HK_PORTD_LOG            portd's log
#   HK_PORTD_RESTART        a command that starts portd again after a stop
# Exits with COMMAND's status; 77 (skipped) without root or unshare; 2 when
# portd does not come up. HOSTKEEPER_PORTD (default: the hostkeeper-portd in
# a BIN_DIR among COMMAND's arguments, or next to a program among them) picks
# the binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

port=585
if [[ ${1:-} == --port ]]; then
    port=$2
    shift 2
fi
[[ $# -ge 1 ]] || { echo "usage: $0 [--port N] COMMAND [ARGS...]" >&2; exit 2; }

[[ $(id -u) -eq 0 ]] || { echo "SKIP: port-env.sh needs root (a privileged port, other users)"; exit 77; }
for tool in unshare ip python3; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

# A network namespace of its own: the port, and every connection, is ours.
if [[ ${HK_PORT_NETNS:-} != 1 ]]; then
    if ! unshare --net true 2>/dev/null; then
        echo "SKIP: cannot make a network namespace (unshare --net)"
        exit 77
    fi
    exec env HK_PORT_NETNS=1 unshare --net "$0" --port "$port" "$@"
fi
ip link set lo up

# Which portd: $HOSTKEEPER_PORTD, else the one in a BIN_DIR among COMMAND's
# arguments, or next to a program among them (the build's bin/ holds both).
portd=${HOSTKEEPER_PORTD:-}
if [[ -z $portd ]]; then
    for arg in "$@"; do
        if [[ -d $arg && -x $arg/hostkeeper-portd ]]; then
            portd=$arg/hostkeeper-portd
            break
        fi
        if [[ -f $arg && -x $(dirname -- "$arg")/hostkeeper-portd ]]; then
            portd=$(dirname -- "$arg")/hostkeeper-portd
            break
        fi
    done
fi
[[ -n $portd && -x $portd ]] || { echo "port-env.sh: no hostkeeper-portd (set HOSTKEEPER_PORTD)" >&2; exit 2; }
portd=$(cd "$(dirname "$portd")" && pwd)/$(basename "$portd")

# Under /run, not /tmp: a unit with PrivateTmp= (hostkeeperd.service) sees it.
dir=$(mktemp -d /run/hk-port.XXXXXX)
chmod 0755 "$dir"
log=$dir/portd.log
portd_pid=
stop_portd() {
    if [[ -n $portd_pid ]] && kill -0 "$portd_pid" 2>/dev/null; then
        kill -TERM "$portd_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$portd_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$portd_pid" 2>/dev/null || true
    fi
    wait "$portd_pid" 2>/dev/null || true
}
cleanup() {
    stop_portd
    rm -rf "$dir"
}
trap cleanup EXIT

start_portd() {
    /usr/bin/python3 "$here/port_launcher.py" --socket "$dir/port.sock" --port "$port" "$portd" >>"$log" 2>&1 &
    portd_pid=$!
    # Up when the socket exists and the port answers a probe (bounded: 10 s).
    for _ in $(seq 100); do
        if [[ -S $dir/port.sock ]] && python3 - "$dir/port.sock" "$port" <<'EOF' 2>/dev/null; then
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(1)
s.connect(sys.argv[1])
s.sendall(b'hostkeeper-port 1 probe\n')
assert s.recv(64) == b'ok %s\n' % sys.argv[2].encode()
EOF
            return 0
        fi
        kill -0 "$portd_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "port-env.sh: hostkeeper-portd did not come up; its log:" >&2
    cat "$log" >&2
    return 1
}
start_portd || exit 2

# COMMAND may stop portd and start it again: the restart script keeps the
# same socket path and log.
cat >"$dir/restart.sh" <<EOF
#!/usr/bin/env bash
/usr/bin/python3 "$here/port_launcher.py" --socket "$dir/port.sock" --port "$port" "$portd" >>"$log" 2>&1 &
echo \$!
EOF
chmod 0755 "$dir/restart.sh"

export HOSTKEEPER_PORT_SOCKET=$dir/port.sock HK_REGISTRY_PORT=$port HK_PORTD_PID=$portd_pid
export HK_PORTD_LOG=$log HK_PORTD_RESTART=$dir/restart.sh
status=0
"$@" || status=$?
exit "$status"
