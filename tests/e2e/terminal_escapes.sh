#!/usr/bin/env bash
# terminal_escapes.sh BIN_DIR
#
# End to end: text from elsewhere reaches the user's terminal, and
# hostkeeperd's log, only as printable text. The real binaries run on a
# pseudo-terminal (tests/support/pty_run.py: it is their controlling
# terminal, their stdout and their stderr, with no output translation), and
# every byte the terminal got is checked: none below 0x20 but \n, no DEL,
# no C1 control (the 8-bit CSI 0x9b, or U+0080-U+009F in UTF-8).
#   - a token command whose standard error is ESC ] 0 ; PWNED BEL ESC [ 2 J,
#     CR, DEL, U+009B and a lone 0x9b: terraform-credentials-hostkeeper get
#     (its stderr and its /dev/tty line), then hostkeeper status;
#   - git-credential-hostkeeper given a host= with ESC, BEL and CR, and a
#     url= whose host git would percent-decode to ESC and BEL;
#   - hostkeeperd's own log (--log-level debug, on stderr), which logs each
#     failed request's reason.
# Each still says what it said (PWNED, the host, the reason), as text.
#
# Run it inside tests/support/keyring-env.sh:
#   tests/support/keyring-env.sh tests/e2e/terminal_escapes.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../support" && pwd)
# shellcheck source=../support/script_lib.sh
source "$support/script_lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
[[ -n "${HK_TEST_ROOT:-}" && -d "$HK_TEST_ROOT" ]] ||
    die "HK_TEST_ROOT is not set: run me through tests/support/keyring-env.sh"
bin_dir "$1" terraform-credentials-hostkeeper git-credential-hostkeeper hostkeeperd hostkeeper
need python3
pty_run=$support/pty_run.py
root=$HK_TEST_ROOT/e2e-terminal-escapes
mkdir -p "$root"
unset HOSTKEEPER_NO_TTY

host=tokens.example.com
socket=$XDG_RUNTIME_DIR/hostkeeper/socket

# --- A token command that prints escape sequences on stderr --------------------------
mkdir -p "$HOME/token-commands" "$XDG_CONFIG_HOME/hostkeeper"
chmod 700 "$HOME/token-commands"
command=$HOME/token-commands/hostile.sh
# ESC]0;PWNED BEL (the window title), ESC[2J (erase the screen), CR, DEL,
# U+009B (CSI as UTF-8) and a lone 0x9b (the 8-bit CSI), then "tail".
cat >"$command" <<'SH'
#!/bin/sh
printf '\033]0;PWNED\007\033[2J\r\177\302\2332J\2332J tail\n' >&2
exit 1
SH
chmod 700 "$command"
printf '[hosts."%s"]\ntoken_command = ["%s"]\n' "$host" "$command" \
    >"$XDG_CONFIG_HOME/hostkeeper/config.toml"
chmod 600 "$XDG_CONFIG_HOME/hostkeeper/config.toml"

# hostkeeperd by hand, its log on stderr to a file.
"$bin/hostkeeperd" --log-level debug 2>"$root/daemon.log" &
daemon_pid=$!
stop_daemon() {
    kill "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
}
on_exit stop_daemon
for _ in $(seq 1 200); do
    [[ -S $socket ]] && break
    kill -0 "$daemon_pid" 2>/dev/null || { show "$root/daemon.log"; fail "hostkeeperd died at start-up"; }
    sleep 0.05
done
[[ -S $socket ]] || { show "$root/daemon.log"; fail "hostkeeperd made no socket at $socket within 10 s"; }

# on_pty NAME [--stdin FILE] COMMAND...: COMMAND on a new terminal; what the
# terminal got is $root/NAME.tty, COMMAND's status is $status.
on_pty() {
    local name=$1
    shift
    status=0
    if [[ $1 == --stdin ]]; then
        python3 "$pty_run" --stdin "$2" "$root/$name.tty" -- "${@:3}" || status=$?
    else
        python3 "$pty_run" "$root/$name.tty" -- "$@" || status=$?
    fi
}

