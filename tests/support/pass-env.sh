#!/usr/bin/env bash
# pass-env.sh [--keep-world] [--no-store] [--] COMMAND [ARGS...]
#
# Runs COMMAND in a throw-away headless world for hostkeeper's `pass` backend:
# its own HOME and XDG directories, XDG_RUNTIME_DIR (0700, where hostkeeperd's
# socket goes by default), NO D-Bus at all (DBUS_SESSION_BUS_ADDRESS unset and
# no $XDG_RUNTIME_DIR/bus socket: nothing can reach a Secret Service), a
# GnuPG home of its own (GNUPGHOME=$HK_PASS_ROOT/gnupg: not ~/.gnupg, which
# gpg takes for the default home and whose agent socket it then puts in
# /run/user/UID/gnupg, shared with the real user) with its own gpg-agent,
# killed at the end (gpgconf --kill all), and four throw-away keys:
#   HK_PASS_KEY_PLAIN   no passphrase;
#   HK_PASS_KEY_OTHER   no passphrase either (a second recipient, for
#                       hostkeeper/.gpg-id);
#   HK_PASS_KEY_PRESET  passphrase $HK_PASS_PASSPHRASE, preset in gpg-agent
#                       (allow-preset-passphrase + gpg-preset-passphrase on the
#                       encryption subkey's keygrip): decrypts without a prompt;
#   HK_PASS_KEY_LOCKED  passphrase $HK_PASS_LOCKED_PASSPHRASE, NOT cached:
#                       decrypting needs a prompt, and the agent's
#                       pinentry-program is a script that fails, so nothing can
#                       ever prompt. (Not the PRESET key's passphrase: gpg-agent
#                       silently tries the last passphrase that worked on a key
#                       whose own is not cached, which would unlock it.)
# (Each is the primary key's fingerprint; HK_PASS_SUBKEY_* are the ids of
# their encryption subkeys, as `gpg --list-packets` names recipients.)
# Unless --no-store, the password store is initialised for HK_PASS_KEY_PLAIN
# (`pass init`) at the default place, ~/.password-store of the throw-away
# HOME: PASSWORD_STORE_DIR and every other PASSWORD_STORE_* setting of the
# caller are unset. git has a throw-away identity in ~/.gitconfig (for
# `pass git init`).
#
# --keep-world: keep the caller's HOME, XDG directories and D-Bus session (for
# use inside tests/support/keyring-env.sh, whose world gets the GnuPG home,
# keys and store added); only GNUPGHOME and the store are made here.
#
# Exported for COMMAND: HOME, XDG_*, GNUPGHOME, HK_PASS_* above,
# HK_PASS_ROOT (this world's root) and, unless --keep-world, HK_TEST_ROOT (the
# same root, as keyring-env.sh sets it), HK_PASS_PRESET (the
# gpg-preset-passphrase program), HK_PASS_LIB (a file COMMAND may source for
# hk_pass_make_key, hk_pass_keygrip, hk_pass_preset). hostkeeperd daemons
# started under the root, and the gpg-agent, are stopped on exit; COMMAND's
# exit status is returned. Exit 77 (skip) when gpg, gpg-agent or pass is missing.
set -euo pipefail
# shellcheck source=own_runtime.sh
source "$(dirname "$0")/own_runtime.sh" "$0" "$@"

keep_world=0 store=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --keep-world) keep_world=1; shift ;;
        --no-store) store=0; shift ;;
        --) shift; break ;;
        *) break ;;
    esac
