#!/usr/bin/env bash
# podman_setup.sh BIN_DIR
#
# End to end with a real client: Debian's podman logs in to a real registry
# on loopback (podman_lib.sh) with the configuration `hostkeeper setup
# --docker` writes, and nothing else: no --authfile, no REGISTRY_AUTH_FILE,
# no CONTAINERS_REGISTRIES_CONF, so podman reads /etc/containers and the
# throw-away HOME as it would a user's.
#   - Before setup, with credHelpers naming hostkeeper in
#     ~/.config/containers/auth.json (the file podman reads but never writes
#     through): hostkeeper doctor FAILs, saying podman writes the password in
#     plaintext to $XDG_RUNTIME_DIR/containers/auth.json; and podman login
#     does write it there (base64 of user:password); doctor then FAILs on
#     that file.
#   - setup --docker refuses, changing nothing, a user drop-in that is not
#     valid TOML and one that sets other credential-helpers.
#   - setup --docker adds ~/.config/containers/registries.conf.d/
#     hostkeeper.conf; doctor says ok. podman login then stores the
#     credential in the keyring through docker-credential-hostkeeper and
#     writes the password (plain or base64 of user:password) nowhere: not in
#     HOME, the XDG directories, podman's runtime or storage directories,
#     /run/containers, /tmp/podman-run-0; both with XDG_RUNTIME_DIR set and
#     without it.
#   - After a "reboot" (podman's runtime directory removed, hostkeeperd
#     stopped) podman login --get-login and an authorised podman search still
#     work: the setup persists.
#   - setup --undo --docker removes the drop-in (and the directory it
#     created); doctor no longer says ok.
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no podman,
# docker-registry, htpasswd or curl).
set -euo pipefail

e2e_name=e2e-podset  # podman refuses a runroot path over 50 characters
# shellcheck source-path=SCRIPTDIR
# shellcheck source=podman_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/podman_lib.sh"

unset CONTAINERS_REGISTRIES_CONF REGISTRY_AUTH_FILE
# podman's own runtime directory (as /tmp/podman-run-UID for a user without
# one); hostkeeperd stays on the world's socket.
export HOSTKEEPER_SOCKET=$XDG_RUNTIME_DIR/hostkeeper/socket
world_runtime=$XDG_RUNTIME_DIR
run=$root/podman-run
mkdir -m 700 "$run"
export XDG_RUNTIME_DIR=$run
hk() { timeout 120 "$bin/hostkeeper" "$@"; }
secret_b64=$(printf '%s:%s' "$user" "$password" | base64 -w0)

# secret_files: the files holding the password or base64(user:password) in
# the places podman or a credential helper might write.
secret_files() {
    local places=("$HOME" "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME" "$run" "$p" "$world_runtime")
    local place
    for place in /run/containers /tmp/podman-run-0; do
        [[ -e $place ]] && places+=("$place")
    done
    grep -rlF -D skip -e "$password" -e "$secret_b64" "${places[@]}" 2>/dev/null || true
}

# expect_no_secret WHAT
expect_no_secret() {
    local found
    found=$(secret_files)
    [[ -z $found ]] || fail "$1: the password is in $found"
    pass "$1"
}

# doctor_line PATTERN WHAT: hostkeeper doctor prints a line matching PATTERN
# (an extended regular expression).
doctor_line() {
    hk doctor >"$root/doctor.out" 2>&1 || true
    grep -qE "$1" "$root/doctor.out" || { show "$root/doctor.out"; fail "$2: hostkeeper doctor has no line matching $1"; }
    pass "$2"
}

login() {
    podman login --cert-dir "$p/certs" -u "$user" --password-stdin "$registry" <<<"$password" >"$root/login.out" 2>&1 ||
        { show "$root/login.out"; fail "podman login failed ($1)"; }
    grep -q 'Login Succeeded' "$root/login.out" || { show "$root/login.out"; fail "podman login did not say Login Succeeded ($1)"; }
}

expect_get_login() {
    local got
    got=$(podman login --get-login "$registry" 2>&1) || fail "podman login --get-login failed ($1): $got"
    [[ $got == "$user" ]] || fail "podman login --get-login printed '$got', not $user ($1)"
    pass "podman login --get-login reads the user name through the helper ($1)"
}

expect_search() {
    podman_search >"$root/search.out" 2>&1 ||
        { show "$root/search.out"; show "$root/registry.log"; fail "podman search failed ($1)"; }
    expect_authorized_search "podman search is authorised by the credential from the keyring ($1)"
}

# --- Before setup: credHelpers in ~/.config/containers/auth.json --------------------
config_auth=$XDG_CONFIG_HOME/containers/auth.json
mkdir -p "$(dirname "$config_auth")"
printf '{"credHelpers":{"%s":"hostkeeper"}}\n' "$registry" >"$config_auth"
doctor_line "^FAIL  podman: podman login writes the password in plaintext to $run/containers/auth.json .*credHelpers naming hostkeeper for $registry \($config_auth\) are read, never written through.*gone after a reboot; fix: hostkeeper setup --docker" \
    "before setup, doctor says podman login would write the password to $run/containers/auth.json"
login "before setup"
grep -qF "$secret_b64" "$run/containers/auth.json" ||
    { show "$run/containers/auth.json"; fail "podman login before setup did not write the password to $run/containers/auth.json"; }
[[ $(secret_files) == "$run/containers/auth.json" ]] ||
    fail "the search for the password found '$(secret_files)', not $run/containers/auth.json alone"
