#!/usr/bin/env bash
# user_manager.sh SOURCE_DIR BIN_DIR
#
# hostkeeperd's user units under a real systemd user manager: a throw-away
# user, its /run/user/UID, and `systemd --user` for it with its own D-Bus
# session bus (dbus-user-session) and a gnome-keyring-daemon unlocked with a
# throw-away password. The units are the source tree's, with ExecStart at
# BIN_DIR's hostkeeperd (copied where the user can run it), installed in the
# user's ~/.config/systemd/user. Asserts:
#   - hostkeeperd.socket starts; a helper `get` through it is answered within
#     a second by hostkeeperd.service (active, sandboxed as the unit says);
#   - store/get, stop, restart, idle exit and re-activation;
#   - token commands in transient units: outside the sandbox; a program in
#     another uid's world-writable directory refused, naming it; a command
#     that forks sleeps (which ignore SIGTERM) and never exits timed out with
#     nothing of it left when the get is answered;
#   - a failing service: the helper says why at once, doctor and setup report
#     it with a fix; after the fix both are content again;
#   - enabled but inactive: doctor warns with the fix, setup starts the socket;
#   - the debugging recipe: hostkeeperd beside the socket unit names the fix,
#     and stopping the units, running hostkeeperd by hand, starting the
#     socket again works.
#
# The world (user, manager, bus, keyring) is user_world.sh's; see there what
# it takes where PID 1 is not systemd. Root only (exit 77, skipped,
# otherwise); ctest runs it RUN_SERIAL.
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

# The units as the package installs them, starting BIN_DIR's binaries copied
# where the user can run them.
install_units "$src" "$bin"

# --- The units ------------------------------------------------------------------------------
now_ms() { echo $(($(date +%s%N) / 1000000)); }

as_user systemctl --user daemon-reload
as_user systemctl --user start hostkeeperd.socket || fail "systemctl --user start hostkeeperd.socket failed"
[[ $(unit_show hostkeeperd.socket ActiveState) == active ]] || fail "hostkeeperd.socket is not active"
[[ -S $runtime/hostkeeper/socket ]] || fail "no socket at $runtime/hostkeeper/socket"
[[ $(stat -c %a "$runtime/hostkeeper") == 700 ]] || fail "the socket directory is not 0700"

start=$(now_ms)
got=$(helper get activation.example.com) || fail "the helper's get through the socket failed"
elapsed=$(($(now_ms) - start))
[[ $got == "{}" ]] || fail "get of an unknown host gave '$got'"
[[ $(unit_show hostkeeperd.service ActiveState) == active ]] || fail "hostkeeperd.service is not active after a get"
((elapsed < 1000)) || fail "the first get (socket activation) took $elapsed ms"
pid=$(unit_show hostkeeperd.service MainPID)
[[ $(readlink "/proc/$pid/exe") == "$world/bin/hostkeeperd" ]] || fail "MainPID $pid is not $world/bin/hostkeeperd"
[[ $(tr '\0' ' ' <"/proc/$pid/cmdline") != *--on-demand* ]] || fail "the daemon that answered was started on demand"
pass "socket activation: hostkeeperd.service (pid $pid) active, the first get answered in $elapsed ms"

# The sandbox the unit asks for is really there (PrivateUsers= and what it allows).
status=/proc/$pid/status
grep -q '^NoNewPrivs:[[:space:]]*1$' "$status" || fail "NoNewPrivileges= is not in effect"
grep -q '^Seccomp:[[:space:]]*2$' "$status" || fail "no seccomp filter (SystemCallFilter=)"
grep -q '^CapBnd:[[:space:]]*0*$' "$status" || fail "the capability bounding set is not empty: $(grep CapBnd "$status")"
read -r inner outer count <"/proc/$pid/uid_map"
[[ $inner == "$uid" && $outer == "$uid" && $count == 1 && $(wc -l <"/proc/$pid/uid_map") == 1 ]] ||
    fail "PrivateUsers=: uid_map is '$(cat "/proc/$pid/uid_map")'"
