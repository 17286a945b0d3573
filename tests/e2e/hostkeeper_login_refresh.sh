#!/usr/bin/env bash
# hostkeeper_login_refresh.sh BIN_DIR
#
# End to end: `hostkeeper login HOST` against the suite's HTTPS registry in
# its TFE-like mode with short-lived login tokens
# (tests/support/https_registry.py --tfe --login-lifetime 4: the token
# endpoint issues access tokens living 4 seconds with refresh tokens, and
# the registry accepts only an unexpired issued token). curl plays the
# browser, following the URL hostkeeper prints to its loopback redirect.
# Then, past the first token's lifetime, the real `terraform init` of a
# module from that registry succeeds through terraform-credentials-hostkeeper
# with the token hostkeeperd refreshed; the refresh token never reaches
# the helper's output.
#
# Run it inside support/keyring-env.sh:
#   tests/support/keyring-env.sh tests/e2e/hostkeeper_login_refresh.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform).
set -euo pipefail

e2e_name=e2e-hostkeeper-login  # read by lib.sh
lifetime=4
registry_args=(--tfe --login-lifetime "$lifetime")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need curl

mkdir -p "$HOME/.terraform.d/plugins"
ln -sf "$helper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
printf 'credentials_helper "hostkeeper" {\n  args = ["--timeout=20"]\n}\n' >"$HOME/.terraformrc"

token_of() { python3 -c 'import json, sys; print(json.load(sys.stdin).get("token", ""))'; }

# --- 1. hostkeeper login, curl as the browser ------------------------------------
out=$root/login.out
"$bin/hostkeeper" login "$host" --no-browser --wait 60 >"$out" 2>"$root/login.err" &
login_pid=$!
url=""
for _ in $(seq 1 200); do
    url=$(head -n1 "$out" 2>/dev/null || true)
    [[ $url == https://* ]] && break
    url=""
    sleep 0.05
done
[[ -n $url ]] || { show "$root/login.err"; fail "hostkeeper login printed no authorization URL"; }
curl -sS -L --max-time 30 --cacert "$root/tls/ca.pem" -o "$root/login.html" "$url" ||
    fail "the browser (curl) could not follow $url"
login_rc=0
wait "$login_pid" || login_rc=$?
[[ $login_rc == 0 ]] || { show "$root/login.err"; fail "hostkeeper login exited with $login_rc"; }
logged_in=$(date +%s)
grep -q "logged in" "$out" || { show "$out"; fail "hostkeeper login did not say it logged in"; }
first=$("$helper" get "$host" | token_of)
[[ $first == login-at-* ]] || fail "the helper does not serve the token hostkeeper login obtained"
if "$helper" get "$host" | grep -q "login-rt-"; then fail "the helper's get prints the refresh token"; fi
expect_requests "$log" /oauth/token 200 null "hostkeeperd exchanged the code (PKCE) for the token"
pass "hostkeeper login (OAuth, curl as the browser) stored a refreshable token"
# From here on the log holds only refreshes: hostkeeperd may refresh ahead as
# soon as a tenth of the lifetime is left, which on a slow machine can be
# while list and status below ask for the token.
: >"$log"
# hostkeeperd refreshes it itself: neither list nor status warns of its expiry.
for what in list status; do
    "$bin/hostkeeper" "$what" >"$root/$what.out" 2>&1 || { show "$root/$what.out"; fail "hostkeeper $what failed"; }
    if grep -q "token expires soon" "$root/$what.out"; then
        show "$root/$what.out"
        fail "hostkeeper $what warns of a token hostkeeperd refreshes itself"
    fi
done
grep -q "expires 20" "$root/list.out" || { show "$root/list.out"; fail "list shows no expiry for the login token"; }
pass "list and status show the login token's expiry without warning of it"

# --- 2. past the token's lifetime: terraform init with the refreshed one ---------
wait_s=$((logged_in + lifetime + 1 - $(date +%s)))
if ((wait_s > 0)); then sleep "$wait_s"; fi
make_workdir "$root/w1"
init "$root/w1" "$root/init1.out" || { show "$root/init1.out"; fail "terraform init after the token's lifetime failed"; }
grep -qs 'hello from the keyring' "$root/w1/.terraform/modules/hello/main.tf" ||
    { show "$root/init1.out"; fail "the module was not installed"; }
expect_requests "$log" /oauth/token 200 null "hostkeeperd refreshed the expired token"
second=$("$helper" get "$host" | token_of)
[[ -n $second && $second != "$first" ]] || fail "the helper still serves the first token"
# A refreshed token, not the first: on a slow machine the refreshed one may
# itself have been refreshed again by the time the helper is asked above.
used=$(requests "$log" "$versions")
[[ -n $used ]] || { show "$log"; fail "terraform init made no versions request"; }
if grep -qvE '^200 Bearer login-at-' <<<"$used" || grep -qF "Bearer $first" <<<"$used"; then
    show "$log"
    fail "terraform init did not use a refreshed token"
fi
pass "terraform init installed the module with the refreshed token"
