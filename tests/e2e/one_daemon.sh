#!/usr/bin/env bash
# one_daemon.sh BIN_DIR
#
# One hostkeeperd per user, under support/port-env.sh (a real hostkeeper-portd
# handed its sockets as PID 1 would, in a private network namespace), as a
# throw-away user U whose logind runtime directory /run/user/UID the test
# makes (0700, U's) and removes. Podman, when XDG_RUNTIME_DIR is unset, runs
# its helpers with XDG_RUNTIME_DIR=/tmp/podman-run-UID: that environment is
# made exactly here (podman itself is not run: a rootless podman needs
# subordinate uids the throw-away user has not), and the real Docker helper
# docker-credential-hostkeeper runs in it.
#   1. daemon A runs on /run/user/UID/hostkeeper/socket and registers with
#      portd;
#   2. the Docker helper and `hostkeeper status` started with
#      XDG_RUNTIME_DIR=/tmp/podman-run-UID reach A: no second daemon starts,
#      no socket appears under /tmp/podman-run-UID;
#   3. a second daemon B started anyway on /tmp/podman-run-UID/hostkeeper/socket
#      does not take the registration: portd refuses it naming A (pid,
#      socket), B says so once in its log and asks again with growing pauses
#      (its refusals are counted over a window: a handful, where two daemons
#      taking the link from each other made thousands), A's registration
#      never ends, and B's status, `hostkeeper status` and `hostkeeper doctor`
#      name A as the holder, with the fix;
#   4. meanwhile curl's requests through the registry port are answered by
#      A (its request counter grows by each, B's stays 0), never 503;
#   5. A killed: its link ends, and a daemon of U holds the port again (a
#      new A, or B after its pause), the other naming it.
# Exit 0 pass, 1 fail, 2 setup error, 77 skip.
set -uo pipefail
# shellcheck source=../support/script_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/script_lib.sh"
[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
[[ $(id -u) -eq 0 ]] || skip "needs root (useradd, setpriv, /run/user/UID)"
[[ -n ${HOSTKEEPER_PORT_SOCKET:-} && -n ${HK_REGISTRY_PORT:-} && -n ${HK_PORTD_PID:-} && -n ${HK_PORTD_LOG:-} ]] ||
    die "run it under tests/support/port-env.sh"
for tool in useradd userdel setpriv curl pgrep; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
done
py=/usr/bin/python3
[[ -x $py ]] || skip "$py is not installed"
bin_dir "$1" hostkeeper hostkeeperd docker-credential-hostkeeper
bin=${bin:?}  # set by bin_dir
port=$HK_REGISTRY_PORT

failures=0
check_failed() { echo "FAIL: $*"; failures=$((failures + 1)); }

work=$(mktemp -d /tmp/hk-one-daemon.XXXXXX)
chmod 0755 "$work"
user=hk-one-$$
uid=
runtime=
podman_runtime=
daemon_pids=()
# shellcheck disable=SC2317  # run at exit
cleanup() {
    local pid
    for pid in "${daemon_pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${daemon_pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    # Daemons a client started on demand.
    [[ -n $uid ]] && pkill -KILL -u "$uid" -x hostkeeperd 2>/dev/null
    [[ -n $runtime ]] && rm -rf "$runtime"
    [[ -n $podman_runtime ]] && rm -rf "$podman_runtime"
    userdel "$user" 2>/dev/null
    rm -rf "$work"
}
on_exit cleanup
trap 'exit 130' INT TERM

useradd --system --no-create-home --home-dir "$work/home" --shell /usr/sbin/nologin "$user" ||
    die "useradd $user failed"
uid=$(id -u "$user")
gid=$(id -g "$user")
[[ $uid != 0 ]] || die "the user got uid 0"

# The programs, where U may run them (the helper starts the hostkeeperd beside it).
inst=$work/bin
mkdir -m 0755 "$inst"
for program in hostkeeper hostkeeperd docker-credential-hostkeeper; do
    cp -p "$bin/$program" "$inst/$program" || die "cannot copy $bin/$program"
done
home=$work/home
mkdir -p "$home/.config/hostkeeper" "$home/.terraform.d"
printf '{"version":1,"tfrc_files":["%s"],"hosts":[]}\n' "$home/.terraform.d/hostkeeper.tfrc" \
    >"$home/.config/hostkeeper/registry-cache.json"
chmod 0600 "$home/.config/hostkeeper/registry-cache.json"
chown -R "$uid:$gid" "$home"
chmod 0700 "$home"

# logind's runtime directory for U, and podman's.
runtime=/run/user/$uid
[[ -d /run/user ]] || { mkdir -m 0755 /run/user || die "cannot make /run/user"; }
if [[ -e $runtime ]]; then
    runtime=
    die "/run/user/$uid exists already"
fi
{ mkdir -m 0700 "$runtime" && chown "$uid:$gid" "$runtime"; } || die "cannot make $runtime"
podman_runtime=/tmp/podman-run-$uid
[[ ! -e $podman_runtime ]] || rm -rf "$podman_runtime"
{ mkdir -m 0700 "$podman_runtime" && chown "$uid:$gid" "$podman_runtime"; } || die "cannot make $podman_runtime"
socket_a=$runtime/hostkeeper/socket
socket_b=$podman_runtime/hostkeeper/socket

# exec_as_u XDG_RUNTIME_DIR COMMAND...: execs COMMAND as U in a clean environment.
exec_as_u() {
    local xdg=$1
    shift
    exec setpriv --reuid="$uid" --regid="$gid" --clear-groups \
        env -i HOME="$home" USER="$user" LOGNAME="$user" PATH="$inst:/usr/bin:/bin" \
        XDG_RUNTIME_DIR="$xdg" XDG_CONFIG_HOME="$home/.config" XDG_CACHE_HOME="$home/.cache" \
        XDG_DATA_HOME="$home/.local/share" XDG_STATE_HOME="$home/.local/state" \
        HOSTKEEPER_PORT_SOCKET="$HOSTKEEPER_PORT_SOCKET" "$@"
}
# as_u XDG_RUNTIME_DIR COMMAND...: the same, as a command of its own.
as_u() { (exec_as_u "$@"); }
# start_daemon XDG_RUNTIME_DIR LOG [ARGS...]: hostkeeperd as U in the
# background (by hand: it runs until stopped); $daemon is its pid.
start_daemon() {
    local xdg=$1 log=$2
    shift 2
    # The background job execs, so that $! is hostkeeperd itself.
    (exec_as_u "$xdg" "$inst/hostkeeperd" "$@") >"$log" 2>&1 &
    daemon=$!
    daemon_pids+=("$daemon")
}
# status_json SOCKET FILE: hostkeeper status --json of the daemon on SOCKET.
status_json() { as_u "$runtime" timeout 20 "$inst/hostkeeper" --socket "$1" status --json >"$2" 2>&1; }
# json FILE EXPRESSION: the Python EXPRESSION over the JSON document in FILE (d).
json() {
    "$py" - "$1" "$2" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1], encoding="utf-8"))
    print(eval(sys.argv[2], {"d": d}))
