#!/usr/bin/env bash
# secret_service_unlock.sh BIN_DIR
#
# End to end: `hostkeeper unlock` where the Secret Service cannot show its
# unlock prompt (no desktop session: this world's private bus can start no
# prompter, so gnome-keyring dismisses its prompt at once). The login
# collection of the real gnome-keyring is locked with a token in it, and
# hostkeeperd restarted (nothing cached):
#   - standard input no terminal (setsid, </dev/null): exit 1, the message
#     of before (the prompt dismissed) and the hint that a terminal asks
#     for the password; the collection stays locked;
#   - on a pseudo-terminal, three wrong passwords: each refused in words,
#     exit 1, the collection still locked, nothing typed shown;
#   - an empty line: nothing sent, exit 1;
#   - a wrong password, then the right one: exit 0, the collection unlocked,
#     the password never shown, and the credentials helper gets the token;
#     on the session bus (dbus-monitor) the password went in an encrypted
#     Secret Service session (dh-ietf1024-sha256-aes128-cbc-pkcs7), never
#     as its bytes;
#   - no password is in any file of the world.
#
# Run it inside tests/support/keyring-env.sh:
#   tests/support/keyring-env.sh tests/e2e/secret_service_unlock.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error.
set -euo pipefail

e2e_name=e2e-secret-service-unlock  # read by keyring_world.sh
# shellcheck source-path=SCRIPTDIR
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../support" && pwd)
# shellcheck source=../support/script_lib.sh
source "$support/script_lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
bin_dir "$1" hostkeeper hostkeeperd terraform-credentials-hostkeeper
helper=$bin/terraform-credentials-hostkeeper
need python3 dbus-send dbus-monitor setsid timeout
[[ -n "${HK_KEYRING_PASSWORD:-}" ]] ||
    die "HK_KEYRING_PASSWORD is not set: run me through tests/support/keyring-env.sh"
# shellcheck source=keyring_world.sh
source "$here/keyring_world.sh"
[[ $backend == secret-service ]] || die "this test needs gnome-keyring: run it through keyring-env.sh"

pty_run=$support/pty_run.py
prompt='Password of the keyring: '
host=tfe.unlock.example.com
token=hk-unlock-$(python3 -c 'import secrets; print(secrets.token_hex(16))')
collection=/org/freedesktop/secrets/collection/login
wrong=(wrong-password-one wrong-password-two wrong-password-three)

secrets_call() {
    dbus-send --session --print-reply=literal --reply-timeout=5000 \
        --dest=org.freedesktop.secrets "$@"
}
collection_locked() {
    secrets_call "$collection" org.freedesktop.DBus.Properties.Get \
        string:org.freedesktop.Secret.Collection string:Locked | grep -q 'boolean true'
}
# The login collection locked, and a new hostkeeperd (nothing cached).
lock_keyring() {
    secrets_call /org/freedesktop/secrets org.freedesktop.Secret.Service.Lock \
        "array:objpath:$collection" >/dev/null || die "the login collection could not be locked"
    collection_locked || die "the login collection does not say it is locked"
    "$bin/hostkeeper" stop >/dev/null 2>&1 || true
}
# tty_unlock NAME [--answer PROMPT TEXT]...: hostkeeper unlock on a new
# pseudo-terminal; what it showed in $root/NAME.tty, its status in tty_rc.
tty_unlock() {
    local name=$1
    shift
    tty_rc=0
    timeout 120 python3 "$pty_run" "$@" "$root/$name.tty" -- "$bin/hostkeeper" unlock ||
        tty_rc=$?
}
# not_shown NAME WORD...: none of the words is on the terminal.
not_shown() {
    local name=$1 word
    shift
    for word in "$@"; do
        if grep -qF -- "$word" "$root/$name.tty"; then
            show "$root/$name.tty"
            fail "$name: the terminal shows what was typed ($word)"
        fi
    done
}

printf '{"token":"%s"}' "$token" | "$helper" store "$host" || fail "the helper could not store the token"
lock_keyring
"$helper" get "$host" >/dev/null 2>"$root/get-locked.err" && fail "the helper got the token from a locked keyring"
pass "the login collection is locked, and the helper gets no token"

# --- No terminal: the message of before, and the hint ------------------------------
rc=0
setsid -w "$bin/hostkeeper" unlock </dev/null >"$root/notty.out" 2>"$root/notty.err" || rc=$?
[[ $rc == 1 ]] || { show "$root/notty.err"; fail "without a terminal, hostkeeper unlock exited $rc, not 1"; }
grep -qF 'the unlock prompt was dismissed, could not be shown' "$root/notty.err" ||
    { show "$root/notty.err"; fail "without a terminal, the message does not say the prompt was dismissed"; }
grep -qF 'run hostkeeper unlock in a terminal, where it asks for the keyring'"'"'s password' "$root/notty.err" ||
    { show "$root/notty.err"; fail "without a terminal, the message does not say that a terminal asks for the password"; }
[[ ! -s "$root/notty.out" ]] || { show "$root/notty.out"; fail "without a terminal, hostkeeper unlock printed on stdout"; }
collection_locked || fail "without a terminal, the collection was unlocked"
pass "without a terminal: exit 1, the prompt's failure and the hint to use a terminal"

