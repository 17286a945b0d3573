#!/usr/bin/env bash
# pass_unit.sh SOURCE_DIR BIN_DIR
#
# The pass backend under a real systemd user manager (user_world.sh's
# throw-away user with its home under /home, `systemd --user`), with the
# units as the package installs them, sandbox included (ProtectHome=read-only):
#   - the user has a GnuPG key without passphrase in ~/.gnupg (its agent's
#     socket in /run/user/UID/gnupg, as on a real login) and a pass store
#     (`pass init`, `pass git init`); config.toml says keyring.backend = "pass";
#   - the helper's store through the socket-activated hostkeeperd.service
#     writes ~/.password-store/hostkeeper/HOST.gpg (and its git commit) from
#     inside the sandbox; `pass show` reads it; get after a flush decrypts it;
#     forget removes it; status says pass, store writable;
#   - the rest of the home stays read-only for the unit;
#   - with the user's gpg-agent stopped (as after a reboot), a get after a
#     flush still works: gpg starts an agent from inside the unit.
# Root only (exit 77, skipped, otherwise; also without pass or gpg); ctest
# runs it RUN_SERIAL. Exit status: 0 pass, 1 fail, 2 set-up error, 77 skipped.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 SOURCE_DIR BIN_DIR" >&2; exit 2; }
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
for program in hostkeeperd hostkeeper terraform-credentials-hostkeeper; do
    [[ -x $bin/$program ]] || { echo "$0: $bin/$program is missing" >&2; exit 2; }
done
for tool in pass gpg gpgconf gpg-connect-agent git python3; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is missing (packaging/deps.sh test installs it)"; exit 77; }
done
# The home under /home, where ProtectHome=read-only makes it read-only for the service.
user_world_home_parent=/home
# shellcheck source=user_world.sh
source "$(dirname "$0")/user_world.sh"

install_units "$src" "$bin"
mkdir -p "$home/.config/systemd/user/hostkeeperd.service.d"
printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' \
    >"$home/.config/systemd/user/hostkeeperd.service.d/sanitizer.conf"
printf '[keyring]\nbackend = "pass"\n' >"$home/.config/hostkeeper/config.toml"
printf '[user]\n\tname = hostkeeper test\n\temail = test@hostkeeper.invalid\n' >"$home/.gitconfig"
chown -R "$user:" "$home/.config" "$home/.gitconfig"

# --- the user's key and store ---------------------------------------------------------
as_user gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
    --quick-gen-key 'unit test <unit@hostkeeper.test>' future-default default never 2>/dev/null ||
    die "gpg --quick-gen-key as $user failed"
fpr=$(as_user gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "fpr" { print $10; exit }')
[[ -n $fpr ]] || die "no key for $user"
[[ -S $runtime/gnupg/S.gpg-agent ]] || die "the user's gpg-agent socket is not in $runtime/gnupg"
as_user pass init "$fpr" >/dev/null || die "pass init failed"
as_user pass git init >/dev/null 2>&1 || die "pass git init failed"
store=$home/.password-store
pass "$user has a key ($fpr), gpg-agent at $runtime/gnupg, a git-backed pass store"

as_user systemctl --user daemon-reload
as_user systemctl --user enable --now hostkeeperd.socket >/dev/null 2>&1 ||
    fail "systemctl --user enable --now hostkeeperd.socket failed"
[[ $(unit_show hostkeeperd.service ActiveState) == inactive ]] || fail "hostkeeperd.service runs before any client"

# --- store through the socket-activated unit -------------------------------------------
token=pu-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
commits0=$(as_user git -C "$store" rev-list --count HEAD)
printf '{"token":"%s"}' "$token" | helper store unit.example.com 2>"$world/store.err" ||
    { cat "$world/store.err"; fail "the helper's store through the socket failed"; }
[[ $(unit_show hostkeeperd.service ActiveState) == active ]] || fail "the helper's connection did not start hostkeeperd.service"
[[ -f $store/hostkeeper/unit.example.com.gpg ]] || fail "no $store/hostkeeper/unit.example.com.gpg written by the unit"
[[ $(as_user pass show hostkeeper/unit.example.com) == "{\"token\":\"$token\"}" ]] ||
    fail "pass show hostkeeper/unit.example.com does not show the stored credentials"
[[ $(as_user git -C "$store" rev-list --count HEAD) == $((commits0 + 1)) ]] || fail "the store's git commit was not made"
[[ -z $(as_user git -C "$store" status --porcelain) ]] || fail "the store's work tree is not clean"
pass "inside its sandbox the unit wrote hostkeeper/unit.example.com.gpg and its git commit; pass show reads it"

hostkeeper status --json >"$world/status.json" || fail "hostkeeper status failed"
[[ $(json_get keyring.backend <"$world/status.json") == pass ]] || { cat "$world/status.json"; fail "status: the backend is not pass"; }
[[ $(json_get keyring.store_writable <"$world/status.json") == true ]] || { cat "$world/status.json"; fail "status: the store is not writable in the unit"; }
hostkeeper flush >/dev/null
[[ $(helper get unit.example.com) == "{\"token\":\"$token\"}" ]] || fail "get after flush (a decryption in the unit) failed"
pass "status: pass, store writable; get after a flush decrypts in the unit"

pid=$(unit_show hostkeeperd.service MainPID)
if touch "/proc/$pid/root$home/probe" 2>/dev/null; then
    rm -f "$home/probe"
    fail "the home is writable inside the unit: ProtectHome=read-only is not in effect"
fi
pass "the rest of the home stays read-only in the unit"

# --- no agent running: the unit's gpg starts one -------------------------------------------
as_user gpgconf --kill gpg-agent
for _ in $(seq 1 100); do [[ -S $runtime/gnupg/S.gpg-agent ]] || break; sleep 0.05; done
hostkeeper flush >/dev/null
out=$(helper get unit.example.com 2>&1) || true
[[ $out == "{\"token\":\"$token\"}" ]] ||
    fail "with the user's gpg-agent stopped, get after a flush failed in the unit: $out"
pass "with no gpg-agent running, the unit's decryption started one and succeeded"

# --- forget ------------------------------------------------------------------------------
helper forget unit.example.com || fail "the helper's forget failed"
[[ ! -e $store/hostkeeper/unit.example.com.gpg ]] || fail "forget left hostkeeper/unit.example.com.gpg"
[[ $(helper get unit.example.com) == "{}" ]] || fail "get after forget is not {}"
[[ $(as_user git -C "$store" log -1 --format=%s) == "Remove hostkeeper/unit.example.com from store." ]] ||
    fail "forget's commit is not pass's: $(as_user git -C "$store" log -1 --format=%s)"
pass "forget removed the entry (and committed it) from inside the unit"
