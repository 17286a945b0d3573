# tests/e2e/keyring_world.sh — sourced by the item helpers' end-to-end
# libraries (docker_lib.sh, git_lib.sh) after script_lib.sh and bin_dir:
# chooses the keyring backend from the world the script runs in, makes its
# directory and a hostkeeper configuration for that backend, and stops any
# daemon of this world. Sets backend, world_root, store (pass), root
# ($world_root/$e2e_name) and config.
#   tests/support/keyring-env.sh SCRIPT BIN_DIR   the Secret Service (gnome-keyring)
#   tests/support/pass-env.sh SCRIPT BIN_DIR      pass (no D-Bus)
# shellcheck shell=bash

if [[ -n "${HK_PASS_ROOT:-}" && -z "${DBUS_SESSION_BUS_ADDRESS:-}" ]]; then
    backend=pass
    world_root=$HK_PASS_ROOT
    store=$HOME/.password-store
    [[ -f $store/.gpg-id ]] || die "no pass store at $store"
elif [[ -n "${HK_TEST_ROOT:-}" && -n "${DBUS_SESSION_BUS_ADDRESS:-}" ]]; then
    backend=secret-service
    world_root=$HK_TEST_ROOT
    command -v secret-tool >/dev/null || die "secret-tool is missing (apt-get install libsecret-tools)"
else
    die "run me through tests/support/keyring-env.sh or tests/support/pass-env.sh"
fi
root=$world_root/${e2e_name:?set e2e_name before sourcing keyring_world.sh}
mkdir -p "$root"
config=$XDG_CONFIG_HOME/hostkeeper/config.toml
mkdir -p "$(dirname "$config")"
# unlock_timeout: a locked keyring's unlock prompt (nobody answers it here)
# is given up soon.
printf '[keyring]\nbackend = "%s"\nunlock_timeout = "2s"\n' "$backend" >"$config"
"${bin:?bin_dir first}/hostkeeper" stop >/dev/null 2>&1 || true
echo "keyring backend: $backend"