[[ $(mount_options /) == ro* ]] || fail "ProtectSystem=strict: / is mounted '$(mount_options /)'"
[[ $(mount_options "$runtime/hostkeeper") == rw* ]] || fail "ReadWritePaths=: the socket directory is not writable"
[[ $(mount_options /tmp) == rw* ]] || fail "PrivateTmp=: no private /tmp"
mount_type() {
    awk -v p="$1" '$5 == p { for (i = 7; i <= NF; i++) if ($i == "-") { print $(i + 1); break } }' \
        "/proc/$pid/mountinfo" | tail -1
}
[[ $(mount_type /dev) == tmpfs && ! -e /proc/$pid/root/dev/vda ]] || fail "PrivateDevices=: no private /dev"
[[ $(mount_options /proc/sys) == ro* ]] || fail "ProtectKernelTunables=: /proc/sys is '$(mount_options /proc/sys)'"
pass "sandbox in effect: user namespace, no capabilities, seccomp, read-only /, private /tmp and /dev"

# Store and get a token through the socket-activated daemon and the keyring.
token=um-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '{"token":"%s"}' "$token" | helper store um.example.com || fail "store through the socket failed"
[[ $(helper get um.example.com) == "{\"token\":\"$token\"}" ]] || fail "get does not give the stored token back"
pass "store and get through hostkeeperd.service and the user's keyring"

# stop: the socket stays and starts a new daemon on the next connection.
as_user systemctl --user stop hostkeeperd.service || fail "systemctl --user stop hostkeeperd.service failed"
[[ $(unit_show hostkeeperd.service ActiveState) == inactive ]] || fail "hostkeeperd.service did not stop"
[[ $(unit_show hostkeeperd.socket ActiveState) == active ]] || fail "hostkeeperd.socket stopped with the service"
[[ $(helper get um.example.com) == "{\"token\":\"$token\"}" ]] || fail "get after stop failed"
new_pid=$(unit_show hostkeeperd.service MainPID)
[[ $new_pid != 0 && $new_pid != "$pid" ]] || fail "no new daemon after stop (MainPID $new_pid)"
pass "stop, then re-activation by the next get (pid $pid -> $new_pid)"

pid=$new_pid
as_user systemctl --user restart hostkeeperd.service || fail "systemctl --user restart failed"
new_pid=$(unit_show hostkeeperd.service MainPID)
[[ $(unit_show hostkeeperd.service ActiveState) == active && $new_pid != "$pid" ]] || fail "restart did not replace the daemon"
[[ $(helper get um.example.com) == "{\"token\":\"$token\"}" ]] || fail "get after restart failed"
pass "restart (pid $pid -> $new_pid)"

# Token commands run outside the unit's sandbox, in transient units of the
# user manager: one writes under HOME (as the AWS CLI keeps its cache there),
# one maps memory writable and executable (as a JIT runtime does); the unit
# itself forbids both (ProtectHome=read-only, MemoryDenyWriteExecute=).
cat >"$home/.config/hostkeeper/config.toml" <<'TOML'
[hosts."cmd-home.example.com"]
token_command = ["/bin/sh", "-c", "mkdir -p \"$HOME/.hk-token-cache\" && echo run >>\"$HOME/.hk-token-cache/runs\" && echo tok-home"]
[hosts."cmd-wx.example.com"]
token_command = ["/usr/bin/python3", "-c", "import mmap; mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC); print('tok-wx')"]
TOML
chown "$user:" "$home/.config/hostkeeper/config.toml"
chmod 600 "$home/.config/hostkeeper/config.toml"
as_user systemctl --user restart hostkeeperd.service
got=$(helper get cmd-home.example.com 2>&1) || fail "get of a command's token that writes under HOME failed: $got"
[[ $got == '{"token":"tok-home"}' ]] || fail "the command writing under HOME gave '$got'"
[[ $(cat "$home/.hk-token-cache/runs") == run ]] || fail "the command did not write under HOME once"
got=$(helper get cmd-wx.example.com 2>&1) || fail "get of a command's token that needs W+X memory failed: $got"
[[ $got == '{"token":"tok-wx"}' ]] || fail "the command needing W+X memory gave '$got'"
pass "token commands outside the sandbox: one wrote under HOME, one mapped W+X memory"

