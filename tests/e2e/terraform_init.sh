#!/usr/bin/env bash
# terraform_init.sh BIN_DIR
#
# End to end: `terraform init` installs a module from a private HTTPS registry
# on loopback, and the bearer token it needs comes from the OS keyring through
# BIN_DIR/terraform-credentials-hostkeeper (and the hostkeeperd it starts).
# Then, with the token forgotten, the same init must fail with a 401: the
# token came from the keyring and from nowhere else.
#
# Run it inside support/keyring-env.sh (which gives it a throw-away HOME, a
# private D-Bus session and an unlocked gnome-keyring-daemon):
#   tests/support/keyring-env.sh tests/e2e/terraform_init.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform).
set -euo pipefail

e2e_name=e2e-terraform  # read by lib.sh
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# --- The token goes into the keyring --------------------------------------------
printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$host" ||
    fail "terraform-credentials-hostkeeper store $host exited with $?"
[[ $("$helper" get "$host") == "{\"token\":\"$TOKEN\"}" ]] ||
    fail "terraform-credentials-hostkeeper get $host does not give back the stored token"
pass "the helper stored the token for $host and gives it back"
# Stop the daemon the helper started: terraform's own helper run must start a
# fresh one (through the plugin-directory symlink) that reads the keyring, not
# a warm in-memory cache.
"$bin/hostkeeper" stop >/dev/null || fail "hostkeeper stop exited with $?"

# --- Terraform's configuration ----------------------------------------------------
# The helper is found in the per-user plugin directory by its name,
# terraform-credentials-<credentials_helper label>.
mkdir -p "$HOME/.terraform.d/plugins"
ln -sf "$helper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
export TF_CLI_CONFIG_FILE=$root/terraform.rc
cat >"$TF_CLI_CONFIG_FILE" <<'RC'
credentials_helper "hostkeeper" {
  args = ["--timeout=20"]
}
RC

# --- terraform init with the token from the keyring ------------------------------
make_workdir "$root/work1"
if init "$root/work1" "$root/init1.out"; then
    pass "terraform init succeeded with module source $host/acme/hello/null"
else
    rc=$?
    show "$root/init1.out"
    show "$log"
    fail "terraform init exited with $rc"
fi
if ! grep -qs 'hello from the keyring' "$root/work1/.terraform/modules/hello/main.tf"; then
    show "$root/init1.out"
    fail "the module's main.tf was not installed into .terraform/modules/hello"
fi
pass "the module from the registry's archive is installed"

expect_requests "$log" "$discovery" 200 "Bearer $TOKEN" "service discovery carried the keyring's token"
expect_requests "$log" "$versions" 200 "Bearer $TOKEN" "the versions request carried the keyring's token"
expect_requests "$log" "$download" 204 "Bearer $TOKEN" "the download request carried the keyring's token"
expect_requests "$log" "$archive" 200 null "the archive request carried no Authorization header"

# We stopped the daemon after storing: a running one that looked the keyring
# up was started by terraform's run of the helper, through the symlink.
"$bin/hostkeeper" status --json >"$root/status.json" || fail "no hostkeeperd is running after terraform init"
lookups=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["credentials"]["keyring_lookups"])' <"$root/status.json")
[[ $lookups -ge 1 ]] || { show "$root/status.json"; fail "hostkeeperd made no keyring lookup during terraform init"; }
pass "terraform's helper run started hostkeeperd, which read the keyring ($lookups lookup(s))"

found=$(find "$HOME/.terraform.d" -name credentials.tfrc.json)
[[ -z "$found" ]] || fail "terraform wrote a plain-text credentials file: $found"
pass "no credentials.tfrc.json under \$HOME/.terraform.d"

# --- Negative: without the keyring entry, init must fail with a 401 -------------
"$helper" forget "$host" || fail "terraform-credentials-hostkeeper forget $host exited with $?"
[[ $("$helper" get "$host") == "{}" ]] || fail "terraform-credentials-hostkeeper get $host still answers after forget"
pass "the helper forgot the token for $host"

lines_before=$(wc -l <"$log")
make_workdir "$root/work2"
if init "$root/work2" "$root/init2.out"; then
    show "$root/init2.out"
    fail "terraform init succeeded without a token in the keyring"
fi
pass "terraform init fails once the token is forgotten"
tail -n "+$((lines_before + 1))" "$log" >"$root/requests2.jsonl"
expect_requests "$root/requests2.jsonl" "$discovery" 401 null \
    "without the keyring entry, service discovery went without a token and got 401"
if grep -qF '"authorization": "' "$root/requests2.jsonl"; then
    show "$root/requests2.jsonl"
    fail "after forget, a request still carried an Authorization header"
fi
pass "after forget, no request carried an Authorization header"
grep -q 401 "$root/init2.out" || { show "$root/init2.out"; fail "terraform's error does not mention the 401"; }
pass "terraform's error names the 401: $(grep -m1 -o '[^│]*401[^│]*' "$root/init2.out" | sed 's/^ *//')"

echo "PASS: terraform init got its registry token from the OS keyring through hostkeeper"