except Exception as e:
    print("ERROR %s" % e)
PY
}
# wait_for SECONDS COMMAND...: true once COMMAND succeeds within SECONDS.
wait_for() {
    local until=$((SECONDS + $1))
    shift
    while [[ $SECONDS -lt $until ]]; do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}
registered_count() { grep -c "registered the daemon of uid $uid " "$HK_PORTD_LOG" || true; }
ended_count() { grep -c "registration of uid $uid ended" "$HK_PORTD_LOG" || true; }
# portd's count of registrations refused to a user's second daemon (SIGUSR1).
refused_count() {
    local before
    before=$(grep -c 'connections:' "$HK_PORTD_LOG" || true)
    kill -USR1 "$HK_PORTD_PID"
    wait_for 5 test "$(grep -c 'connections:' "$HK_PORTD_LOG" || true)" -gt "$before" ||
        die "portd logged no counters on SIGUSR1"
    grep 'connections:' "$HK_PORTD_LOG" | tail -1 | grep -o '[0-9]* refused to a second daemon' | cut -d' ' -f1
}
# shellcheck disable=SC2317  # called through wait_for
holds() { status_json "$1" "$work/holds.json" && [[ $(json "$work/holds.json" 'd["registry_cache"]["held"]') == True ]]; }
u_daemons() { pgrep -u "$uid" -x hostkeeperd | wc -l; }