# A program in a world-writable directory of another uid is refused, naming
# it: checked in the transient unit, where that uid shows as itself (in the
# daemon's namespace it, like root, shows as nobody).
shared=$world/shared
mkdir -m 777 "$shared" && chmod 777 "$shared" && chown 65533:65533 "$shared"
printf '#!/bin/sh\ntouch %s/attacker-ran\necho ATTACKER-TOKEN\n' "$world" >"$shared/token.sh"
chmod 755 "$shared/token.sh" && chown 65533:65533 "$shared/token.sh"
# A command that forks sleeps which ignore SIGTERM, and never exits.
marker=hk-um-marker-$$
cat >"$home/.config/hostkeeper/config.toml" <<TOML
[hosts."cmd-foreign.example.com"]
token_command = ["$shared/token.sh"]
[hosts."cmd-forks.example.com"]
token_command = ["/bin/sh", "-c", "trap '' TERM; sh -c 'sleep 7501; true' $marker & sh -c 'sleep 7502; true' $marker & echo forked >&2; wait"]
token_command_timeout = 1
TOML
chown "$user:" "$home/.config/hostkeeper/config.toml"
chmod 600 "$home/.config/hostkeeper/config.toml"
as_user systemctl --user restart hostkeeperd.service
got=$(helper get cmd-foreign.example.com 2>&1) && fail "a program of another uid's world-writable directory ran: $got"
[[ $got == *"not run: $shared/token.sh is not trusted: $shared is owned by uid 65533, not by you"* ]] ||
    fail "the refusal does not name the program and why: $got"
[[ ! -e $world/attacker-ran && $got != *ATTACKER-TOKEN* ]] || fail "the other uid's program ran"
pass "a program in another uid's world-writable directory refused through the user manager"
got=$(helper get cmd-forks.example.com 2>&1) && fail "the forking command gave a token: $got"
[[ $got == *"did not finish within 1s (token_command_timeout): forked"* ]] ||
    fail "the forking command's get gave '$got'"
