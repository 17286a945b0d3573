#!/usr/bin/env bash
# systemd_verify.sh SOURCE_DIR BIN_DIR
#
# systemd-analyze verify (user mode) on the user units, with ExecStart
# pointing at BIN_DIR's hostkeeperd: any complaint fails the test. Then the
# settings the units must keep. Exit 77 (skipped) without systemd-analyze.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 SOURCE_DIR BIN_DIR" >&2; exit 2; }
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze is not installed (package systemd)"; exit 77; }
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
[[ -x $bin/hostkeeperd ]] || { echo "$0: $bin/hostkeeperd is missing" >&2; exit 2; }

work=$(mktemp -d /tmp/hk-units.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -m 700 "$work/run" "$work/units"
sed "s|@CMAKE_INSTALL_FULL_BINDIR@|$bin|" "$src/packaging/systemd/hostkeeperd.service.in" >"$work/units/hostkeeperd.service"
cp "$src/packaging/systemd/hostkeeperd.socket" "$work/units/"

fail() { echo "FAIL: $*"; exit 1; }
cd "$work/units"
if ! out=$(XDG_RUNTIME_DIR=$work/run systemd-analyze --user verify --man=no hostkeeperd.socket hostkeeperd.service 2>&1); then
    echo "$out"
    fail "systemd-analyze verify failed"
fi
[[ -z $out ]] || { echo "$out"; fail "systemd-analyze verify complained"; }
echo "PASS: systemd-analyze --user verify: no complaints"

service=$work/units/hostkeeperd.service
expect() { grep -qx "$1" "$service" || fail "hostkeeperd.service lacks '$1'"; }
expect "Type=notify"
expect "NoNewPrivileges=yes"
# A user manager sets up the namespaced settings below only with PrivateUsers=
# (without it the start fails with 218/CAPABILITIES or 226/NAMESPACE;
# user_manager.sh starts the unit under a real systemd --user).
expect "PrivateUsers=yes"
expect "PrivateDevices=yes"
expect "CapabilityBoundingSet="
grep -q '^Restart=' "$service" && fail "hostkeeperd.service restarts by itself: a failing start would hold clients"
expect "ProtectSystem=strict"
expect "ProtectHome=read-only"
expect "PrivateTmp=yes"
expect "ReadWritePaths=-%t/hostkeeper"
expect "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6"
expect "LimitCORE=0"
grep -q AF_NETLINK "$service" && fail "hostkeeperd.service allows AF_NETLINK"
grep -qx "ListenStream=%t/hostkeeper/socket" hostkeeperd.socket || fail "the socket is not at %t/hostkeeper/socket"
grep -qx "DirectoryMode=0700" hostkeeperd.socket || fail "the socket directory is not 0700"
echo "PASS: the units keep socket activation, readiness and hardening"
