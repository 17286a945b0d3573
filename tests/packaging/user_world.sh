# user_world.sh — sourced by the tests that need a real systemd user manager
# (user_manager.sh, removal.sh). Sourcing it builds the world and arms its
# removal (trap on EXIT), or exits 77 (skipped) where it cannot be built:
#
# a throw-away user ($user, $uid, $gid) with a home ($home) under $world (in
# /run, not /tmp: the unit's PrivateTmp= hides /tmp), its /run/user/UID
# ($runtime), and `systemd --user` for it (pid $manager) with its own D-Bus
# session bus (dbus-user-session) and a gnome-keyring-daemon unlocked with a
# throw-away password. gnome-keyring's own user units are masked for the user
# (they would race ours for org.freedesktop.secrets).
#
# Where PID 1 is not systemd (containers, CI) it does what logind and
# user@.service would: /run/systemd/system (sd_booted()),
# /run/systemd/unit-root (the mount point systemd's namespacing needs), a
# cgroup the user owns under this process's own, in each hierarchy systemd
# uses, and a mount namespace for the manager in which /run is a mount point.
# All of that, the user, whatever it still runs and the manager are removed
# on exit, pass or fail; a test adds its own steps with `on_exit COMMAND`.
#
# While /run/systemd/system exists, every process believes systemd is PID 1:
# ctest runs the tests that source this RUN_SERIAL.
#
# Provides: as_user CMD... (runs CMD as the user, in its session environment),
# install_units SOURCE_DIR BIN_DIR (the source tree's units, starting BIN_DIR's
# binaries copied to $world/bin, in the user's ~/.config/systemd/user),
# hostkeeper and helper (those copies, as the user), unit_show UNIT PROPERTY,
# json_get PATH, mount_options MOUNT_POINT (of process $pid),
# and tests/support/script_lib.sh (fail also prints the units' status).
# shellcheck shell=bash

# shellcheck source=../support/script_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/script_lib.sh"
[[ $(id -u) -eq 0 ]] || skip "needs root: it creates a throw-away user and runs systemd --user for it"
manager_binary=/lib/systemd/systemd
[[ -x $manager_binary ]] || die "$manager_binary is missing (packaging/deps.sh test installs systemd)"
[[ -f /usr/lib/systemd/user/dbus.socket ]] ||
    die "dbus-user-session is missing (packaging/deps.sh test installs it)"
need systemctl systemd-run setpriv unshare useradd userdel gnome-keyring-daemon dbus-send

fail_details() {
    if [[ -n ${uid:-} ]] && [[ -S ${runtime:-/nonexistent}/systemd/private ]]; then
        echo "--- systemctl --user status hostkeeperd.socket hostkeeperd.service"
        as_user systemctl --user --no-pager status hostkeeperd.socket hostkeeperd.service 2>&1 || true
    fi
}

# --- The world, and its removal ---------------------------------------------------------
# Not under /tmp: the unit's PrivateTmp= hides /tmp from hostkeeperd.
world=$(mktemp -d /run/hk-user-world.XXXXXX)
chmod 755 "$world"
user=hk-um-$(basename "$world" | cut -d. -f2 | tr 'A-Z' 'a-z')
uid='' gid='' runtime='' manager='' created_dirs=() cgroups=()

