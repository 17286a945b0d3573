#!/usr/bin/env bash
# port_subuid.sh BIN_DIR
#
# One user's subordinate uids cannot deny the registry port to another user.
# Under support/mount-env.sh and support/port-env.sh (a private mount and
# network namespace, a real hostkeeper-portd as nobody handed its sockets as
# PID 1 would). Throw-away users: an attacker, given a subordinate range in
# an /etc/subuid bind-mounted over the machine's (in this mount namespace
# only: portd reads it again when it changes), and two victims. Root runs
# processes as 40 uids of the attacker's range and 8 unlisted uids above
# SUB_UID_MIN (setpriv, as newuidmap would map them), each holding 8
# half-open greetings on the link socket and 16 TCP connections on the port,
# reopened as soon as they end (the tables' old totals: 256 and 512). Then:
#   a. the victim's daemon registers at its first try, and a connection of
#      the victim opened before it registered is handed to it (not 503,
#      not reset), and so are 20 more;
#   b. a second victim without a daemon gets its 503, not a reset;
#   c. the attacker's refused greetings were answered with an `error` line,
#      and portd counted the range's uids against the attacker's budget.
# Exit 0 pass, 1 fail, 2 setup error, 77 skip.
set -uo pipefail
# shellcheck source=../support/script_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/script_lib.sh"
[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
[[ $(id -u) -eq 0 ]] || skip "needs root (useradd, setpriv, mount)"
[[ -n ${HOSTKEEPER_PORT_SOCKET:-} && -n ${HK_REGISTRY_PORT:-} && -n ${HK_PORTD_LOG:-} ]] ||
    die "run it under tests/support/port-env.sh"
# The bind mount below must not reach the machine: only in a mount namespace
# of this test's own.
[[ $(readlink /proc/self/ns/mnt) != "$(readlink /proc/1/ns/mnt)" ]] ||
    die "run it under tests/support/mount-env.sh (a private mount namespace)"
for tool in useradd userdel setpriv mount umount getent; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
done
[[ -f /etc/subuid ]] || skip "/etc/subuid does not exist (nothing to bind-mount over)"
py=/usr/bin/python3
[[ -x $py ]] || skip "$py is not installed"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

failures=0
check_failed() { echo "FAIL: $*"; failures=$((failures + 1)); }

work=$(mktemp -d /tmp/hk-port-subuid.XXXXXX)
chmod 0755 "$work"
users=()
pids=()
mounted=
cleanup() {
    touch "$work/hogs/stop" 2>/dev/null
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
    # Before userdel: it would rewrite a file that lists its user.
    [[ -n $mounted ]] && umount /etc/subuid
    for user in "${users[@]}"; do userdel "$user" 2>/dev/null; done
    rm -rf "$work"
}
on_exit cleanup
trap 'exit 130' INT TERM

make_user() {
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$1" ||
        die "useradd $1 failed"
    users+=("$1")
}
attacker=hk-sub-att-$$
victim=hk-sub-vic-$$
bystander=hk-sub-by-$$
make_user "$attacker"
make_user "$victim"
make_user "$bystander"
uid_attacker=$(id -u "$attacker")
uid_victim=$(id -u "$victim")
gid_victim=$(id -g "$victim")
uid_bystander=$(id -u "$bystander")
gid_bystander=$(id -g "$bystander")

# The attacker's range, and unlisted uids above SUB_UID_MIN: high numbers no
# account of this machine has.
sub_uid_min=$(awk '$1 == "SUB_UID_MIN" { v = $2 } END { print v ? v : 100000 }' /etc/login.defs 2>/dev/null)
range_first=$((3000000000 + ($$ % 1000) * 65536))
unlisted_first=$((range_first + 65536 * 1000))
((unlisted_first > sub_uid_min)) || die "the unlisted uids must be above SUB_UID_MIN ($sub_uid_min)"
for uid in "$range_first" "$unlisted_first"; do
    getent passwd "$uid" >/dev/null && die "uid $uid has an account; pick other numbers"
done

# /etc/subuid with the attacker's range, over the machine's (this namespace
# only). portd started before it: it must notice the change.
cp /etc/subuid "$work/subuid"
echo "$attacker:$range_first:65536" >>"$work/subuid"
chmod 0644 "$work/subuid"
mount --bind "$work/subuid" /etc/subuid || die "cannot bind-mount over /etc/subuid"
mounted=1

cp "$here/../support/port_clients.py" "$work/port_clients.py"
chmod 0644 "$work/port_clients.py"
mkdir -m 1777 "$work/hogs"
mkdir -m 0700 "$work/victim" "$work/bystander"
chown "$uid_victim:$gid_victim" "$work/victim"
chown "$uid_bystander:$gid_bystander" "$work/bystander"
as_uid() {
    local uid=$1 gid=$2
    shift 2
    setpriv --reuid="$uid" --regid="$gid" --clear-groups "$@"
}
# Background jobs exec, so that $! is the program itself.
start_as_uid() { exec setpriv --reuid="$1" --regid="$1" --clear-groups "${@:2}"; }

echo "== the attack: 40 uids of $attacker's range and 8 unlisted uids, 8 greetings and 16 connections each"
hog_uids=()
for i in $(seq 0 39); do hog_uids+=($((range_first + i))); done
for i in $(seq 0 7); do hog_uids+=($((unlisted_first + i))); done
for uid in "${hog_uids[@]}"; do
    start_as_uid "$uid" "$py" "$work/port_clients.py" hog "$work/hogs" 8 16 2>>"$work/hogs.err" &
    pids+=($!)
done
# Every hog has opened all its connections...
for _ in $(seq 300); do
    [[ $(find "$work/hogs" -name 'ready-*' | wc -l) -eq ${#hog_uids[@]} ]] && break
    sleep 0.1
done
[[ $(find "$work/hogs" -name 'ready-*' | wc -l) -eq ${#hog_uids[@]} ]] ||
    die "the hogs did not start: $(cat "$work/hogs.err")"
# ... and the tables are full: greetings and connections are being refused.
totals() {
    cat "$work/hogs"/count-* 2>/dev/null | tr ' ' '\n' | awk -F= '{ s[$1] += $2 } END { for (k in s) printf "%s=%d ", k, s[k] }'
}
total_of() { totals | tr ' ' '\n' | sed -n "s/^$1=//p"; }
for _ in $(seq 300); do
    refused_greetings=$(($(total_of greeting_error) + $(total_of greeting_closed)))
    refused_tcp=$(($(total_of tcp_reset)))
    ((refused_greetings >= 40 && refused_tcp >= 40)) && break
    sleep 0.1
done
echo "the attack so far: $(totals)"
((refused_greetings >= 40 && refused_tcp >= 40)) || die "the attack did not fill portd's tables: $(totals)"

echo "== a. the victim's connection waits for its daemon, which registers"
start_as_uid "$uid_victim" "$py" "$work/port_clients.py" request early 15 "$work/victim/connected" \
    >"$work/victim/early.out" 2>&1 &
early_pid=$!
pids+=("$early_pid")
# Established before the daemon registers: it waits in portd's table.
for _ in $(seq 100); do
    [[ -e $work/victim/connected ]] && break
    sleep 0.05
done
[[ -e $work/victim/connected ]] || check_failed "the victim's early connection was not established"
start_as_uid "$uid_victim" "$py" "$work/port_clients.py" daemon "$work/victim/daemon.log" &
pids+=($!)
for _ in $(seq 100); do
    [[ -s $work/victim/daemon.log ]] && break
    sleep 0.1
done
if grep -q "^registered b'ok $HK_REGISTRY_PORT" "$work/victim/daemon.log"; then
    pass "the victim's daemon registered during the attack"
else
    check_failed "the victim's daemon did not register: $(head -1 "$work/victim/daemon.log")"
fi
wait "$early_pid"
if [[ $(head -1 "$work/victim/early.out") == "HTTP/1.1 200 OK" ]] &&
    grep -q "served by uid $uid_victim: early" "$work/victim/early.out"; then
    pass "the victim's connection opened before its daemon registered was handed to it"
else
    check_failed "the victim's early connection: $(tr '\n' ' ' <"$work/victim/early.out")"
fi
served=0
for i in $(seq 20); do
    out=$(as_uid "$uid_victim" "$gid_victim" "$py" "$work/port_clients.py" request "later-$i" 15)
    if [[ $(head -1 <<<"$out") == "HTTP/1.1 200 OK" ]] && grep -q "served by uid $uid_victim: later-$i" <<<"$out"; then
        served=$((served + 1))
    else
        check_failed "the victim's request $i: $(tr '\n' ' ' <<<"$out")"
    fi
done
[[ $served -eq 20 ]] && pass "all 20 later requests of the victim were served by its daemon"

echo "== b. a user without a daemon gets its 503, not a reset"
out=$(as_uid "$uid_bystander" "$gid_bystander" "$py" "$work/port_clients.py" request bystander 15)
if [[ $(head -1 <<<"$out") == "HTTP/1.1 503 "* ]] && grep -q "not running for uid $uid_bystander" <<<"$out"; then
    pass "the bystander got: $(head -1 <<<"$out")"
else
    check_failed "the bystander's request: $(tr '\n' ' ' <<<"$out")"
fi

echo "== c. the attacker was refused with words, within its own budget"
# The sum of counter $3 over the hogs of uids $1 .. $1+$2-1.
group_total() {
    awk -v first="$1" -v n="$2" -v key="$3" '
        FNR == 1 { uid = substr(FILENAME, index(FILENAME, "count-") + 6) + 0 }
        uid >= first && uid < first + n {
            for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == key) sum += kv[2] }
        }
        END { print sum + 0 }' "$work"/hogs/count-*
}
# One budget for the 40 uids of the range, one for the 8 unlisted ones: of
# their first 320 and 64 greetings, all but 8 each are refused, each with an
# error line (uids counted apart would have been refused silently, or
# far fewer). The hogs read their answers as they come.
for _ in $(seq 300); do
    range_errors=$(group_total "$range_first" 40 greeting_error)
    unlisted_errors=$(group_total "$unlisted_first" 8 greeting_error)
    ((range_errors >= 312 && unlisted_errors >= 56)) && break
    sleep 0.1
done
echo "the attack in all: $(totals)"
if ((range_errors >= 312)); then
    pass "the range's 40 uids shared $attacker's budget: $range_errors greetings refused with an error line"
else
    check_failed "the range's uids: $range_errors greetings refused with an error line (expected at least 312)"
fi
if ((unlisted_errors >= 56)); then
    pass "the 8 unlisted uids shared one budget: $unlisted_errors greetings refused with an error line"
else
    check_failed "the unlisted uids: $unlisted_errors greetings refused with an error line (expected at least 56)"
fi
if grep -q "budget of uid $uid_attacker)" "$HK_PORTD_LOG" || grep -q "budget of the unowned subordinate uids)" "$HK_PORTD_LOG"; then
    pass "portd's log names the budget holder of its refusals"
else
    check_failed "portd's log names no budget holder"
fi
grep -q "Traceback" "$work/hogs.err" && check_failed "a hog failed: $(head -5 "$work/hogs.err")"

touch "$work/hogs/stop"
kill -USR1 "$HK_PORTD_PID" 2>/dev/null && sleep 0.3
echo "portd's log (its end):"
tail -25 "$HK_PORTD_LOG" | sed 's/^/    /'
if [[ $failures -ne 0 ]]; then
    echo "port_subuid.sh: $failures failure(s)"
    exit 1
fi
echo "port_subuid.sh: all passed"
exit 0
