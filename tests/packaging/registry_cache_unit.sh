#!/usr/bin/env bash
# registry_cache_unit.sh SOURCE_DIR BIN_DIR
#
# The registry cache under a real systemd user manager (user_world.sh's
# throw-away user, `systemd --user`, D-Bus and keyring), with the units as the
# package installs them, sandbox included, behind a real hostkeeper-portd on
# the registry port (support/port-env.sh runs this script in a private network
# namespace). Asserts:
#   - `hostkeeper setup --registry-cache` removes an older setup's socket
#     drop-in (a TCP port of the user's own), and hostkeeperd.socket holds
#     no TCP port at all;
#   - with no daemon running, the registry port answers 503 (portd's);
#   - the helper's first request starts hostkeeperd.service, which registers
#     with hostkeeper-portd from inside its sandbox (PrivateUsers=: root
#     shows as the overflow uid there) and writes its tfrc file, its state
#     file and its archive directory (ProtectHome=read-only);
#   - the user's requests on the registry port reach the daemon (404
#     unrouted, 410 an older setup's capability URL, 403 Host, 403 a
#     browser's Origin); another user's (root's) get
#     portd's 503, never the daemon's answer;
#   - cache and state directories the user deleted are there again, and
#     writable, at the service's next start;
#   - `setup --registry-cache --undo` removes the files.
# Root only (exit 77, skipped, otherwise); ctest runs it RUN_SERIAL.
# Exit status: 0 pass, 1 fail, 2 set-up error, 77 skipped.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 SOURCE_DIR BIN_DIR" >&2; exit 2; }
[[ -n ${HOSTKEEPER_PORT_SOCKET:-} && -n ${HK_REGISTRY_PORT:-} ]] ||
    { echo "$0: run me through tests/support/port-env.sh" >&2; exit 2; }
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
for program in hostkeeperd hostkeeper terraform-credentials-hostkeeper; do
    [[ -x $bin/$program ]] || { echo "$0: $bin/$program is missing" >&2; exit 2; }
done
for tool in curl python3 ss; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is missing (packaging/deps.sh test installs it)" >&2; exit 2; }
done
# The home under /home, where ProtectHome=read-only makes it read-only for the service.
user_world_home_parent=/home
# The test world's registry port service (support/port-env.sh) at
# /run/hostkeeper/port.sock in the user manager's mount namespace: inside the
# unit, where root is unmapped, hostkeeperd takes no other path.
user_world_port_socket=$HOSTKEEPER_PORT_SOCKET
# shellcheck source=user_world.sh
source "$(dirname "$0")/user_world.sh"

install_units "$src" "$bin"
# Sanitizer builds (tests/run.sh asan): LeakSanitizer cannot stop the daemon's
# threads inside the unit (its seccomp filter answers ptrace with EPERM), so
# its check at exit would be a fatal error; the daemon's leak checks run
# outside units (the integration tests). Ignored by normal builds.
mkdir -p "$home/.config/systemd/user/hostkeeperd.service.d"
printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' \
    >"$home/.config/systemd/user/hostkeeperd.service.d/sanitizer.conf"
# Where root is unmapped, a socket named by the environment is not taken: a
# path another user could have made (its owner shows as the overflow uid, as
# root's does) would let that user answer for the registry port.
printf '[Service]\nEnvironment=HOSTKEEPER_PORT_SOCKET=/dev/shm/hk-not-this/port.sock\n' \
    >"$home/.config/systemd/user/hostkeeperd.service.d/port-socket.conf"
chown -R "$user:" "$home/.config/systemd"

as_user systemctl --user daemon-reload
as_user systemctl --user enable --now hostkeeperd.socket >/dev/null 2>&1 ||
    fail "systemctl --user enable --now hostkeeperd.socket failed"

port=$HK_REGISTRY_PORT
listen=127.0.0.1:$port