echo "== 1. daemon A on $socket_a"
start_daemon "$runtime" "$work/a.log"
pid_a=$daemon
wait_for 20 holds "$socket_a" || { show "$work/a.log"; show "$work/holds.json"; die "daemon A did not register with portd"; }
[[ $(json "$work/holds.json" 'd["daemon"]["pid"]') == "$pid_a" ]] || die "the daemon on $socket_a is not A"
pass "A (pid $pid_a) listens on $socket_a and holds the registry port"
[[ $(registered_count) == 1 ]] || check_failed "portd logged $(registered_count) registrations of uid $uid, not 1"
if grep -q "registered the daemon of uid $uid (pid $pid_a, socket $socket_a;" "$HK_PORTD_LOG"; then
    pass "portd logged A's registration with its pid and socket"
else
    check_failed "portd's log does not name A's pid and socket: $(grep "uid $uid" "$HK_PORTD_LOG")"
fi

echo "== 2. clients with podman's XDG_RUNTIME_DIR=$podman_runtime reach A"
# The real Docker helper, as podman runs it (the keyring may be unusable here:
# only which daemon it reached matters).
echo "https://registry.example" | as_u "$podman_runtime" timeout 30 "$inst/docker-credential-hostkeeper" get \
    >"$work/docker.out" 2>&1
as_u "$podman_runtime" timeout 30 "$inst/docker-credential-hostkeeper" list >>"$work/docker.out" 2>&1
as_u "$podman_runtime" timeout 20 "$inst/hostkeeper" status --json >"$work/podman-status.json" 2>&1
if [[ ! -e $socket_b && $(u_daemons) == 1 && $(json "$work/podman-status.json" 'd["daemon"]["pid"]') == "$pid_a" ]]; then
    pass "the Docker helper and hostkeeper status with XDG_RUNTIME_DIR=$podman_runtime reached A (pid $pid_a); no second daemon, no $socket_b"
else
    show "$work/docker.out"
    show "$work/podman-status.json"
    check_failed "with podman's XDG_RUNTIME_DIR: $(u_daemons) hostkeeperd of U run ($(pgrep -u "$uid" -x hostkeeperd | tr '\n' ' ')), $socket_b $([[ -e $socket_b ]] && echo exists || echo absent)"
    for pid in $(pgrep -u "$uid" -x hostkeeperd); do [[ $pid == "$pid_a" ]] || kill -KILL "$pid"; done
    rm -rf "${podman_runtime:?}/hostkeeper"
fi

echo "== 3. a second daemon B on $socket_b anyway"
tfrc=$home/.terraform.d/hostkeeper.tfrc
tfrc_before=$(stat -c '%Y %s' "$tfrc" 2>/dev/null || echo none)
registered0=$(registered_count)
ended0=$(ended_count)
start_daemon "$podman_runtime" "$work/b.log" --socket "$socket_b"
pid_b=$daemon
# shellcheck disable=SC2317  # called through wait_for
second() { status_json "$socket_b" "$work/b-status.json" && [[ $(json "$work/b-status.json" 'd["registry_cache"]["other_daemon"]["pid"]') == "$pid_a" ]]; }
if wait_for 20 second; then
    pass "B (pid $pid_b) runs and reports A as the holder: $(json "$work/b-status.json" 'd["registry_cache"]["other_daemon"]')"
    [[ $(json "$work/b-status.json" 'd["registry_cache"]["other_daemon"]["socket"]') == "$socket_a" ]] ||
        check_failed "B's status does not name A's socket: $(json "$work/b-status.json" 'd["registry_cache"]')"
    [[ $(json "$work/b-status.json" '(d["registry_cache"]["held"], d["registry_cache"]["blocks_withdrawn"])') == "(False, False)" ]] ||
        check_failed "B holds the port or withdrew the blocks: $(json "$work/b-status.json" 'd["registry_cache"]')"