pass "podman login before setup wrote the password to $run/containers/auth.json, as doctor said (and the search finds it)"
doctor_line "^FAIL  podman: $run/containers/auth.json holds the plaintext password of $registry; fix: run hostkeeper setup --docker" \
    "doctor reports the plaintext password in $run/containers/auth.json"
rm -rf "$run/containers"

# --- setup --docker refuses what it cannot merge, changing nothing -------------------------
drop_dir=$HOME/.config/containers/registries.conf.d
drop_in=$drop_dir/hostkeeper.conf
[[ ! -e $HOME/.config/containers ]] || fail "$HOME/.config/containers exists before setup"
mkdir -p "$drop_dir"
refused() {
    local rc=0
    hk setup --docker >"$root/setup.out" 2>&1 || rc=$?
    [[ $rc == 1 ]] || { show "$root/setup.out"; fail "setup --docker with $2: exit $rc, not 1"; }
    grep -qF "$1" "$root/setup.out" || { show "$root/setup.out"; fail "setup --docker with $2 did not say: $1"; }
    grep -q 'nothing was changed' "$root/setup.out" || { show "$root/setup.out"; fail "setup --docker with $2 did not say nothing was changed"; }
    [[ ! -e $drop_in ]] || fail "setup --docker with $2 wrote $drop_in"
    pass "setup --docker refuses $2 and changes nothing"
}
printf 'credential-helpers = [\n' >"$drop_dir/10-broken.conf"
refused "$drop_dir/10-broken.conf is not valid TOML" "a drop-in that is not valid TOML"
printf 'credential-helpers = ["containers-auth.json"]\n' >"$drop_dir/10-broken.conf"
refused "$drop_dir/10-broken.conf sets credential-helpers = [\"containers-auth.json\"]" "a drop-in setting other credential-helpers"
rm -r "$HOME/.config/containers"

# --- setup --docker ---------------------------------------------------------------
hk setup --docker >"$root/setup.out" 2>&1 || { show "$root/setup.out"; fail "hostkeeper setup --docker failed"; }
grep -qF "podman: added credential-helpers = [\"hostkeeper\"] in $drop_in" "$root/setup.out" ||
    { show "$root/setup.out"; fail "setup --docker did not say it added the drop-in"; }
grep -qx 'credential-helpers = \["hostkeeper"\]' "$drop_in" || { show "$drop_in"; fail "$drop_in has no credential-helpers line"; }
[[ ! -e $HOME/.config/containers/registries.conf ]] ||
    fail "setup --docker created ~/.config/containers/registries.conf, which hides /etc/containers/registries.conf"
pass "setup --docker added $drop_in"
doctor_line "^ok    podman: credential-helpers = \[\"hostkeeper\"\] in $drop_in: logins are stored through hostkeeper" \
    "after setup, doctor says podman stores logins through hostkeeper"
hk setup --docker >"$root/setup2.out" 2>&1 || { show "$root/setup2.out"; fail "hostkeeper setup --docker a second time failed"; }
grep -qF "already stores every login through hostkeeper" "$root/setup2.out" ||
    { show "$root/setup2.out"; fail "setup --docker a second time did not say it is already set up"; }
pass "setup --docker a second time changes nothing"

# --- podman login with XDG_RUNTIME_DIR --------------------------------------------------
login "XDG_RUNTIME_DIR=$run"
expect_get "$registry" "$user" "$password" "podman login stored the credential in the $backend keyring through the helper (XDG_RUNTIME_DIR set)"
[[ ! -e $run/containers/auth.json ]] || { show "$run/containers/auth.json"; fail "podman login wrote $run/containers/auth.json"; }
expect_no_secret "podman login wrote the password to no file (XDG_RUNTIME_DIR set)"
expect_get_login "XDG_RUNTIME_DIR set"
expect_search "XDG_RUNTIME_DIR set"

# --- A reboot: the runtime directory is gone, hostkeeperd stopped -----------------------
hk stop >/dev/null 2>&1 || true
rm -rf "$run"
mkdir -m 700 "$run"
expect_get_login "after a reboot"
expect_search "after a reboot"

# --- Without XDG_RUNTIME_DIR ------------------------------------------------------------
podman logout "$registry" >"$root/logout.out" 2>&1 || { show "$root/logout.out"; fail "podman logout failed"; }
expect_absent "$registry" "podman logout removed the credential from the keyring"
(
    unset XDG_RUNTIME_DIR
    login "XDG_RUNTIME_DIR unset"
    expect_get "$registry" "$user" "$password" "podman login stored the credential in the $backend keyring through the helper (XDG_RUNTIME_DIR unset)"
    expect_no_secret "podman login wrote the password to no file (XDG_RUNTIME_DIR unset)"
    expect_get_login "XDG_RUNTIME_DIR unset"
    expect_search "XDG_RUNTIME_DIR unset"
)
expect_nothing_written_outside

# --- setup --undo --docker ----------------------------------------------------------------
hk setup --undo --docker >"$root/undo.out" 2>&1 || { show "$root/undo.out"; fail "hostkeeper setup --undo --docker failed"; }
grep -qF "removed $drop_in" "$root/undo.out" || { show "$root/undo.out"; fail "setup --undo --docker did not say it removed $drop_in"; }
[[ ! -e $drop_in && ! -e $HOME/.config/containers ]] || fail "setup --undo --docker left $drop_in or the directories it created"
pass "setup --undo --docker removed $drop_in and the directories setup created"
hk doctor >"$root/doctor.out" 2>&1 || true
! grep -q '^ok    podman:' "$root/doctor.out" || { show "$root/doctor.out"; fail "doctor still says ok for podman after --undo"; }
pass "after --undo, doctor no longer says podman stores logins through hostkeeper"

echo "podman_setup.sh ($backend): all checks passed"