# printable NAME WHAT: every byte of $root/NAME.tty is printable text.
printable() {
    python3 "$pty_run" --check "$root/$1.tty" || { show "$root/$1.tty"; fail "$2"; }
}

contains() {
    grep -qF -- "$2" "$root/$1.tty" || { show "$root/$1.tty"; fail "$3"; }
}

# --- The credentials helper: stderr and the /dev/tty line ----------------------------
on_pty helper "$bin/terraform-credentials-hostkeeper" get "$host"
[[ $status == 1 ]] || { show "$root/helper.tty"; fail "the helper's get exited $status, not 1"; }
contains helper "hostkeeper: no credentials for $host: " "the terminal did not get the helper's /dev/tty line"
contains helper "terraform-credentials-hostkeeper: token_command for $host" \
    "the terminal did not get the helper's error on stderr"
contains helper "PWNED" "the command's stderr is not quoted"
contains helper "tail" "the command's stderr is cut short"
[[ $(grep -c PWNED "$root/helper.tty") == 2 ]] ||
    { show "$root/helper.tty"; fail "the terminal did not get both the stderr and the /dev/tty line"; }
printable helper "a token command's escape sequences reached the terminal through the credentials helper"
pass "terraform-credentials-hostkeeper get: stderr and the /dev/tty line quote the command as text"

# --- hostkeeper status --------------------------------------------------------------
on_pty status "$bin/hostkeeper" status
[[ $status == 0 ]] || { show "$root/status.tty"; fail "hostkeeper status exited $status"; }
contains status "token command: $host, 1 runs; FAILED: " "status does not show the command's failure"
contains status "PWNED" "status does not quote the command's stderr"
printable status "a token command's escape sequences reached the terminal through hostkeeper status"
on_pty status-json "$bin/hostkeeper" status --json
[[ $status == 0 ]] || { show "$root/status-json.tty"; fail "hostkeeper status --json exited $status"; }
contains status-json "PWNED" "status --json does not quote the command's stderr"
printable status-json "a token command's escape sequences reached the terminal through hostkeeper status --json"
pass "hostkeeper status (and --json) quotes the command's failure as text"

# --- The git helper: a hostile host= and url= -------------------------------------
printf 'protocol=https\nhost=ev\033]0;PWNED\007il\r.example.com\n\n' >"$root/git-host.in"
on_pty git-host --stdin "$root/git-host.in" "$bin/git-credential-hostkeeper" get
[[ $status == 1 ]] || { show "$root/git-host.tty"; fail "the git helper's get of a hostile host= exited $status, not 1"; }
contains git-host "git-credential-hostkeeper: " "the git helper said nothing of the hostile host="
contains git-host "PWNED" "the git helper's error does not quote the host"
printable git-host "the git helper echoed a hostile host= with its control bytes"
printf 'url=https://ev%%1b]0;PWNED%%07il.example.com/repo.git\n\n' >"$root/git-url.in"
on_pty git-url --stdin "$root/git-url.in" "$bin/git-credential-hostkeeper" get
[[ $status == 1 ]] || { show "$root/git-url.tty"; fail "the git helper's get of a hostile url= exited $status, not 1"; }
contains git-url "PWNED" "the git helper's error does not quote the url='s host"
printable git-url "the git helper echoed the percent-decoded host of a url= with its control bytes"
pass "git-credential-hostkeeper: a hostile host= and url= are quoted as text"

# --- hostkeeperd's log ---------------------------------------------------------------
cp "$root/daemon.log" "$root/daemon-log.tty"
contains daemon-log "PWNED" "hostkeeperd's debug log does not have the failed requests"
printable daemon-log "hostkeeperd's log holds the control bytes of text from elsewhere"
pass "hostkeeperd's log quotes text from elsewhere as text"

echo "PASS: text from elsewhere reaches the terminal and the log only as printable text"