# --- setup --registry-cache ----------------------------------------------------------
old_drop_in=$home/.config/systemd/user/hostkeeperd.socket.d/registry-cache.conf
mkdir -p "$(dirname "$old_drop_in")"
printf '[Socket]\nListenStream=127.0.0.1:47123\n' >"$old_drop_in"
chown -R "$user:" "$home/.config/systemd"
hostkeeper setup --registry-cache >"$world/setup.out" 2>&1 || { cat "$world/setup.out"; fail "setup --registry-cache failed"; }
config=$home/.config/hostkeeper/registry-cache.json
[[ -f $config && $(stat -c %a "$config") == 600 ]] || { cat "$world/setup.out"; fail "no 0600 $config"; }
grep -qF '"capability"' "$config" && fail "setup wrote a capability into $config: the URLs hold no secret"
[[ ! -e $old_drop_in ]] || fail "setup left the older setup's socket drop-in $old_drop_in"
listens=$(unit_show hostkeeperd.socket Listen)
[[ $listens != *127.0.0.1* ]] || fail "hostkeeperd.socket still listens on TCP: $listens"
pass "setup --registry-cache: the older socket drop-in is gone, hostkeeperd.socket holds no TCP port"

# No daemon: hostkeeper-portd answers for the user, with the reason.
as_user systemctl --user stop hostkeeperd.service
[[ $(unit_show hostkeeperd.service ActiveState) == inactive ]] || fail "hostkeeperd.service did not stop"
url="http://$listen/v1/unrouted.example.com/modules/acme/x/null/versions"
head=$(as_user curl -s -D - -o /dev/null --max-time 20 "$url" | head -1 | tr -d '\r')
[[ $head == "HTTP/1.1 503 hostkeeperd is not running for this user"* ]] ||
    fail "with hostkeeperd stopped the registry port answered '$head'"
pass "with hostkeeperd stopped, the registry port answers: $head"

# --- the helper's first request starts the daemon, which registers --------------------------
helper get unrouted.example.com >/dev/null || fail "the helper's get failed"
[[ $(unit_show hostkeeperd.service ActiveState) == active ]] || fail "the helper's request did not start hostkeeperd.service"
for _ in $(seq 1 50); do
    hostkeeper status --json >"$world/status.json" 2>/dev/null && [[ $(json_get registry_cache.held <"$world/status.json") == true ]] && break
    sleep 0.1
done
cache=$(json_get registry_cache <"$world/status.json")
[[ $(json_get held <<<"$cache") == true && $(json_get held_by <<<"$cache") == hostkeeper-portd ]] ||
    fail "hostkeeperd in its unit is not registered with hostkeeper-portd: $cache"
[[ $(json_get listen <<<"$cache") == "$listen" ]] || fail "status names another port: $cache"
code=$(as_user curl -s -o "$home/answer.json" -w '%{http_code}' --max-time 20 "$url") || fail "curl to $listen failed"
[[ $code == 404 ]] || { cat "$home/answer.json"; fail "an unrouted host's request got HTTP $code, not 404"; }
grep -q "is not routed" "$home/answer.json" || fail "the 404 does not say why: $(cat "$home/answer.json")"
code=$(as_user curl -s -o /dev/null -w '%{http_code}' --max-time 20 "http://$listen/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdE/v1/x/modules/a/b/c/versions")
[[ $code == 410 ]] || fail "an older setup's capability-prefixed URL got HTTP $code, not 410"
code=$(as_user curl -s -o /dev/null -w '%{http_code}' --max-time 20 -H "Origin: http://evil.example" "$url")
[[ $code == 403 ]] || fail "a request with an Origin header (a browser's) got HTTP $code"
code=$(as_user curl -s -o /dev/null -w '%{http_code}' --max-time 20 -H "Host: evil.example:$port" "$url")
[[ $code == 403 ]] || fail "a foreign Host header got HTTP $code"
# Another user (root here) never reaches this user's daemon: portd answers.
head=$(curl -s -D - -o /dev/null --max-time 20 "$url" | head -1 | tr -d '\r' || true)
[[ $head == "HTTP/1.1 503 "* ]] || fail "another user's request got '$head', not portd's 503"
pass "hostkeeperd.service registered from inside its sandbox and answers its user (404 unrouted, 410 old capability URL, 403 Host, 403 Origin); another user: portd's 503"