else
    show "$work/b.log"
    show "$work/b-status.json"
    check_failed "B does not report A (pid $pid_a) as the holder of the registry port"
fi
refused0=$(refused_count)

echo "== 4. requests through the port while both run"
status_json "$socket_a" "$work/a-before.json"
status_json "$socket_b" "$work/b-before.json"
requests_a0=$(json "$work/a-before.json" 'd["registry_cache"]["requests"]')
requests_b0=$(json "$work/b-before.json" 'd["registry_cache"]["requests"]')
: >"$work/codes.txt"
# 24 requests, one every half second: a window of about 12 s.
for i in $(seq 24); do
    as_u "$runtime" curl -s -o /dev/null -w '%{http_code}\n' --max-time 10 \
        "http://127.0.0.1:$port/v1/nothing.invalid/modules/acme/m$i/null/versions" >>"$work/codes.txt" 2>&1 ||
        echo "curl-failed" >>"$work/codes.txt"
    sleep 0.5
done
refused1=$(refused_count)
status_json "$socket_a" "$work/a-after.json"
status_json "$socket_b" "$work/b-after.json"
requests_a1=$(json "$work/a-after.json" 'd["registry_cache"]["requests"]')
requests_b1=$(json "$work/b-after.json" 'd["registry_cache"]["requests"]')
bad_codes=$(grep -cvE '^[1-5][0-9][0-9]$' "$work/codes.txt" || true)
unavailable=$(grep -c '^503$' "$work/codes.txt" || true)
if [[ $bad_codes == 0 && $unavailable == 0 && $((requests_a1 - requests_a0)) -ge 24 && $requests_b1 == "$requests_b0" ]]; then
    pass "all 24 requests through the port were answered by A (its requests $requests_a0 -> $requests_a1; B's $requests_b0 -> $requests_b1; codes $(sort "$work/codes.txt" | uniq -c | tr -s ' \n' ' '))"
else
    check_failed "requests through the port: codes $(sort "$work/codes.txt" | uniq -c | tr -s ' \n' ' '); A's requests $requests_a0 -> $requests_a1, B's $requests_b0 -> $requests_b1"
fi
# In the window B asked again after growing pauses (1, 2, 4, 8 s ...): a
# handful of refusals, where a tight loop made thousands.
window=$((refused1 - refused0))
if [[ $refused0 -ge 1 && $window -le 8 ]]; then
    pass "portd refused B $refused0 time(s) before the window and $window time(s) in it (about 12 s): B backs off"
else
    check_failed "portd refused B $refused0 time(s) before the window and $window in it"
fi
if [[ $(registered_count) == "$registered0" && $(ended_count) == "$ended0" ]]; then
    pass "no registration of uid $uid was made or ended while B ran: A kept the link"
else
    grep "uid $uid" "$HK_PORTD_LOG" | tail -5
    check_failed "while B ran, portd made $(($(registered_count) - registered0)) and ended $(($(ended_count) - ended0)) registrations of uid $uid"
fi
if grep -q "refused a second daemon of uid $uid (pid $pid_b, socket $socket_b): pid $pid_a, socket $socket_a holds" "$HK_PORTD_LOG"; then
    pass "portd logged the refusal naming both daemons"
else
    check_failed "portd's log does not name B and A: $(grep "second daemon of uid $uid" "$HK_PORTD_LOG" | head -2)"
