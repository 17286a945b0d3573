#!/usr/bin/env bash
# port_socket_userns.sh UNIT_TESTS
#
# Runs the unit tests tagged [userns] (tests/unit/proto/test_port_socket_userns.cpp)
# as an unprivileged uid inside a user namespace that maps only that uid, as
# hostkeeperd.service's PrivateUsers= does, beside two port services that
# answer "ok 585" to anyone:
#   - an impostor's, made by another uid in a directory of its own under
#     /dev/shm (inside the namespace its owner shows as the overflow uid, as
#     root's does); it records every request line it is sent;
#   - root's, at /run/hostkeeper/port.sock on a tmpfs of this test's own
#     mount namespace.
# Asserts the tests pass and the impostor was sent nothing.
# Root only: exit 77 (skipped) otherwise. Exit status: 0 pass, 1 fail.
set -euo pipefail

[[ $# -eq 1 && -x $1 ]] || { echo "usage: $0 UNIT_TESTS" >&2; exit 2; }
unit_tests=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (other uids, a mount namespace)"; exit 77; }
for tool in unshare setpriv /usr/bin/python3; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

victim=65531 impostor=65532

if [[ ${HK_USERNS_MOUNTS:-} != 1 ]]; then
    made=
    [[ -d /run/hostkeeper ]] || { mkdir -m 755 /run/hostkeeper && made=1; }
    rc=0
    HK_USERNS_MOUNTS=1 unshare --mount --propagation private "$0" "$@" || rc=$?
    [[ -z $made ]] || rmdir /run/hostkeeper 2>/dev/null || true
    exit "$rc"
fi

mount -t tmpfs -o mode=0755,size=64k tmpfs /run/hostkeeper
work=$(mktemp -d /dev/shm/hk-impostor.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
chown "$impostor:$impostor" "$work"
chmod 0755 "$work"

# A port service that answers every connection "ok 585", writing each request
# line it gets to LOG; READY is made once it listens.
serve='
import os, socket, sys
path, log, ready = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o666)
s.listen(16)
open(ready, "w").close()
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        line = c.recv(256)
        with open(log, "ab") as f:
            f.write(line)
        c.sendall(b"ok 585\n")
    except OSError:
        pass
    c.close()
'
wait_for() { for _ in $(seq 100); do [[ -e $1 ]] && return 0; sleep 0.05; done; echo "FAIL: $1 never came" >&2; exit 1; }

setpriv --reuid="$impostor" --regid="$impostor" --clear-groups \
    /usr/bin/python3 -c "$serve" "$work/port.sock" "$work/requests.log" "$work/ready" &
pids+=($!)
/usr/bin/python3 -c "$serve" /run/hostkeeper/port.sock "$work/root-requests.log" "$work/root-ready" &
pids+=($!)
wait_for "$work/ready"
wait_for "$work/root-ready"

rc=0
setpriv --reuid="$victim" --regid="$victim" --clear-groups \
    unshare --user --map-current-user \
    env HK_IMPOSTOR_SOCKET="$work/port.sock" "$unit_tests" "[userns]" || rc=$?
if [[ -s $work/requests.log ]]; then
    echo "FAIL: the impostor's port service was sent: $(tr -c '[:print:]' ' ' <"$work/requests.log")"
    rc=1
fi
if ! grep -q 'hostkeeper-port 1 probe' "$work/root-requests.log" 2>/dev/null; then
    echo "FAIL: root's port service on /run/hostkeeper/port.sock was never asked"
    rc=1
fi
((rc == 0)) && echo "PASS: inside the user namespace only /run/hostkeeper/port.sock was taken for root's"
exit "$rc"