# --- Three wrong passwords -------------------------------------------------------------
tty_unlock wrong --answer "$prompt" "${wrong[0]}" --answer "$prompt" "${wrong[1]}" \
    --answer "$prompt" "${wrong[2]}"
[[ $tty_rc == 1 ]] || { show "$root/wrong.tty"; fail "three wrong passwords: exit $tty_rc, not 1"; }
[[ $(grep -o -F "$prompt" "$root/wrong.tty" | wc -l) == 3 ]] ||
    { show "$root/wrong.tty"; fail "three wrong passwords: the password was not asked exactly three times"; }
[[ $(grep -o -F "the keyring's password was not accepted" "$root/wrong.tty" | wc -l) == 3 ]] ||
    { show "$root/wrong.tty"; fail "three wrong passwords: not each refusal is said"; }
[[ $(grep -o -F "; try again" "$root/wrong.tty" | wc -l) == 2 ]] ||
    { show "$root/wrong.tty"; fail "three wrong passwords: the first two refusals do not ask again"; }
not_shown wrong "${wrong[@]}"
collection_locked || fail "three wrong passwords unlocked the collection"
python3 "$pty_run" --check "$root/wrong.tty" || { show "$root/wrong.tty"; fail "the terminal got control bytes"; }
pass "three wrong passwords: each refused, exit 1, the collection still locked, nothing echoed"

# --- An empty line: nothing is sent ---------------------------------------------------
tty_unlock empty --answer "$prompt" ""
[[ $tty_rc == 1 ]] || { show "$root/empty.tty"; fail "an empty line: exit $tty_rc, not 1"; }
grep -qF 'no password typed' "$root/empty.tty" || { show "$root/empty.tty"; fail "an empty line: not said"; }
collection_locked || fail "an empty line unlocked the collection"
pass "an empty line cancels"

# --- A wrong password, then the right one, the session bus watched -------------------------
monitor=$root/bus.txt
dbus-monitor --session >"$monitor" 2>&1 &
monitor_pid=$!
on_exit "kill $monitor_pid 2>/dev/null || true"
# mark NAME: a signal sent (again, until the monitor is listening) and
# waited for until the monitor has shown it.
mark() {
    for _ in $(seq 1 400); do
        dbus-send --session --type=signal / "io.hostkeeper.Test.$1"
        grep -q "member=$1" "$monitor" && return 0
        sleep 0.05
    done
    die "dbus-monitor did not show the signal $1"
}
# A new daemon, so that its Secret Service session is opened on the watched bus.
"$bin/hostkeeper" stop >/dev/null 2>&1 || true
mark Before
tty_unlock right --answer "$prompt" "${wrong[0]}" --answer "$prompt" "$HK_KEYRING_PASSWORD"
mark After
kill "$monitor_pid" 2>/dev/null || true
[[ $tty_rc == 0 ]] || { show "$root/right.tty"; fail "the right password: exit $tty_rc, not 0"; }
grep -qF "the Secret Service's default collection is unlocked" "$root/right.tty" ||
    { show "$root/right.tty"; fail "the right password: hostkeeper unlock does not say it unlocked"; }
not_shown right "${wrong[0]}" "$HK_KEYRING_PASSWORD"
collection_locked && fail "hostkeeper unlock succeeded, but the collection is still locked"
[[ $("$helper" get "$host") == "{\"token\":\"$token\"}" ]] ||
    fail "after the unlock, the helper does not give the stored token"
pass "a wrong password, then the right one: unlocked, and the helper gets the token"

grep -q 'member=UnlockWithMasterPassword' "$monitor" || fail "the bus shows no UnlockWithMasterPassword call"
sessions=$(grep -A1 'member=OpenSession' "$monitor" || true)
[[ $sessions == *'"dh-ietf1024-sha256-aes128-cbc-pkcs7"'* ]] ||
    { echo "$sessions"; fail "no encrypted Secret Service session was opened"; }
# dbus-monitor shows a byte array as text when it is printable, else as hex.
for word in "$HK_KEYRING_PASSWORD" "${wrong[0]}"; do
    grep -qF -- "$word" "$monitor" && fail "the bus carried the password as text"
    python3 - "$monitor" "$word" <<'PY' || fail "the bus carried the password's bytes"
import re, sys
text = open(sys.argv[1]).read()
arrays = re.findall(r"array of bytes \[([0-9a-f\s]*)\]", text)
sys.exit(1 if any(sys.argv[2].encode().hex() in "".join(a.split()) for a in arrays) else 0)
PY
done
pass "on the session bus, the password went encrypted in a dh-ietf1024-sha256-aes128-cbc-pkcs7 session"

# --- No password in any file ------------------------------------------------------------
"$bin/hostkeeper" stop >/dev/null 2>&1 || true
for word in "$HK_KEYRING_PASSWORD" "${wrong[@]}"; do
    found=$(grep -rlF -D skip -- "$word" "$HK_TEST_ROOT" 2>/dev/null || true)
    [[ -z $found ]] || fail "a password is written in $found"
done
pass "no password is in any file of the world"

echo "PASS: hostkeeper unlock asks for the keyring's password on a terminal where no prompt can be shown"
