#!/usr/bin/env bash
# packaging/install.sh — builds hostkeeper's Debian package, installs it with
# apt, and sets it up for the invoking user (the user behind sudo, else the
# current one): `hostkeeper setup` (helper link, credentials_helper block,
# socket unit), then starts the daemon and runs `hostkeeper doctor`.
# Re-running it upgrades in place (the package is reinstalled, the running
# daemon replaced). Copies an older install.sh left under /usr/local are
# removed: /usr/local/bin comes before /usr/bin on PATH.
#   BUILD_DIR=build-release ./packaging/install.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-release}

sudo=()
[[ $(id -u) -ne 0 ]] && sudo=(sudo)

# --- Build the package ------------------------------------------------------------
./packaging/deps.sh build
mkdir -p "$build"
log=$(realpath "$build")/build.log
echo "building hostkeeper in $build: the first build takes about 10 to 15 minutes on 2 cores"
echo "(a rebuild only what changed); the compiler's output is kept in $log"
started=$SECONDS
# The build in the background, its progress ("[ 42%]" in the log) shown meanwhile:
# on one line in a terminal, a line a minute elsewhere.
{
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOSTKEEPER_BUILD_TESTS=OFF \
        -DCMAKE_INSTALL_PREFIX=/usr && cmake --build "$build" -j"$(nproc)"
} >"$log" 2>&1 &
building=$!
shown=0
while kill -0 "$building" 2>/dev/null; do
    sleep 1
    percent=$(grep -oE '^\[ *[0-9]+%\]' "$log" | tail -n 1 | tr -dc '0-9')
    elapsed=$((SECONDS - started))
    if [[ -t 1 ]]; then
        printf '\r  %3s%% built, %dm%02ds' "${percent:-0}" $((elapsed / 60)) $((elapsed % 60))
    elif ((elapsed - shown >= 60)); then
        shown=$elapsed
        echo "  ${percent:-0}% built after $((elapsed / 60)) min"
    fi
done
[[ -t 1 ]] && echo
if ! wait "$building"; then
    echo "the build failed; the end of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
fi
echo "built in $(((SECONDS - started) / 60))m$(((SECONDS - started) % 60))s"
rm -f "$build"/hostkeeper_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
debs=("$build"/hostkeeper_*.deb)
deb=$(realpath "${debs[0]}")
echo "built $deb"

# --- Install it ---------------------------------------------------------------------
# --reinstall: the same version again replaces the files (an upgrade in place).
# --allow-downgrades: re-running from an older checkout installs that version.
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall --allow-downgrades "$deb" >/dev/null
echo "installed $(dpkg-query -W -f='${Package} ${Version}' hostkeeper): /usr/bin/hostkeeper, hostkeeperd, terraform-credentials-hostkeeper, docker-credential-hostkeeper, git-credential-hostkeeper"

# Copies from the older install.sh (cmake --install to /usr/local) would
# shadow the package's binaries. Remove only files that are hostkeeper's.
for program in hostkeeperd hostkeeper terraform-credentials-hostkeeper; do
    stale=/usr/local/bin/$program
    if [[ -f $stale ]] && "$stale" --version 2>/dev/null | grep -q "^$program "; then
        "${sudo[@]}" rm -f "$stale"
        echo "removed the stale $stale"
    fi
done
for unit in hostkeeperd.service hostkeeperd.socket; do
    stale=/usr/local/lib/systemd/user/$unit
    if [[ -f $stale ]] && grep -q '^Description=hostkeeper daemon' "$stale"; then
        "${sudo[@]}" rm -f "$stale"
        echo "removed the stale $stale"
    fi
done
[[ -d /usr/local/share/doc/hostkeeper ]] && "${sudo[@]}" rm -rf /usr/local/share/doc/hostkeeper

# --- Set it up for the user ---------------------------------------------------------
user=${SUDO_USER:-$(id -un)}
# Built as root under sudo: give the build tree back to whoever owns the clone.
owner=$(stat -c %U .)
if [[ $(id -u) -eq 0 && $owner != root ]]; then
    chown -R "$owner": "$build"
fi
uid=$(id -u "$user")
home=$(getent passwd "$user" | cut -d: -f6)
as_user=()
user_env=(env)  # already the user, with the user's session environment
if [[ $(id -u) -ne $uid ]]; then
    as_user=("${sudo[@]}" runuser -u "$user" --)
    runtime=/run/user/$uid
    user_env=(env HOME="$home")
    if [[ -d $runtime ]]; then
        user_env+=(XDG_RUNTIME_DIR="$runtime")
        [[ -S $runtime/bus ]] && user_env+=(DBUS_SESSION_BUS_ADDRESS="unix:path=$runtime/bus")
    fi
fi
in_user_session() { "${as_user[@]}" "${user_env[@]}" "$@"; }

# Stop whatever daemon runs now, so that the new binary serves.
in_user_session /usr/bin/hostkeeper stop >/dev/null 2>&1 || true
in_user_session systemctl --user daemon-reload 2>/dev/null || true

echo
echo "hostkeeper setup for $user:"
in_user_session /usr/bin/hostkeeper setup || {
    echo "hostkeeper setup did not finish (see above); fix that, then run: hostkeeper setup" >&2
    exit 1
}
if in_user_session systemctl --user is-active --quiet hostkeeperd.socket 2>/dev/null; then
    in_user_session systemctl --user restart hostkeeperd.service 2>/dev/null || true
fi
in_user_session /usr/bin/hostkeeper start

echo
echo "hostkeeper doctor:"
in_user_session /usr/bin/hostkeeper doctor || echo "(fix what doctor reports above; 'hostkeeper import' moves tokens out of credentials.tfrc.json)"
