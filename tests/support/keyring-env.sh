#!/usr/bin/env bash
# keyring-env.sh [--no-keyring] [--] COMMAND [ARGS...]
#
# Runs COMMAND in a throw-away world: its own HOME and XDG directories, a
# private D-Bus session bus whose configuration has no service directories
# (so nothing can be started by bus activation, in particular not a second
# keyring daemon), and, unless --no-keyring, a real gnome-keyring-daemon
# (secrets component) owning org.freedesktop.secrets with a "login"
# collection unlocked by a throw-away password. Nothing here can reach the
# real user's keyring, socket or configuration. Everything it started is
# stopped on exit; COMMAND's exit status is returned.
#
# Exported for COMMAND: HOME, XDG_*, DBUS_SESSION_BUS_ADDRESS, and
# HK_TEST_ROOT (the throw-away root), HK_KEYRING_PID, HK_BUS_PID,
# HK_KEYRING_PASSWORD (the login collection's throw-away password).
set -euo pipefail
# shellcheck source=own_runtime.sh
source "$(dirname "$0")/own_runtime.sh" "$0" "$@"

keyring=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-keyring) keyring=0; shift ;;
        --) shift; break ;;
        *) break ;;
    esac
done
[[ $# -gt 0 ]] || { echo "usage: $0 [--no-keyring] [--] COMMAND [ARGS...]" >&2; exit 2; }

for tool in dbus-daemon dbus-send; do
    command -v "$tool" >/dev/null || { echo "keyring-env: $tool is missing (apt-get install dbus)" >&2; exit 2; }
done
if [[ $keyring == 1 ]] && ! command -v gnome-keyring-daemon >/dev/null; then
    echo "keyring-env: gnome-keyring-daemon is missing (apt-get install gnome-keyring)" >&2
    exit 2
fi

root=$(mktemp -d /tmp/hk-test.XXXXXX)
chmod 700 "$root"
export HK_TEST_ROOT="$root"
export HOME="$root/home" XDG_RUNTIME_DIR="$root/run" XDG_CONFIG_HOME="$root/config"
export XDG_DATA_HOME="$root/data" XDG_CACHE_HOME="$root/cache" XDG_STATE_HOME="$root/state"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_STATE_HOME"
chmod 700 "$XDG_RUNTIME_DIR"
unset HOSTKEEPER_SOCKET TF_CLI_CONFIG_FILE DISPLAY WAYLAND_DISPLAY NOTIFY_SOCKET LISTEN_FDS LISTEN_PID
world_socket
unset JOURNAL_STREAM GNOME_KEYRING_CONTROL SSH_AUTH_SOCK

cleanup() {
    local rc=$?
    # Daemons the helper started on demand live in their own session: find
    # them by the socket path under our root.
    pkill -KILL -f "hostkeeperd.*$root" 2>/dev/null || true
    [[ -n "${HK_KEYRING_PID:-}" ]] && kill "$HK_KEYRING_PID" 2>/dev/null || true
    [[ -n "${HK_BUS_PID:-}" ]] && kill "$HK_BUS_PID" 2>/dev/null || true
    sleep 0.05
    rm -rf "$root" 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
child=
trap '[[ -n "$child" ]] && kill -TERM "$child" 2>/dev/null; exit 130' INT TERM

cat >"$root/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$root/run/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$root/bus.conf" --fork --print-address=3 --print-pid=4 \
    3>"$root/bus.address" 4>"$root/bus.pid"
HK_BUS_PID=$(head -n1 "$root/bus.pid")
DBUS_SESSION_BUS_ADDRESS=$(head -n1 "$root/bus.address")
export HK_BUS_PID DBUS_SESSION_BUS_ADDRESS

bus_call() {
    dbus-send --session --print-reply=literal --reply-timeout=2000 "$@" 2>/dev/null
}

if [[ $keyring == 1 ]]; then
    export HK_KEYRING_PASSWORD=throw-away-password
    printf '%s' "$HK_KEYRING_PASSWORD" | \
        gnome-keyring-daemon --foreground --components=secrets --unlock >"$root/keyring.log" 2>&1 &
    export HK_KEYRING_PID=$!
    # --unlock returns before the daemon owns org.freedesktop.secrets and has
    # made its login collection the default: wait for both.
    ready=0
    for _ in $(seq 1 200); do
        if bus_call --dest=org.freedesktop.DBus /org/freedesktop/DBus \
                org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets | grep -q true; then
            alias=$(bus_call --dest=org.freedesktop.secrets /org/freedesktop/secrets \
                org.freedesktop.Secret.Service.ReadAlias string:default || true)
            if [[ -n "$alias" && "$alias" != *"/org/freedesktop/secrets/collection/"*"/"* && "$alias" == *collection* ]]; then
                ready=1
                break
            fi
        fi
        sleep 0.05
    done
    if [[ $ready != 1 ]]; then
        echo "keyring-env: gnome-keyring-daemon did not become ready; its log:" >&2
        cat "$root/keyring.log" >&2
        exit 2
    fi
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
