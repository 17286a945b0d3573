#!/usr/bin/env bash
# setup_import_init.sh BIN_DIR
#
# End to end, the way a user migrates: a token sits in plaintext in
# ~/.terraform.d/credentials.tfrc.json (as `terraform login` leaves it);
# `hostkeeper setup` and `hostkeeper import` run; `hostkeeper doctor` passes;
# then `terraform init` against a loopback registry that requires the token
# succeeds, with the token from the keyring, and no file holds it any more.
#
# Run it inside support/keyring-env.sh:
#   tests/support/keyring-env.sh tests/e2e/setup_import_init.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform).
set -euo pipefail

e2e_name=e2e-setup-import  # read by lib.sh
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hk=$bin/hostkeeper

# --- Where a user starts: the token in plaintext ---------------------------------
mkdir -p "$HOME/.terraform.d"
credentials=$HOME/.terraform.d/credentials.tfrc.json
printf '{\n  "credentials": {\n    "%s": {\n      "token": "%s"\n    }\n  }\n}\n' "$host" "$TOKEN" >"$credentials"
chmod 600 "$credentials"

# --- setup, import, doctor ----------------------------------------------------------
"$hk" setup --terraform >"$root/setup.out" 2>&1 || { show "$root/setup.out"; fail "hostkeeper setup exited with $?"; }
grep -qx 'credentials_helper "hostkeeper" {}' "$HOME/.terraformrc" || { show "$HOME/.terraformrc"; fail "no block in ~/.terraformrc"; }
[[ $(readlink "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper") == "$helper" ]] ||
    fail "the helper is not linked into ~/.terraform.d/plugins"
pass "hostkeeper setup linked the helper and added the credentials_helper block"

"$hk" import >"$root/import.out" 2>&1 || { show "$root/import.out"; fail "hostkeeper import exited with $?"; }
grep -qF "$TOKEN" "$root/import.out" && fail "hostkeeper import printed the token"
[[ ! -e $credentials ]] || { show "$credentials"; fail "credentials.tfrc.json is still there"; }
[[ $("$helper" get "$host") == "{\"token\":\"$TOKEN\"}" ]] || fail "the keyring does not hold the imported token"
pass "hostkeeper import moved the token into the keyring and removed credentials.tfrc.json"

"$hk" doctor >"$root/doctor.out" 2>&1 || { show "$root/doctor.out"; fail "hostkeeper doctor found problems"; }
pass "hostkeeper doctor: $(tail -1 "$root/doctor.out")"
# Terraform's own run of the helper must start a fresh daemon that reads the keyring.
"$hk" stop >/dev/null || fail "hostkeeper stop exited with $?"

# --- terraform init with the token from the keyring ------------------------------
make_workdir "$root/work"
if ! init "$root/work" "$root/init.out"; then
    show "$root/init.out"
    show "$log"
    fail "terraform init failed after setup and import"
fi
grep -qs 'hello from the keyring' "$root/work/.terraform/modules/hello/main.tf" || fail "the module was not installed"
expect_requests "$log" "$discovery" 200 "Bearer $TOKEN" "service discovery carried the imported token"
expect_requests "$log" "$download" 204 "Bearer $TOKEN" "the download request carried the imported token"

if grep -rlF "$TOKEN" "$HOME" 2>/dev/null; then fail "a file under \$HOME still holds the token (above)"; fi
pass "no file under \$HOME holds the token"
echo "PASS: setup and import, then terraform init with the token from the keyring"
