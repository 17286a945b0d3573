#!/usr/bin/env bash
# systemd_verify.sh SOURCE_DIR BIN_DIR
#
# systemd-analyze verify (user mode) on the user units, with ExecStart
# pointing at BIN_DIR's hostkeeperd, and (system mode) on the registry port's
# system units, with ExecStart pointing at BIN_DIR's hostkeeper-portd: any
# complaint fails the test. Then the settings the units must keep. Exit 77
# (skipped) without systemd-analyze.
set -euo pipefail
# shellcheck source=../support/script_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/script_lib.sh"
[[ $# -eq 2 ]] || die "usage: $0 SOURCE_DIR BIN_DIR"
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed (package systemd)"
src=$(cd "$1" && pwd)
bin_dir "$2" hostkeeperd hostkeeper-portd

work=$(mktemp -d /tmp/hk-units.XXXXXX)
on_exit rm -rf "$work"
mkdir -m 700 "$work/run" "$work/units"
sed "s|@CMAKE_INSTALL_FULL_BINDIR@|$bin|" "$src/packaging/systemd/hostkeeperd.service.in" >"$work/units/hostkeeperd.service"
cp "$src/packaging/systemd/hostkeeperd.socket" "$work/units/"

cd "$work/units"
if ! out=$(XDG_RUNTIME_DIR=$work/run systemd-analyze --user verify --man=no hostkeeperd.socket hostkeeperd.service 2>&1); then
    echo "$out"
    fail "systemd-analyze verify failed"
fi
[[ -z $out ]] || { echo "$out"; fail "systemd-analyze verify complained"; }
pass "systemd-analyze --user verify: no complaints"

service=$work/units/hostkeeperd.service
expect() { grep -qx "$1" "$service" || fail "$(basename "$service") lacks '$1'"; }
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
pass "the units keep socket activation, readiness and hardening"

# The registry port's system units.
mkdir -m 700 "$work/system"
sed "s|@CMAKE_INSTALL_FULL_LIBEXECDIR@/hostkeeper/hostkeeper-portd|$bin/hostkeeper-portd|" \
    "$src/packaging/systemd/hostkeeper-port.service.in" >"$work/system/hostkeeper-port.service"
cp "$src/packaging/systemd/hostkeeper-port.socket" "$src/packaging/systemd/hostkeeper-port-ipv6.socket" "$work/system/"
grep -q "@[A-Z_]*@" "$work/system/hostkeeper-port.service" && fail "hostkeeper-port.service.in has an unreplaced @VARIABLE@"
cd "$work/system"
# System mode needs no running manager: verify loads the units from the
# current directory and checks them (DynamicUser=, the sandbox, Sockets=)
# statically. Nothing it says here depends on the machine, so nothing is
# filtered.
if ! out=$(systemd-analyze verify --man=no hostkeeper-port.socket hostkeeper-port-ipv6.socket \
    hostkeeper-port.service 2>&1); then
    echo "$out"
    fail "systemd-analyze verify (system units) failed"
fi
[[ -z $out ]] || { echo "$out"; fail "systemd-analyze verify (system units) complained"; }
pass "systemd-analyze verify (system units): no complaints"

service=$work/system/hostkeeper-port.service
expect "Type=notify"
expect "DynamicUser=yes"
expect "NoNewPrivileges=yes"
expect "CapabilityBoundingSet="
expect "AmbientCapabilities="
expect "ProtectSystem=strict"
expect "ProtectHome=yes"
expect "ProtectProc=invisible"
expect "PrivateDevices=yes"
expect "RestrictAddressFamilies=AF_UNIX AF_NETLINK"
expect "LimitCORE=0"
expect "Sockets=hostkeeper-port.socket hostkeeper-port-ipv6.socket"
# sock_diag inside a user namespace names every other user nobody, and
# inside a network namespace of its own it sees none of the host's sockets.
grep -q '^PrivateUsers=' "$service" && fail "hostkeeper-port.service sets PrivateUsers="
grep -q '^PrivateNetwork=' "$service" && fail "hostkeeper-port.service sets PrivateNetwork="
# It would drop the inherited listeners' loopback traffic.
grep -q '^IPAddressDeny=' "$service" && fail "hostkeeper-port.service sets IPAddressDeny="
grep -q '^User=' "$service" && fail "hostkeeper-port.service names a User= (it runs as a dynamic one)"

port=$(sed -n 's/.*kRegistryPort = \([0-9]*\);.*/\1/p' "$src/proto/port_link.hpp")
[[ -n $port ]] || fail "no kRegistryPort in proto/port_link.hpp"
expect_socket() { grep -qxF "$2" "$1" || fail "$1 lacks '$2'"; }
expect_socket hostkeeper-port.socket "ListenStream=127.0.0.1:$port"
expect_socket hostkeeper-port.socket "ListenStream=/run/hostkeeper/port.sock"
expect_socket hostkeeper-port.socket "SocketMode=0666"
expect_socket hostkeeper-port.socket "DirectoryMode=0755"
expect_socket hostkeeper-port.socket "WantedBy=sockets.target"
expect_socket hostkeeper-port-ipv6.socket "ListenStream=[::1]:$port"
expect_socket hostkeeper-port-ipv6.socket "BindIPv6Only=ipv6-only"
expect_socket hostkeeper-port-ipv6.socket "Service=hostkeeper-port.service"
for unit in hostkeeper-port.socket hostkeeper-port-ipv6.socket; do
    [[ $(grep -c '^ListenStream=.*:' "$unit") -eq 1 ]] || fail "$unit listens on more than one TCP address"
done
grep -q '"/run/hostkeeper/port.sock"' "$src/proto/port_link.hpp" || fail "proto::kPortSocket is not /run/hostkeeper/port.sock"
pass "the registry port's units keep port $port (proto::kRegistryPort), the link socket and the sandbox"