# The first clean-up step, so the last to run: the tests' own steps come before.
remove_world() {
    if [[ -n $manager ]]; then
        kill -TERM "$manager" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$manager" 2>/dev/null || break; sleep 0.05; done
    fi
    # Whatever the user still runs (the manager's services, an on-demand daemon).
    if [[ -n $uid ]]; then
        for cg in "${cgroups[@]}"; do
            [[ -f $cg/cgroup.kill ]] && echo 1 >"$cg/cgroup.kill"
        done
        pkill -KILL -U "$uid" 2>/dev/null
        for _ in $(seq 1 100); do pgrep -U "$uid" >/dev/null || break; sleep 0.05; done
    fi
    for ((i = ${#cgroups[@]} - 1; i >= 0; i--)); do
        find "${cgroups[i]}" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    for ((i = ${#created_dirs[@]} - 1; i >= 0; i--)); do rmdir "${created_dirs[i]}" 2>/dev/null; done
    [[ -n $runtime ]] && rm -rf "$runtime"
    id "$user" >/dev/null 2>&1 && userdel "$user"
    rm -rf "$world"
}
on_exit remove_world
trap 'exit 130' INT TERM

# A test may set user_world_home_parent=/home before sourcing: the home is
# then where users' homes are, so that ProtectHome= applies to it as it does
# on a real machine (under /run it does not).
if [[ -n ${user_world_home_parent:-} ]]; then
    home=$(mktemp -d "$user_world_home_parent/hk-user-world.XXXXXX")
    on_exit rm -rf "$home"
else
    home=$world/home
fi
useradd --system --user-group --no-create-home --home-dir "$home" --shell /usr/sbin/nologin "$user" ||
    die "useradd $user failed"
uid=$(id -u "$user")
gid=$(id -g "$user")
runtime=/run/user/$uid
mkdir -p "$home"
[[ -d /run/user ]] || { mkdir -m 755 /run/user && created_dirs+=(/run/user); }
mkdir -m 700 "$runtime"
chown "$user:" "$home" "$runtime"

as_user() {
    (cd / && setpriv --reuid="$uid" --regid="$gid" --init-groups /usr/bin/env -i HOME="$home" USER="$user" \
        LOGNAME="$user" PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="$runtime" \
        DBUS_SESSION_BUS_ADDRESS="unix:path=$runtime/bus" \
        ${HOSTKEEPER_PORT_SOCKET:+HOSTKEEPER_PORT_SOCKET="$HOSTKEEPER_PORT_SOCKET"} "$@")
}
# The copies install_units makes, run as the user; a unit's property; a
# JSON document's value at a dotted path (stdin); the mount options of a
# mount point in the namespace of process $pid.
hostkeeper() { as_user "$world/bin/hostkeeper" "$@"; }
helper() { as_user "$world/bin/terraform-credentials-hostkeeper" "$@"; }
unit_show() { as_user systemctl --user show -p "$2" --value "$1"; }
json_get() {
    python3 -c 'import json, sys; d = json.load(sys.stdin)
for k in sys.argv[1].split("."): d = d[k]
print(json.dumps(d) if not isinstance(d, str) else d)' "$1"
}
mount_options() { awk -v p="$1" '$5 == p { print $6 }' "/proc/${pid:?set pid to the process whose mounts to read}/mountinfo" | tail -1; }

# --- The user manager ---------------------------------------------------------------------
if [[ $(readlink /proc/1/exe 2>/dev/null) == */systemd ]]; then
    skip "PID 1 is systemd here: this test builds the user's world by hand, which would compete with logind"
fi
# What PID 1 would have made.
for dir in /run/systemd /run/systemd/system /run/systemd/unit-root; do
    [[ -d $dir ]] || { mkdir -m 755 "$dir" && created_dirs+=("$dir"); }
done
# A cgroup the user owns, below this process's own, in each hierarchy
# systemd uses: cgroup2 alone, or name=systemd (v1) plus cgroup2 at
# /sys/fs/cgroup/unified where mounted (hybrid).
own_cgroup() { sed -n "s|^[0-9]*:$1:||p" /proc/self/cgroup | head -1; }
if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]; then
    cgroups+=("/sys/fs/cgroup$(own_cgroup '')/hk-user-manager-$uid")
elif [[ -d /sys/fs/cgroup/systemd ]]; then
    cgroups+=("/sys/fs/cgroup/systemd$(own_cgroup name=systemd)/hk-user-manager-$uid")
    [[ $(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null) == cgroup2fs ]] &&
        cgroups+=("/sys/fs/cgroup/unified$(own_cgroup '')/hk-user-manager-$uid")
else
    skip "no cgroup hierarchy systemd could use at /sys/fs/cgroup"
fi
for cg in "${cgroups[@]}"; do
    mkdir "$cg" 2>/dev/null || skip "cannot create the cgroup $cg (read-only cgroup file system?)"
    chown -R "$user:" "$cg"
done

# gnome-keyring's own user units would race ours for org.freedesktop.secrets.
mkdir -p "$home/.config/systemd/user"
ln -s /dev/null "$home/.config/systemd/user/gnome-keyring-daemon.socket"
ln -s /dev/null "$home/.config/systemd/user/gnome-keyring-daemon.service"
mkdir -p "$home/.config/hostkeeper"
chown -R "$user:" "$home"

# A test may set user_world_port_socket=SOCKET before sourcing (a test
# world's hostkeeper-portd, support/port-env.sh): the user manager then sees
# it at /run/hostkeeper/port.sock, the one path a daemon in a user namespace
# that does not map root (the unit's PrivateUsers=) uses, on a tmpfs of the
# manager's own mount namespace.
port_mounts=:
if [[ -n ${user_world_port_socket:-} ]]; then
    [[ -d /run/hostkeeper ]] || { mkdir -m 755 /run/hostkeeper && created_dirs+=(/run/hostkeeper); }
    port_mounts="mount -t tmpfs -o mode=0755,size=64k tmpfs /run/hostkeeper &&
        touch /run/hostkeeper/port.sock && mount --bind '$user_world_port_socket' /run/hostkeeper/port.sock"
fi
(
    for cg in "${cgroups[@]}"; do echo "$BASHPID" >"$cg/cgroup.procs"; done
    cd /
    # In a mount namespace of its own where /run is a mount point, as it is
    # (a tmpfs) wherever systemd is PID 1: the units' ProtectKernelTunables=
    # implies MountAPIVFS=, which puts an empty tmpfs on /run when /run is
    # not mounted yet, hiding $XDG_RUNTIME_DIR from hostkeeperd.
    exec unshare --mount --propagation slave /bin/sh -c "mount --bind /run /run && $port_mounts && exec \"\$@\"" sh \
        setpriv --reuid="$uid" --regid="$gid" --init-groups /usr/bin/env -i HOME="$home" USER="$user" \
        LOGNAME="$user" PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="$runtime" "$manager_binary" --user
) </dev/null >"$world/manager.log" 2>&1 &
manager=$!
state=
for _ in $(seq 1 200); do
    state=$(as_user systemctl --user is-system-running 2>/dev/null) && break
    [[ $state == degraded ]] && break
    kill -0 "$manager" 2>/dev/null || break
    sleep 0.05
done
[[ $state == running || $state == degraded ]] || {
    cat "$world/manager.log"
    die "systemd --user did not come up (state '$state')"
}
pass "systemd --user runs for $user (uid $uid, manager pid $manager, $state)"

# A keyring as a login would leave it: gnome-keyring-daemon unlocked with the
# user's (throw-away) password, owning org.freedesktop.secrets on the user's bus.
as_user systemd-run --user --quiet --unit=hk-test-keyring /bin/sh -c \
    'printf %s throw-away-password | exec gnome-keyring-daemon --foreground --components=secrets --unlock'
bus_call() { as_user dbus-send --session --print-reply=literal --reply-timeout=2000 "$@" 2>/dev/null; }
ready=0
for _ in $(seq 1 200); do
    # NameHasOwner first: a call to org.freedesktop.secrets before ours owns
    # it would have the bus start a second, locked gnome-keyring-daemon.
    bus_call --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner \
        string:org.freedesktop.secrets | grep -q true || { sleep 0.05; continue; }
    alias=$(bus_call --dest=org.freedesktop.secrets /org/freedesktop/secrets \
        org.freedesktop.Secret.Service.ReadAlias string:default || true)
    if [[ $alias == *collection* && $alias != *"/org/freedesktop/secrets/collection/"*"/"* ]]; then
        ready=1
        break
    fi
    sleep 0.05
done
[[ $ready == 1 ]] || die "gnome-keyring-daemon did not become ready on the user's bus"
pass "the user's bus and an unlocked keyring"


install_units() {
    mkdir "$world/bin"
    cp "$2/hostkeeperd" "$2/hostkeeper" "$2/terraform-credentials-hostkeeper" "$world/bin/"
    chmod 755 "$world/bin" "$world/bin"/*
    sed "s|@CMAKE_INSTALL_FULL_BINDIR@|$world/bin|" "$1/packaging/systemd/hostkeeperd.service.in" \
        >"$home/.config/systemd/user/hostkeeperd.service"
    cp "$1/packaging/systemd/hostkeeperd.socket" "$home/.config/systemd/user/"
    chown "$user:" "$home/.config/systemd/user/hostkeeperd.service" "$home/.config/systemd/user/hostkeeperd.socket"
}