left=$(pgrep -f -- "$marker" || true)
[[ -z $left ]] || fail "processes of the timed-out command remain: $(ps -o pid,args -p "${left//$'\n'/,}")"
pass "a timed-out command's transient unit is stopped before the get is answered: nothing of it remains"
rm -f "$home/.config/hostkeeper/config.toml"
# The restarts so far count against the unit's start rate limit.
as_user systemctl --user reset-failed hostkeeperd.service

# Idle exit: with idle_timeout = 2s the socket-activated daemon exits by
# itself (holding no tokens), the unit is inactive, not failed, and the next
# get activates it again.
echo 'idle_timeout = "2s"' >"$home/.config/hostkeeper/config.toml"
chown "$user:" "$home/.config/hostkeeper/config.toml"
as_user systemctl --user restart hostkeeperd.service
pid=$(unit_show hostkeeperd.service MainPID)
helper get um.example.com >/dev/null || fail "get before the idle exit failed"
for _ in $(seq 1 200); do
    [[ $(unit_show hostkeeperd.service ActiveState) == inactive ]] && break
    sleep 0.05
done
[[ $(unit_show hostkeeperd.service ActiveState) == inactive ]] || fail "the socket-activated daemon did not exit when idle"
[[ $(unit_show hostkeeperd.service Result) == success ]] || fail "the idle exit left Result=$(unit_show hostkeeperd.service Result)"
[[ $(unit_show hostkeeperd.socket ActiveState) == active ]] || fail "the socket is not listening after the idle exit"
kill -0 "$pid" 2>/dev/null && fail "pid $pid is still there after the idle exit"
[[ $(helper get um.example.com) == "{\"token\":\"$token\"}" ]] || fail "get after the idle exit failed"
[[ $(unit_show hostkeeperd.service ActiveState) == active ]] || fail "the get after the idle exit did not activate the service"
pass "idle exit (inactive, Result=success, socket listening), then re-activation"
rm -f "$home/.config/hostkeeper/config.toml"

# --- A service that cannot start ------------------------------------------------------------
# Enabled as hostkeeper setup would, then broken with a drop-in (ExecStart=
# where nothing is: 203/EXEC). The helper must not wait for systemd's
# retries in silence: it is answered at once by a daemon it starts on demand
# and says on stderr what failed and how to fix it.
as_user systemctl --user enable --quiet hostkeeperd.socket || fail "systemctl --user enable failed"
mkdir -p "$home/.config/systemd/user/hostkeeperd.service.d"
printf '[Service]\nExecStart=\nExecStart=%s\n' "$world/bin/missing-hostkeeperd" \
    >"$home/.config/systemd/user/hostkeeperd.service.d/broken.conf"
chown -R "$user:" "$home/.config/systemd/user/hostkeeperd.service.d"
as_user systemctl --user daemon-reload
as_user systemctl --user stop hostkeeperd.service 2>/dev/null
start=$(now_ms)
got=$(helper get um.example.com 2>"$world/helper.err") || { cat "$world/helper.err"; fail "get with a broken unit failed"; }
elapsed=$(($(now_ms) - start))
[[ $got == "{\"token\":\"$token\"}" ]] || fail "get with a broken unit gave '$got'"
((elapsed < 2000)) || fail "get with a broken unit took $elapsed ms (systemd's retries sat out)"
grep -q 'hostkeeperd.socket failed (service-start-limit-hit)' "$world/helper.err" &&
    grep -q 'status=203/EXEC' "$world/helper.err" && grep -q 'reset-failed' "$world/helper.err" ||
    { cat "$world/helper.err"; fail "the helper did not say why the socket-activated start failed"; }
pass "broken unit: the helper answered in $elapsed ms and said: $(cut -c1-160 "$world/helper.err")..."

doctor_out=$(hostkeeper doctor 2>&1) && fail "doctor passed with a failed unit: $doctor_out"
grep -q '^FAIL  systemd: hostkeeperd.socket failed (service-start-limit-hit).*status=203/EXEC.*; fix: .*reset-failed' \
    <<<"$doctor_out" || { echo "$doctor_out"; fail "doctor does not report the failed unit with a fix"; }
pass "doctor: $(grep '^FAIL  systemd' <<<"$doctor_out" | cut -c1-150)..."

dry=$(hostkeeper setup --dry-run 2>&1) || { echo "$dry"; fail "setup --dry-run failed"; }
grep -q 'already enabled' <<<"$dry" && { echo "$dry"; fail "setup --dry-run calls the failed socket 'already enabled'"; }
grep -q 'systemd: hostkeeperd.socket failed (service-start-limit-hit).*would reset it' <<<"$dry" ||
    { echo "$dry"; fail "setup --dry-run does not report the failed socket"; }
setup_out=$(hostkeeper setup 2>&1) && { echo "$setup_out"; fail "setup succeeded with a unit that cannot start"; }
grep -q 'hostkeeperd.service failed (exit-code, status=203/EXEC); fix: ' <<<"$setup_out" ||
    { echo "$setup_out"; fail "setup does not say why the service does not start"; }
pass "setup --dry-run and setup report the failed unit (setup exits non-zero)"

# Fixed: setup resets and starts the socket, the service starts, doctor is content.
rm -r "$home/.config/systemd/user/hostkeeperd.service.d"
as_user systemctl --user daemon-reload
setup_out=$(hostkeeper setup 2>&1) || { echo "$setup_out"; fail "setup failed after the fix"; }
grep -q 'hostkeeperd.service starts' <<<"$setup_out" || { echo "$setup_out"; fail "setup did not check the service"; }
[[ $(unit_show hostkeeperd.socket ActiveState) == active && $(unit_show hostkeeperd.service ActiveState) == active ]] ||
    fail "after setup the units are not active"
pgrep -U "$uid" -f -- '--on-demand' >/dev/null && fail "the on-demand daemon is still running after setup"
doctor_out=$(hostkeeper doctor 2>&1) || true
grep -q '^ok    systemd: hostkeeperd.socket is enabled and listening' <<<"$doctor_out" ||
    { echo "$doctor_out"; fail "doctor does not report the healthy unit"; }
[[ $(helper get um.example.com 2>&1) == "{\"token\":\"$token\"}" ]] || fail "get after the fix failed"
pass "after the fix: setup resets and starts the units, stops the on-demand daemon, doctor is content"

# --- Enabled but not started (as after the package was removed and installed again) -------
as_user systemctl --user stop hostkeeperd.socket hostkeeperd.service || fail "systemctl --user stop failed"
[[ $(unit_show hostkeeperd.socket UnitFileState) == enabled && $(unit_show hostkeeperd.socket ActiveState) == inactive ]] ||
    fail "hostkeeperd.socket is not enabled-but-inactive"
doctor_out=$(hostkeeper doctor 2>&1) || true
grep -q '^warn  systemd: hostkeeperd.socket is enabled but inactive.*fix: systemctl --user start hostkeeperd.socket' \
    <<<"$doctor_out" || { echo "$doctor_out"; fail "doctor does not warn about the enabled but inactive socket"; }
setup_out=$(hostkeeper setup 2>&1) || { echo "$setup_out"; fail "setup failed with the socket enabled but inactive"; }
grep -q 'already enabled' <<<"$setup_out" && { echo "$setup_out"; fail "setup calls the stopped socket 'already enabled'"; }
grep -q 'hostkeeperd.socket was enabled but inactive; started it' <<<"$setup_out" ||
    { echo "$setup_out"; fail "setup does not say it started the socket"; }
[[ $(unit_show hostkeeperd.socket ActiveState) == active ]] || fail "setup left hostkeeperd.socket $(unit_show hostkeeperd.socket ActiveState)"
pgrep -U "$uid" -f -- '--on-demand' >/dev/null && fail "an on-demand daemon still runs after setup started the socket"
doctor_out=$(hostkeeper doctor 2>&1) || true
grep -q '^ok    systemd: hostkeeperd.socket is enabled and listening' <<<"$doctor_out" ||
    { echo "$doctor_out"; fail "doctor is not content once setup started the socket"; }
pass "enabled but inactive: doctor warns with the fix, setup starts the socket and says so"

# --- The debugging recipe (README, hostkeeperd(8)) ------------------------------------------
daemon_out=$(as_user timeout 20 "$world/bin/hostkeeperd" --log-level debug 2>&1) &&
    fail "hostkeeperd ran beside hostkeeperd.socket: $daemon_out"
grep -q "is served by another process.*'systemctl --user stop hostkeeperd.socket hostkeeperd.service' first" \
    <<<"$daemon_out" || { echo "$daemon_out"; fail "hostkeeperd does not name the fix when the socket unit holds its socket"; }
as_user systemctl --user stop hostkeeperd.socket hostkeeperd.service || fail "the recipe's systemctl --user stop failed"
as_user "$world/bin/hostkeeperd" --log-level debug >"$world/debug.log" 2>&1 &
debug_pid=$!
on_exit "kill $debug_pid 2>/dev/null"
for _ in $(seq 1 200); do [[ -S $runtime/hostkeeper/socket ]] && break; kill -0 "$debug_pid" 2>/dev/null || break; sleep 0.05; done
[[ $(helper get um.example.com 2>&1) == "{\"token\":\"$token\"}" ]] || { cat "$world/debug.log"; fail "get from the daemon run by hand failed"; }
grep -qi 'debug' "$world/debug.log" || { cat "$world/debug.log"; fail "the daemon run by hand logged no debug lines"; }
pgrep -U "$uid" -f -- '--on-demand' >/dev/null && fail "the get was answered by an on-demand daemon, not the one run by hand"
kill -TERM "$debug_pid"
wait "$debug_pid" || true
as_user systemctl --user start hostkeeperd.socket || fail "the recipe's systemctl --user start failed"
[[ $(helper get um.example.com 2>&1) == "{\"token\":\"$token\"}" ]] || fail "get after going back to the socket failed"
[[ $(unit_show hostkeeperd.service ActiveState) == active ]] || fail "the socket did not activate the service after the recipe"
pass "debugging recipe: the refusal names the fix; stop the units, run hostkeeperd by hand, start the socket again"

echo "PASS: hostkeeperd's user units under a real systemd --user"