[[ $(json_get files_error <<<"$cache") == null ]] || fail "the daemon could not write its files in its sandbox: $cache"
tfrc=$home/.terraform.d/hostkeeper.tfrc
[[ -f $tfrc && $(stat -c %a "$tfrc") == 600 ]] || fail "no 0600 $tfrc written by the daemon"
head -1 "$tfrc" | grep -q '^# Written by hostkeeperd' || fail "$tfrc is not hostkeeperd's"
[[ -f $home/.local/state/hostkeeper/registry-cache-hosts.json ]] || fail "no state file written by the daemon"
[[ -d $home/.cache/hostkeeper/archives/tmp ]] || fail "the daemon could not make its archive directory"
pid=$(unit_show hostkeeperd.service MainPID)
# ProtectHome=read-only holds (a write elsewhere in the home fails in the
# unit's mount namespace); only setup's ReadWritePaths= are writable.
if touch "/proc/$pid/root$home/probe" 2>/dev/null; then
    rm -f "$home/probe"
    fail "the home is writable inside the unit: ProtectHome=read-only is not in effect"
fi
for dir in "$home/.terraform.d" "$home/.cache/hostkeeper" "$home/.local/state/hostkeeper"; do
    [[ $(mount_options "$dir") == rw* ]] || fail "ReadWritePaths=: $dir is not writable in the unit"
done
pass "inside its sandbox (home read-only) the daemon wrote its tfrc, state and archive directory"

# The user deletes the cache and state directories: the next start has
# them again, writable in the sandbox (setup's ExecStartPre=+ makes them).
# (setup's own records in the state directory are put back afterwards, for
# the undo below.)
as_user systemctl --user stop hostkeeperd.service 2>/dev/null
mv "$home/.local/state/hostkeeper" "$world/state-kept"
rm -rf "$home/.cache/hostkeeper"
helper get unrouted.example.com >/dev/null || fail "the helper's get after the deletion failed"
for _ in $(seq 1 50); do
    hostkeeper status --json >"$world/status-again.json" 2>/dev/null &&
        [[ $(json_get registry_cache.held <"$world/status-again.json") == true ]] && break
    sleep 0.1
done
again=$(json_get registry_cache <"$world/status-again.json")
[[ -d $home/.cache/hostkeeper/archives/tmp ]] || fail "the archive directory was not made again: $again"
[[ $(stat -c %a "$home/.cache/hostkeeper") == 700 ]] || fail "the remade cache directory is not 0700"
[[ $(json_get archives.store_problem <<<"$again") == null ]] ||
    fail "the archive cache is off after the deletion: $(json_get archives.store_problem <<<"$again")"
pid=$(unit_show hostkeeperd.service MainPID)
for dir in "$home/.cache/hostkeeper" "$home/.local/state/hostkeeper"; do
    [[ $(mount_options "$dir") == rw* ]] || fail "after the deletion $dir is not writable in the unit"
done
cp -a "$world/state-kept/." "$home/.local/state/hostkeeper/"
pass "deleted cache and state directories are made again at the next start, writable in the sandbox"

# The credentials socket still works through the same unit; doctor agrees.
token=rc-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '{"token":"%s"}' "$token" | helper store rc.example.com || fail "store through the socket failed"
[[ $(helper get rc.example.com) == "{\"token\":\"$token\"}" ]] || fail "get failed"
doctor_out=$(hostkeeper doctor 2>&1) || true
grep -q "^ok    registry cache: hostkeeperd is registered with hostkeeper-portd for $listen" <<<"$doctor_out" ||
    { echo "$doctor_out"; fail "doctor does not report the registration"; }
grep -q "^ok    registry cache: mode: host blocks through the registry port $listen" <<<"$doctor_out" ||
    { echo "$doctor_out"; fail "doctor does not report the mode"; }
grep -q "^ok    registry cache: $tfrc is hostkeeperd's" <<<"$doctor_out" ||
    { echo "$doctor_out"; fail "doctor does not report the tfrc file"; }
pass "the helper's store and get are answered by the same unit; doctor agrees"

# --- undo ------------------------------------------------------------------------------
hostkeeper setup --registry-cache --undo >"$world/undo.out" 2>&1 || { cat "$world/undo.out"; fail "setup --registry-cache --undo failed"; }
[[ ! -e $config ]] || fail "undo left $config"
[[ ! -e $tfrc ]] || fail "undo left $tfrc"
[[ ! -e ${old_drop_in/socket.d/service.d} ]] || fail "undo left the service drop-in"
[[ $(helper get rc.example.com) == "{\"token\":\"$token\"}" ]] || fail "get after --undo failed"
[[ $(unit_show hostkeeperd.socket ActiveState) == active ]] || fail "hostkeeperd.socket is not active after undo"
pass "setup --registry-cache --undo: files removed, the socket unit still serves"
