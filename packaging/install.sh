#!/usr/bin/env bash
# packaging/install.sh — installs the Debian packages hostkeeper needs, builds
# it, installs it under /usr/local, and starts it for the invoking user (the
# user behind sudo, else the current one). Re-running it upgrades in place.
#   PREFIX=/usr/local BUILD_DIR=build-release ./packaging/install.sh
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${PREFIX:-/usr/local}
build=${BUILD_DIR:-build-release}

sudo=()
[[ $(id -u) -ne 0 ]] && sudo=(sudo)

./packaging/deps.sh build
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHOSTKEEPER_BUILD_TESTS=OFF \
    -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build "$build" -j"$(nproc)"
"${sudo[@]}" cmake --install "$build" >/dev/null
echo "installed hostkeeperd, hostkeeper and terraform-credentials-hostkeeper in $prefix/bin"

user=${SUDO_USER:-$(id -un)}
uid=$(id -u "$user")
home=$(getent passwd "$user" | cut -d: -f6)
as_user=()
[[ $(id -u) -ne $uid ]] && as_user=("${sudo[@]}" runuser -u "$user" --)
runtime=/run/user/$uid
user_env=(env HOME="$home")
if [[ -d $runtime ]]; then
    user_env+=(XDG_RUNTIME_DIR="$runtime")
    [[ -S $runtime/bus ]] && user_env+=(DBUS_SESSION_BUS_ADDRESS="unix:path=$runtime/bus")
fi
if [[ $(id -u) -eq $uid ]]; then
    user_env=(env)  # already the user, with the user's session environment
fi

# Terraform looks for credentials helpers only in per-user plugin directories.
"${as_user[@]}" mkdir -p "$home/.terraform.d/plugins"
"${as_user[@]}" ln -sfn "$prefix/bin/terraform-credentials-hostkeeper" \
    "$home/.terraform.d/plugins/terraform-credentials-hostkeeper"
echo "linked the helper into $home/.terraform.d/plugins/"

# Restart whatever runs now so the new binary serves.
"${as_user[@]}" "${user_env[@]}" "$prefix/bin/hostkeeper" stop >/dev/null 2>&1 || true
if "${as_user[@]}" "${user_env[@]}" systemctl --user daemon-reload 2>/dev/null; then
    "${as_user[@]}" "${user_env[@]}" systemctl --user enable --now hostkeeperd.socket
    "${as_user[@]}" "${user_env[@]}" systemctl --user restart hostkeeperd.service 2>/dev/null || true
    echo "enabled hostkeeperd.socket in $user's systemd user manager"
else
    echo "no systemd user manager for $user: the helper starts hostkeeperd on demand"
fi
"${as_user[@]}" "${user_env[@]}" "$prefix/bin/hostkeeper" start
"${as_user[@]}" "${user_env[@]}" "$prefix/bin/hostkeeper" status || true

cat <<MSG

To make Terraform and OpenTofu use it, add this block to $home/.terraformrc
(and $home/.tofurc for OpenTofu):

    credentials_helper "hostkeeper" {}

Then 'terraform login HOST' stores tokens in your keyring instead of
credentials.tfrc.json.
MSG