done
[[ $# -gt 0 ]] || { echo "usage: $0 [--keep-world] [--no-store] [--] COMMAND [ARGS...]" >&2; exit 2; }

for tool in gpg gpg-agent gpgconf pass git; do
    command -v "$tool" >/dev/null ||
        { echo "SKIP: pass-env: $tool is missing (apt-get install pass gnupg git; packaging/deps.sh test)"; exit 77; }
done
preset=
for candidate in /usr/lib/gnupg/gpg-preset-passphrase /usr/lib/gnupg2/gpg-preset-passphrase \
                 /usr/libexec/gpg-preset-passphrase "$(command -v gpg-preset-passphrase || true)"; do
    [[ -n $candidate && -x $candidate ]] && { preset=$candidate; break; }
done
[[ -n $preset ]] || { echo "SKIP: pass-env: gpg-preset-passphrase is missing (apt-get install gpg-agent)"; exit 77; }

root=$(mktemp -d /tmp/hk-pass.XXXXXX)
chmod 700 "$root"
export HK_PASS_ROOT="$root"
if [[ $keep_world == 0 ]]; then
    export HK_TEST_ROOT="$root"
    export HOME="$root/home" XDG_RUNTIME_DIR="$root/run" XDG_CONFIG_HOME="$root/config"
    export XDG_DATA_HOME="$root/data" XDG_CACHE_HOME="$root/cache" XDG_STATE_HOME="$root/state"
    mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_STATE_HOME"
    chmod 700 "$XDG_RUNTIME_DIR"
    # No session bus of any kind: neither an address nor the default socket
    # ($XDG_RUNTIME_DIR/bus, absent in the new runtime dir), nor X11
    # autolaunch (no DISPLAY).
    unset DBUS_SESSION_BUS_ADDRESS DISPLAY WAYLAND_DISPLAY
    unset HOSTKEEPER_SOCKET TF_CLI_CONFIG_FILE NOTIFY_SOCKET LISTEN_FDS LISTEN_PID
    unset JOURNAL_STREAM GNOME_KEYRING_CONTROL SSH_AUTH_SOCK
    world_socket
else
    [[ -n "${HOME:-}" && -d "$HOME" ]] || { echo "pass-env: --keep-world without a HOME" >&2; exit 2; }
    [[ -n "${HK_TEST_ROOT:-}" && $HOME == "$HK_TEST_ROOT"/* ]] ||
        { echo "pass-env: --keep-world is for use inside keyring-env.sh (HOME must be under HK_TEST_ROOT)" >&2; exit 2; }
fi
while read -r name; do unset "$name"; done < <(compgen -e | grep '^PASSWORD_STORE_' || true)
unset GPG_TTY GPG_AGENT_INFO GIT_DIR GIT_WORK_TREE
export GIT_CONFIG_NOSYSTEM=1
export GNUPGHOME="$root/gnupg"
mkdir -p "$GNUPGHOME"
chmod 700 "$GNUPGHOME"

cleanup() {
    local rc=$?
    # Daemons started on demand live in sessions of their own: find them by
    # this world's root in their command line or environment (the socket).
    local pid
    for pid in $(pgrep -f "hostkeeperd.*$root" 2>/dev/null || true); do kill -KILL "$pid" 2>/dev/null || true; done
    if [[ $keep_world == 0 ]]; then
        for pid in $(pgrep -x hostkeeperd 2>/dev/null || true); do
            if { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF "HOME=$HOME"; then
                kill -KILL "$pid" 2>/dev/null || true
            fi
        done
    fi
    GNUPGHOME="$GNUPGHOME" gpgconf --kill all >/dev/null 2>&1 || true
    sleep 0.05
    rm -rf "$root" 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
child=
trap '[[ -n "$child" ]] && kill -TERM "$child" 2>/dev/null; exit 130' INT TERM

# A pinentry that refuses: no prompt can ever appear (or hang) in a test.
cat >"$root/pinentry-fail" <<'SH'
#!/bin/sh
echo "pinentry-fail: there is no pinentry in this test world" >&2
exit 1
SH
chmod 700 "$root/pinentry-fail"
cat >"$GNUPGHOME/gpg-agent.conf" <<CONF
allow-preset-passphrase
pinentry-program $root/pinentry-fail
default-cache-ttl 86400
max-cache-ttl 86400
CONF
printf 'trust-model always\n' >"$GNUPGHOME/gpg.conf"

cat >"$HOME/.gitconfig" <<'GIT'
[user]
	name = hostkeeper test
	email = test@hostkeeper.invalid
[init]
	defaultBranch = main
GIT

export HK_PASS_PASSPHRASE="hk-test-passphrase-$$" HK_PASS_LOCKED_PASSPHRASE="hk-test-locked-$$"
export HK_PASS_PRESET="$preset"
export HK_PASS_LIB="$root/pass-lib.sh"
cat >"$HK_PASS_LIB" <<'LIB'
# shellcheck shell=bash
# hk_pass_make_key NAME [PASSPHRASE]: an ed25519 key with a cv25519
# encryption subkey for "NAME <NAME@hostkeeper.test>"; prints its fingerprint.
# On a loaded machine gpg may give up on its agent: one more try, then
# gpg's own message.
hk_pass_make_key() {
    local name=$1 passphrase=${2:-} try errors
    for try in 1 2; do
        if errors=$(gpg --batch --quiet --pinentry-mode loopback --passphrase "$passphrase" \
            --quick-gen-key "$name <$name@hostkeeper.test>" future-default default never 2>&1); then
            gpg --batch --with-colons --list-secret-keys "$name@hostkeeper.test" |
                awk -F: '$1 == "fpr" { print $10; exit }'
            return
        fi
        [[ $try == 2 ]] || { gpgconf --kill gpg-agent; gpgconf --launch gpg-agent; }
    done
    echo "pass-env: gpg --quick-gen-key $name failed: $errors" >&2
    return 1
}
# hk_pass_subkey FPR: the key id of FPR's encryption subkey.
hk_pass_subkey() {
    gpg --batch --with-colons --list-secret-keys "$1" | awk -F: '$1 == "ssb" && $12 ~ /e/ { print $5; exit }'
}
# hk_pass_keygrip FPR: the keygrip of FPR's encryption subkey.
hk_pass_keygrip() {
    gpg --batch --with-colons --with-keygrip --list-secret-keys "$1" |
        awk -F: '$1 == "ssb" { sub_ = ($12 ~ /e/) } $1 == "grp" && sub_ { print $10; exit }'
}
# hk_pass_preset FPR PASSPHRASE: caches PASSPHRASE in gpg-agent for FPR's
# encryption subkey (no prompt will be needed to decrypt).
hk_pass_preset() {
    "$HK_PASS_PRESET" --preset "$(hk_pass_keygrip "$1")" <<<"$2"
}
# hk_pass_forget_passphrases: the agent forgets every cached passphrase
# (presets included).
hk_pass_forget_passphrases() {
    gpg-connect-agent reloadagent /bye >/dev/null
}
LIB
# shellcheck source=/dev/null
source "$HK_PASS_LIB"

# The agent started now, waited for, rather than by the first gpg (which
# gives up on it after a few seconds on a loaded machine).
gpgconf --launch gpg-agent || { echo "pass-env: gpg-agent did not start" >&2; exit 2; }

HK_PASS_KEY_PLAIN=$(hk_pass_make_key plain)
HK_PASS_KEY_OTHER=$(hk_pass_make_key other)
HK_PASS_KEY_PRESET=$(hk_pass_make_key preset "$HK_PASS_PASSPHRASE")
HK_PASS_KEY_LOCKED=$(hk_pass_make_key locked "$HK_PASS_LOCKED_PASSPHRASE")
export HK_PASS_KEY_PLAIN HK_PASS_KEY_OTHER HK_PASS_KEY_PRESET HK_PASS_KEY_LOCKED
for key in "$HK_PASS_KEY_PLAIN" "$HK_PASS_KEY_OTHER" "$HK_PASS_KEY_PRESET" "$HK_PASS_KEY_LOCKED"; do
    [[ -n $key ]] || { echo "pass-env: making the throw-away keys failed" >&2; exit 2; }
done
HK_PASS_SUBKEY_PLAIN=$(hk_pass_subkey "$HK_PASS_KEY_PLAIN")
HK_PASS_SUBKEY_OTHER=$(hk_pass_subkey "$HK_PASS_KEY_OTHER")
HK_PASS_SUBKEY_PRESET=$(hk_pass_subkey "$HK_PASS_KEY_PRESET")
HK_PASS_SUBKEY_LOCKED=$(hk_pass_subkey "$HK_PASS_KEY_LOCKED")
export HK_PASS_SUBKEY_PLAIN HK_PASS_SUBKEY_OTHER HK_PASS_SUBKEY_PRESET HK_PASS_SUBKEY_LOCKED
# Key generation with a passphrase leaves it cached: forget it, then preset
# only the PRESET key's.
hk_pass_forget_passphrases
hk_pass_preset "$HK_PASS_KEY_PRESET" "$HK_PASS_PASSPHRASE" ||
    { echo "pass-env: gpg-preset-passphrase failed" >&2; exit 2; }

if [[ $store == 1 ]]; then
    pass init "$HK_PASS_KEY_PLAIN" >/dev/null || { echo "pass-env: pass init failed" >&2; exit 2; }
fi

# In the background and waited for, so that INT/TERM reach the trap (and the
# command) at once.
set +e
"$@" &
child=$!
wait "$child"
rc=$?
set -e
exit "$rc"
