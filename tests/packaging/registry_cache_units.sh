#!/usr/bin/env bash
# registry_cache_units.sh SOURCE_DIR BIN_DIR
#
# hostkeeper setup --registry-cache under a real systemd user manager (the
# world of user_world.sh): setup writes the hostkeeperd.socket drop-in (and the
# service's, which lets its sandbox write the tfrc file under /home), and
# after its restart systemd holds 127.0.0.1:PORT beside the Unix socket and
# passes both to hostkeeperd.service, which says it holds the port (from
# systemd), serves the helper as before and writes the tfrc file despite its
# sandbox; doctor agrees; setup --registry-cache --undo removes the drop-in
# and the files, and systemd no longer listens on the port.
# Root only (exit 77, skipped, otherwise); ctest runs it RUN_SERIAL.
# Exit status: 0 pass, 1 fail, 2 set-up error, 77 skipped.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 SOURCE_DIR BIN_DIR" >&2; exit 2; }
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
for program in hostkeeperd hostkeeper terraform-credentials-hostkeeper; do
    [[ -x $bin/$program ]] || { echo "$0: $bin/$program is missing" >&2; exit 2; }
done
# shellcheck source=user_world.sh
source "$(dirname "$0")/user_world.sh"

mkdir "$world/bin"
cp "$bin/hostkeeperd" "$bin/hostkeeper" "$bin/terraform-credentials-hostkeeper" "$world/bin/"
chmod 755 "$world/bin" "$world/bin"/*
sed "s|@CMAKE_INSTALL_FULL_BINDIR@|$world/bin|" "$src/packaging/systemd/hostkeeperd.service.in" \
    >"$home/.config/systemd/user/hostkeeperd.service"
cp "$src/packaging/systemd/hostkeeperd.socket" "$home/.config/systemd/user/"
chown "$user:" "$home/.config/systemd/user/hostkeeperd.service" "$home/.config/systemd/user/hostkeeperd.socket"

helper() { as_user "$world/bin/terraform-credentials-hostkeeper" "$@"; }
unit_show() { as_user systemctl --user show -p "$2" --value "$1"; }
as_user systemctl --user daemon-reload

token=rc-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
drop_in=$home/.config/systemd/user/hostkeeperd.socket.d/registry-cache.conf
config=$home/.config/hostkeeper/registry-cache.json
# The world's home is under /run, which the unit's sandbox leaves writable; a
# real home is under /home, which ProtectHome=read-only makes read-only. So
# Terraform's directory is put under /home (setup runs with HOME there, and
# writes its files where the daemon, whose HOME is the world's, reads them).
tf_home=/home/$user
mkdir -m 700 "$tf_home" && chown "$user:" "$tf_home"
on_exit "rm -rf '$tf_home'"
tfrc=$tf_home/.terraform.d/hostkeeper.tfrc
setup_as() { as_user env HOME="$tf_home" XDG_CONFIG_HOME="$home/.config" XDG_CACHE_HOME="$home/.cache" \
    XDG_STATE_HOME="$home/.local/state" "$world/bin/hostkeeper" "$@"; }

setup_out=$(setup_as setup --terraform --registry-cache 2>&1) || { echo "$setup_out"; fail "setup --registry-cache failed"; }
[[ -f $config ]] || { echo "$setup_out"; fail "no $config"; }
listen=$(sed -n 's/.*"listen": *"\(127\.0\.0\.1:[0-9]*\)".*/\1/p' "$config")
[[ -n $listen ]] || fail "no listen address in $config"
grep -qx "ListenStream=$listen" "$drop_in" || fail "the drop-in does not listen on $listen: $(cat "$drop_in" 2>&1)"
[[ $(unit_show hostkeeperd.socket Listen) == *"$listen (Stream)"* ]] ||
    fail "hostkeeperd.socket does not listen on $listen: $(unit_show hostkeeperd.socket Listen)"
grep -q "registry cache: hostkeeperd holds $listen (from systemd)" <<<"$setup_out" ||
    { echo "$setup_out"; fail "setup does not report the port held from systemd"; }
pass "setup --registry-cache: the drop-in, the socket listening on $listen, hostkeeperd holds it from systemd"

printf '{"token":"%s"}' "$token" | helper store rc.example.com || fail "store through the socket failed"
[[ $(helper get rc.example.com) == "{\"token\":\"$token\"}" ]] || fail "get with both sockets passed failed"
[[ $(unit_show hostkeeperd.service ActiveState) == active ]] || fail "hostkeeperd.service is not active"
# The daemon writes the tfrc file at start; its sandbox (ProtectHome=read-only)
# must let it: setup's hostkeeperd.service drop-in (ReadWritePaths=).
for _ in $(seq 1 100); do [[ -f $tfrc ]] && break; sleep 0.05; done
[[ -f $tfrc ]] || fail "hostkeeperd.service did not write $tfrc (its sandbox?)"
head -1 "$tfrc" | grep -q '^# Written by hostkeeperd for the registry cache' || fail "$tfrc is not hostkeeperd's"
doctor_out=$(setup_as doctor 2>&1) || true
grep -q "^ok    registry cache: hostkeeperd holds $listen (from systemd)" <<<"$doctor_out" ||
    { echo "$doctor_out"; fail "doctor does not report the held port"; }
grep -q "^ok    registry cache: $tfrc is hostkeeperd's" <<<"$doctor_out" ||
    { echo "$doctor_out"; fail "doctor does not report the tfrc file"; }
pass "the Unix socket still serves the helper; hostkeeperd wrote $tfrc; doctor agrees"

undo_out=$(setup_as setup --registry-cache --undo 2>&1) || { echo "$undo_out"; fail "setup --registry-cache --undo failed"; }
[[ ! -e $drop_in && ! -e ${drop_in/socket.d/service.d} && ! -e $config && ! -e $tfrc ]] ||
    { echo "$undo_out"; fail "--undo left the drop-in, $config or $tfrc"; }
[[ $(unit_show hostkeeperd.socket Listen) != *"$listen"* ]] ||
    fail "hostkeeperd.socket still listens on $listen after --undo"
[[ $(unit_show hostkeeperd.socket ActiveState) == active ]] || fail "hostkeeperd.socket is not active after --undo"
[[ $(helper get rc.example.com) == "{\"token\":\"$token\"}" ]] || fail "get after --undo failed"
[[ ! -e $tfrc ]] || fail "a hostkeeperd after --undo wrote $tfrc again"
pass "setup --registry-cache --undo: drop-in, file and tfrc gone, the socket listens on its Unix path only"

echo "PASS: setup --registry-cache under a real systemd --user"