fi
said=$(grep -c "another hostkeeperd of this user holds the registry port (pid $pid_a, socket $socket_a)" "$work/b.log" || true)
loops=$(grep -c "registering again" "$work/b.log" || true)
if [[ $said == 1 && $loops == 0 ]]; then
    pass "B logged once that A holds the port (and never 'registering again')"
else
    show "$work/b.log"
    check_failed "B said $said time(s) that A holds the port, 'registering again' $loops time(s)"
fi
grep -q "registering again" "$work/a.log" && check_failed "A lost its link: $(grep "registering again" "$work/a.log" | head -2)"
if [[ $(stat -c '%Y %s' "$tfrc" 2>/dev/null || echo none) == "$tfrc_before" ]]; then
    pass "B left the tfrc file to A"
else
    check_failed "B rewrote $tfrc"
fi
# What the user sees through B.
as_u "$podman_runtime" timeout 20 "$inst/hostkeeper" --socket "$socket_b" status >"$work/b-status.txt" 2>&1
if grep -qF "NOT held: a second hostkeeperd of yours runs: pid $pid_a (socket $socket_a) holds the registry port" "$work/b-status.txt" &&
    grep -qF "fix: run one daemon: 'hostkeeper stop'" "$work/b-status.txt"; then
    pass "hostkeeper status through B names A and the fix"
else
    show "$work/b-status.txt"
    check_failed "hostkeeper status through B does not name A with the fix"
fi
as_u "$podman_runtime" timeout 60 "$inst/hostkeeper" --socket "$socket_b" doctor >"$work/b-doctor.txt" 2>&1
if grep -qF "a second hostkeeperd of yours runs: pid $pid_a (socket $socket_a)" "$work/b-doctor.txt" &&
    grep -qF "HOSTKEEPER_SOCKET=$socket_a" "$work/b-doctor.txt"; then
    pass "hostkeeper doctor through B reports the second daemon: $(grep -F "a second hostkeeperd" "$work/b-doctor.txt" | head -1 | cut -c1-160)"
else
    show "$work/b-doctor.txt"
    check_failed "hostkeeper doctor through B does not report the second daemon"
fi

echo "== 5. A killed: a daemon of U holds the port again"
kill -KILL "$pid_a"
wait "$pid_a" 2>/dev/null
wait_for 10 test "$(ended_count)" -gt "$ended0" || check_failed "portd did not end A's registration"
start_daemon "$runtime" "$work/a2.log"
pid_a2=$daemon
# Whichever asks first after A's end gets the port (the new A at once, or B
# after its pause); the other names it.
# shellcheck disable=SC2317  # called through wait_for
one_holds() {
    status_json "$socket_a" "$work/a2.json" && status_json "$socket_b" "$work/b2.json" || return 1
    local a b
    a=$(json "$work/a2.json" '(d["registry_cache"]["held"], (d["registry_cache"]["other_daemon"] or {}).get("pid"))')
    b=$(json "$work/b2.json" '(d["registry_cache"]["held"], (d["registry_cache"]["other_daemon"] or {}).get("pid"))')
    [[ ($a == "(True, None)" && $b == "(False, $pid_a2)") || ($b == "(True, None)" && $a == "(False, $pid_b)") ]]
}
if wait_for 90 one_holds; then
    pass "after A's death one daemon holds the port, the other names it: new A $(json "$work/a2.json" 'd["registry_cache"]["held"]'), B $(json "$work/b2.json" 'd["registry_cache"]["held"]')"
else
    show "$work/a2.json"
    show "$work/b2.json"
    check_failed "after A's death: not exactly one holder"
fi

kill -USR1 "$HK_PORTD_PID" 2>/dev/null && sleep 0.3
echo "portd: $(grep 'connections:' "$HK_PORTD_LOG" | tail -1 | sed 's/^.*connections:/connections:/')"
if [[ $failures -ne 0 ]]; then
    echo "one_daemon.sh: $failures failure(s)"
    exit 1
fi
echo "one_daemon.sh: all passed"
exit 0
